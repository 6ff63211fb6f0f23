package rxe

import (
	"math/bits"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/mmio"
)

// Work-completion flags (enum ib_wc_flags / IB_WC_*).
const (
	WCGRH                = 1
	WCWithImm            = 2
	WCWithInvalidate     = 4
	WCIPCsumOK           = 8
	WCWithSMAC           = 16
	WCWithVLAN           = 32
	WCWithNetworkHdrType = 64
)

// WC is a work completion decoded from a struct ib_uverbs_wc. Status,
// Opcode and Flags carry the kernel's values (enum ib_wc_status,
// ib_wc_opcode, ib_wc_flags). On an error status only ID, Status, QPNum
// (and VendorErr) are meaningful (ibv_poll_cq(3)).
type WC struct {
	ID        uint64
	Status    uint32
	Opcode    uint32
	VendorErr uint32
	ByteLen   uint32
	// ImmData is the immediate value in host order (converted from the
	// network-order imm_data); valid when Flags&WCWithImm != 0, else 0.
	ImmData uint32
	// InvalidatedRKey is the rkey the peer invalidated; valid when
	// Flags&WCWithInvalidate != 0, else 0.
	InvalidatedRKey uint32
	QPNum           uint32
	SrcQP           uint32
	Flags           uint32
	PKeyIndex       uint16
	SLID            uint16
	SL              uint8
	DLIDPathBits    uint8
	PortNum         uint8
}

// DecodeCQE reads the struct ib_uverbs_wc at the start of slot into wc
// (every field is overwritten). slot must be at least WCSize bytes.
func DecodeCQE(slot []byte, wc *WC) {
	// One view of the 48 bytes instead of a bounds-checked read per field.
	decodeCQE((*abi.UverbsWC)(unsafe.Pointer(unsafe.SliceData(slot[:WCSize:WCSize]))), wc)
}

func decodeCQE(e *abi.UverbsWC, wc *WC) {
	wc.ID = e.WRID
	wc.Status = e.Status
	wc.Opcode = e.Opcode
	wc.VendorErr = e.VendorErr
	wc.ByteLen = e.ByteLen
	wc.Flags = e.WCFlags
	// ex is a union: __be32 imm_data or u32 invalidate_rkey.
	wc.ImmData, wc.InvalidatedRKey = 0, 0
	if wc.Flags&(WCWithImm|WCWithInvalidate) != 0 {
		ex := native.Uint32(e.Ex[:])
		if wc.Flags&WCWithImm != 0 {
			wc.ImmData = bits.ReverseBytes32(ex)
		}
		if wc.Flags&WCWithInvalidate != 0 {
			wc.InvalidatedRKey = ex
		}
	}
	wc.QPNum = e.QPNum
	wc.SrcQP = e.SrcQP
	wc.PKeyIndex = e.PKeyIndex
	wc.SLID = e.SLID
	wc.SL = e.SL
	wc.DLIDPathBits = e.DLIDPathBits
	wc.PortNum = e.PortNum
}

// CQ is the user side of an rxe completion queue.
//
// A CQ is not safe for concurrent use: hold the CQ's lock.
type CQ struct {
	*Consumer
}

// NewCQ validates a mapped completion queue (mi of CREATE_CQ or
// RESIZE_CQ). Like librxe it refuses slots smaller than ib_uverbs_wc.
func NewCQ(buf []byte) (*CQ, error) {
	c, err := NewConsumer(buf, WCSize)
	if err != nil {
		return nil, err
	}
	return &CQ{Consumer: c}, nil
}

// Poll decodes up to len(wcs) completions into wcs and returns how many. It
// loads producer_index (acquire) when the entries it saw last do not fill
// wcs, and publishes consumer_index once per call (store-release), after the
// last entry was read. It allocates nothing.
func (q *CQ) Poll(wcs []WC) int {
	c := q.Consumer
	n := int((c.seen - c.next) & c.mask)
	if n < len(wcs) {
		c.seen = mmio.LoadAcquire32(c.prod) & c.mask
		n = int((c.seen - c.next) & c.mask)
	}
	n = min(n, len(wcs))
	if n == 0 {
		return 0
	}
	// Every slot is at least WCSize bytes inside data (NewConsumer checked
	// the geometry), so the entries are read through a pointer each,
	// without a bounds check per entry.
	base := unsafe.Pointer(unsafe.SliceData(c.data))
	next := c.next
	for i := range wcs[:n] {
		decodeCQE((*abi.UverbsWC)(unsafe.Add(base, uintptr(next&c.mask)<<c.shift)), &wcs[i])
		next++
	}
	c.next = next & c.mask
	c.publish()
	return n
}
