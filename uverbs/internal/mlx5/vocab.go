package mlx5

import (
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The encoder reads the caller's send requests and the decoder fills the
// caller's completions where they lie: SendWR has provider.SendWR's
// layout, with the AH's address vector where the provider's request points
// at its AH (provider.AH.Data comes first and holds the 48-byte
// mlx5_wqe_av), and WC has rdma.WC's. Checked here at compile time: a
// negative array length does not compile.
var (
	_ [unsafe.Sizeof(SendWR{}) - unsafe.Sizeof(provider.SendWR{})]byte
	_ [unsafe.Sizeof(provider.SendWR{}) - unsafe.Sizeof(SendWR{})]byte
	_ [unsafe.Offsetof(SendWR{}.Opcode) - unsafe.Offsetof(provider.SendWR{}.Op)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Op) - unsafe.Offsetof(SendWR{}.Opcode)]byte
	_ [unsafe.Offsetof(SendWR{}.Flags) - unsafe.Offsetof(provider.SendWR{}.Flags)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Flags) - unsafe.Offsetof(SendWR{}.Flags)]byte
	_ [unsafe.Offsetof(SendWR{}.SGEs) - unsafe.Offsetof(provider.SendWR{}.SGEs)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.SGEs) - unsafe.Offsetof(SendWR{}.SGEs)]byte
	_ [unsafe.Offsetof(SendWR{}.ImmData) - unsafe.Offsetof(provider.SendWR{}.Imm)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Imm) - unsafe.Offsetof(SendWR{}.ImmData)]byte
	_ [unsafe.Offsetof(SendWR{}.InvalidateRKey) - unsafe.Offsetof(provider.SendWR{}.InvalidateRKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.InvalidateRKey) - unsafe.Offsetof(SendWR{}.InvalidateRKey)]byte
	_ [unsafe.Offsetof(SendWR{}.RemoteAddr) - unsafe.Offsetof(provider.SendWR{}.RemoteAddr)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteAddr) - unsafe.Offsetof(SendWR{}.RemoteAddr)]byte
	_ [unsafe.Offsetof(SendWR{}.RKey) - unsafe.Offsetof(provider.SendWR{}.RKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RKey) - unsafe.Offsetof(SendWR{}.RKey)]byte
	_ [unsafe.Offsetof(SendWR{}.CompareAdd) - unsafe.Offsetof(provider.SendWR{}.CompareAdd)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.CompareAdd) - unsafe.Offsetof(SendWR{}.CompareAdd)]byte
	_ [unsafe.Offsetof(SendWR{}.Swap) - unsafe.Offsetof(provider.SendWR{}.Swap)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Swap) - unsafe.Offsetof(SendWR{}.Swap)]byte
	_ [unsafe.Offsetof(SendWR{}.AV) - unsafe.Offsetof(provider.SendWR{}.AH)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.AH) - unsafe.Offsetof(SendWR{}.AV)]byte
	_ [unsafe.Offsetof(provider.AH{}.Data)]byte              // 0: an array of no bytes
	_ [provider.AVSize - unsafe.Sizeof(AddressVector{})]byte // AH.Data holds an AddressVector
	_ [unsafe.Offsetof(SendWR{}.RemoteQPN) - unsafe.Offsetof(provider.SendWR{}.RemoteQPN)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteQPN) - unsafe.Offsetof(SendWR{}.RemoteQPN)]byte
	_ [unsafe.Offsetof(SendWR{}.RemoteQKey) - unsafe.Offsetof(provider.SendWR{}.RemoteQKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteQKey) - unsafe.Offsetof(SendWR{}.RemoteQKey)]byte

	_ [unsafe.Sizeof(WC{}) - unsafe.Sizeof(rdma.WC{})]byte
	_ [unsafe.Sizeof(rdma.WC{}) - unsafe.Sizeof(WC{})]byte
	_ [unsafe.Offsetof(WC{}.ImmData) - unsafe.Offsetof(rdma.WC{}.Imm)]byte
	_ [unsafe.Offsetof(rdma.WC{}.Imm) - unsafe.Offsetof(WC{}.ImmData)]byte
	_ [unsafe.Offsetof(WC{}.QPNum) - unsafe.Offsetof(rdma.WC{}.QPN)]byte
	_ [unsafe.Offsetof(rdma.WC{}.QPN) - unsafe.Offsetof(WC{}.QPNum)]byte
	_ [unsafe.Offsetof(WC{}.Flags) - unsafe.Offsetof(rdma.WC{}.Flags)]byte
	_ [unsafe.Offsetof(rdma.WC{}.Flags) - unsafe.Offsetof(WC{}.Flags)]byte
	_ [unsafe.Offsetof(WC{}.PKeyIndex) - unsafe.Offsetof(rdma.WC{}.PKeyIndex)]byte
	_ [unsafe.Offsetof(rdma.WC{}.PKeyIndex) - unsafe.Offsetof(WC{}.PKeyIndex)]byte
	_ [unsafe.Offsetof(WC{}.Port) - unsafe.Offsetof(rdma.WC{}.Port)]byte
	_ [unsafe.Offsetof(rdma.WC{}.Port) - unsafe.Offsetof(WC{}.Port)]byte
)

// SendWRs is a send list as the encoder reads it. The opcodes and flags
// are the provider's values.
func SendWRs(wrs []provider.SendWR) []SendWR {
	return unsafe.Slice((*SendWR)(unsafe.Pointer(unsafe.SliceData(wrs))), len(wrs))
}

// WCs is a completion slice as the decoder fills it (the status, opcode
// and flag values are libibverbs', which rdma.WC carries).
func WCs(wcs []rdma.WC) []WC {
	return unsafe.Slice((*WC)(unsafe.Pointer(unsafe.SliceData(wcs))), len(wcs))
}
