package provider

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/sys"
)

// Opcodes the kernel defines beyond the public ones (rdma.WROpcode): the
// providers refuse them or take them only from this module's own callers.
const (
	OpLocalInv    rdma.WROpcode = 7  // IBV_WR_LOCAL_INV
	OpBindMW      rdma.WROpcode = 8  // IBV_WR_BIND_MW
	OpFlush       rdma.WROpcode = 14 // IBV_WR_FLUSH (kernel 6.2+)
	OpAtomicWrite rdma.WROpcode = 15 // IBV_WR_ATOMIC_WRITE (kernel 6.2+)

	// OpSendInv is public (rdma.OpSendInv); the name stays for the
	// providers' tables.
	OpSendInv = rdma.OpSendInv // IBV_WR_SEND_WITH_INV
)

const (
	// SendIPCsum asks the device to compute the IP checksum (IBV_SEND_IP_CSUM,
	// raw packet QPs).
	SendIPCsum rdma.SendFlags = 16

	// SendFlagsKnown are the flags CheckSend accepts.
	SendFlagsKnown = rdma.SendFence | rdma.SendSignaled | rdma.SendSolicited | rdma.SendInline | SendIPCsum
)

// QPType is a QP transport type with the kernel's values (enum ib_qp_type,
// ib_uverbs_create_qp.qp_type).
type QPType uint8

const (
	QPTypeRC QPType = 2
	QPTypeUC QPType = 3
	QPTypeUD QPType = 4
)

func (t QPType) String() string {
	switch t {
	case QPTypeRC:
		return "RC"
	case QPTypeUC:
		return "UC"
	case QPTypeUD:
		return "UD"
	}
	return fmt.Sprintf("QPType(%d)", uint8(t))
}

// AVSize is the room AH.Data has for a provider's own form of an address:
// rxe's struct rxe_av (88 bytes), which UD WQEs carry on kernels whose rxe
// returns no AH number (5.10), is the largest; mlx5's struct mlx5_wqe_av
// takes the first 48.
const AVSize = 88

// AH is what a UD send's address handle tells the providers. The caller's
// address handle starts with one, so a send work request points at it.
type AH struct {
	// Data is the address in the form a provider's UD work requests carry
	// it (mlx5: the struct mlx5_wqe_av of mlx5_create_ah). It comes
	// first, so that a provider may view an *AH as a pointer to its own
	// address type.
	Data [AVSize]byte
	// Num is the AH number UD work requests name it by (rxe:
	// rxe_create_ah_resp.ah_num). It is not zero for an open AH on any
	// provider, so that CheckSend tells a UD send with an AH from one
	// without.
	Num uint32
}

// SendWR is a send work request (rdma-core: struct ibv_send_wr) in the
// layout every provider reads: uverbs.SendWR has it too, with a pointer to
// its own AH type (which starts with an AH) in place of AH.
type SendWR struct {
	ID    uint64
	Op    rdma.WROpcode
	Flags rdma.SendFlags
	SGEs  []rdma.SGE
	// Imm is the immediate data of the *_WITH_IMM opcodes in host order
	// and InvalidateRKey the key to invalidate of LOCAL_INV and
	// SEND_WITH_INV: ibv_send_wr's union ex, two fields here (the second
	// fills what would be padding before RemoteAddr).
	Imm            uint32
	InvalidateRKey uint32
	RemoteAddr     uint64
	RKey           uint32
	CompareAdd     uint64
	Swap           uint64
	// UD only: the destination.
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// AHNum is the number of wr's AH, 0 without one.
func (wr *SendWR) AHNum() uint32 {
	if wr.AH != nil {
		return wr.AH.Num
	}
	return 0
}

// UDAddr is wr's UD destination (zero without one).
func (wr *SendWR) UDAddr() UDAddr {
	return UDAddr{RemoteQPN: wr.RemoteQPN, RemoteQKey: wr.RemoteQKey, AHNum: wr.AHNum()}
}

// UDAddr addresses a UD send: destination QPN and Q_Key, and the number
// of its AH (AH.Num).
type UDAddr struct {
	RemoteQPN  uint32
	RemoteQKey uint32
	AHNum      uint32
}

// SendLimits are the send-queue capabilities CREATE_QP granted, which the
// send checks enforce.
type SendLimits struct {
	QPType    QPType
	MaxSGE    int // cap.max_send_sge
	MaxInline int // cap.max_inline_data
}

// Device is what a provider needs of the device it creates its objects on:
// write() commands with its driver data (in is the core command followed
// by the driver's, out the core response followed by the driver's; op
// names the verb in errors), mmap of n bytes at offset on the device's
// descriptor (MAP_SHARED: the queues a driver allocates in the kernel and
// names by an offset in its responses), and the device's name for errors
// and the names of its mappings.
//
// Doorbell writes n bytes at cmd, a write() command built in full (its
// header too) in memory that does not move (a mapping of the provider's),
// to the device's descriptor; it allocates nothing, for a doorbell that is
// a command (siw's POST_SEND with no work request). Doorbells is the
// device's pool of such commands, one slot per QP (rxe's and siw's
// POST_SEND).
type Device interface {
	Write(op string, cmd uint32, in, out []byte) error
	Mmap(op string, offset int64, n int, what string) (*sys.Mapping, error)
	Doorbell(op string, cmd unsafe.Pointer, n uintptr) error
	Doorbells() *Doorbells
	Name() string
}
