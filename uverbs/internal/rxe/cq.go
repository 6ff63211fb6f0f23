package rxe

import (
	"math/bits"
	"unsafe"

	"github.com/goverbs/rdma"
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

// decodeCQE copies the two runs of fields that WC lays out as the
// kernel's ib_uverbs_wc does (wr_id to byte_len, 24 bytes; qp_num to
// port_num, 19 bytes, copied with the reserved byte into WC's padding),
// then splits the ex union. rdma-core copies the whole 48 bytes
// (providers/rxe/rxe.c cq_next_poll: its ibv_wc has the kernel's layout).
// Two calls, each small enough to be inlined into Poll's loop.
func decodeCQE(e *abi.UverbsWC, wc *WC) {
	copyCQE(unsafe.Pointer(wc), unsafe.Pointer(e))
	splitEx(e, wc)
}

// copyCQE copies in 16-, 8- and 4-byte pieces: a 16-byte array is moved
// with one load and one store (MOVUPS on amd64, LDP/STP on arm64), where a
// copy of a whole run through these pointers would be a call to memmove
// (they could overlap, for all the compiler knows).
func copyCQE(dst, src unsafe.Pointer) {
	const tail = unsafe.Offsetof(abi.UverbsWC{}.QPNum)
	*(*[16]byte)(dst) = *(*[16]byte)(src)
	*(*uint64)(unsafe.Add(dst, 16)) = *(*uint64)(unsafe.Add(src, 16))
	*(*[16]byte)(unsafe.Add(dst, wcTailAt)) = *(*[16]byte)(unsafe.Add(src, tail))
	*(*uint32)(unsafe.Add(dst, wcTailAt+16)) = *(*uint32)(unsafe.Add(src, tail+16))
}

// splitEx reads the union ex: __be32 imm_data or u32 invalidate_rkey. The
// flags are read from the entry, not from wc: wc's copy was just stored as
// part of a 16-byte block, and a 4-byte load out of it waits for that
// store (poll 16 took 0.1 ns more per completion so:
// docs/perf-history.md, "rxe post and poll: what each change bought"
// item 37).
func splitEx(e *abi.UverbsWC, wc *WC) {
	wc.ImmData, wc.InvalidatedRKey = 0, 0
	if f := e.WCFlags; f&(WCWithImm|WCWithInvalidate) != 0 {
		ex := native.Uint32(e.Ex[:])
		if f&WCWithImm != 0 {
			wc.ImmData = bits.ReverseBytes32(ex)
		}
		if f&WCWithInvalidate != 0 {
			wc.InvalidatedRKey = ex
		}
	}
}

// The runs decodeCQE copies as blocks, checked at compile time against
// both layouts: a negative array length does not compile.
const (
	wcHead   = unsafe.Offsetof(WC{}.ImmData)
	wcTailAt = unsafe.Offsetof(WC{}.QPNum)
	wcTail   = unsafe.Sizeof(abi.UverbsWC{}) - unsafe.Offsetof(abi.UverbsWC{}.QPNum)
)

var (
	_ [wcHead - unsafe.Offsetof(abi.UverbsWC{}.Ex)]byte
	_ [unsafe.Offsetof(abi.UverbsWC{}.Ex) - wcHead]byte
	_ [unsafe.Offsetof(WC{}.ByteLen) - unsafe.Offsetof(abi.UverbsWC{}.ByteLen)]byte
	_ [unsafe.Offsetof(abi.UverbsWC{}.ByteLen) - unsafe.Offsetof(WC{}.ByteLen)]byte
	_ [unsafe.Offsetof(WC{}.PortNum) - wcTailAt - (unsafe.Offsetof(abi.UverbsWC{}.PortNum) - unsafe.Offsetof(abi.UverbsWC{}.QPNum))]byte
	_ [unsafe.Offsetof(abi.UverbsWC{}.PortNum) - unsafe.Offsetof(abi.UverbsWC{}.QPNum) - (unsafe.Offsetof(WC{}.PortNum) - wcTailAt)]byte
	_ [unsafe.Offsetof(WC{}.PKeyIndex) - wcTailAt - (unsafe.Offsetof(abi.UverbsWC{}.PKeyIndex) - unsafe.Offsetof(abi.UverbsWC{}.QPNum))]byte
	_ [unsafe.Offsetof(abi.UverbsWC{}.PKeyIndex) - unsafe.Offsetof(abi.UverbsWC{}.QPNum) - (unsafe.Offsetof(WC{}.PKeyIndex) - wcTailAt)]byte
	_ [unsafe.Sizeof(WC{}) - wcTailAt - wcTail]byte // the reserved byte lands in padding
	_ [wcHead - 24]byte
	_ [24 - wcHead]byte
	_ [wcTail - 20]byte
	_ [20 - wcTail]byte
)

// CQ is the user side of an rxe completion queue.
//
// A CQ is not safe for concurrent use: hold the CQ's lock. The Consumer is
// held by value, so that a poll reaches the ring's indexes through one
// pointer fewer (docs/perf-history.md, "rxe post and poll: what each
// change bought" item 39); so are the SQ's and RQ's Producers.
type CQ struct {
	Consumer
}

// NewCQ validates a mapped completion queue (mi of CREATE_CQ or
// RESIZE_CQ). Like librxe it refuses slots smaller than ib_uverbs_wc.
func NewCQ(buf []byte) (*CQ, error) {
	c, err := NewConsumer(buf, WCSize)
	if err != nil {
		return nil, err
	}
	return &CQ{Consumer: *c}, nil
}

// Poll decodes up to len(wcs) completions into wcs and returns how many. It
// loads producer_index (acquire) once, so fewer than len(wcs) means that
// the ring was empty after the last one (as rdma-core's rxe_poll_cq, which
// loads it before each entry), and publishes consumer_index once per call
// that took any (store-release), after the last entry was read. It
// allocates nothing.
func (q *CQ) Poll(wcs []WC) int {
	q.Refresh()
	n := q.Take(wcs)
	if n > 0 {
		q.publish()
	}
	return n
}

// Refresh loads producer_index (acquire) and reports whether an entry is
// ready to read. The acquire load orders the reads of the entries after it.
func (c *Consumer) Refresh() bool {
	c.seen = mmio.LoadAcquire32(c.prod) & c.mask
	return c.next != c.seen
}

// Take is Poll without the loads and stores of the shared indexes: it
// decodes the entries the last Refresh (or Empty) saw, up to len(wcs).
// The caller makes the consumer_index store, with the word and value of
// IndexStore, before anything else may read the CQ (in one call with the
// release of its lock, uverbs CQ.Poll).
func (q *CQ) Take(wcs []WC) int {
	c := &q.Consumer
	n := min(int((c.seen-c.next)&c.mask), len(wcs))
	if n == 0 {
		return 0
	}
	// Every slot is at least WCSize bytes inside data (NewConsumer checked
	// the geometry), so the entries are read through a pointer each,
	// without a bounds check per entry.
	// The geometry is read into locals once: the stores into wcs could
	// alias c for all the compiler knows, so it would reload each per
	// entry. (shift < 64 always; the mask tells the compiler so.)
	base := unsafe.Pointer(unsafe.SliceData(c.data))
	next, mask, shift := c.next, c.mask, c.shift&63
	for i := range wcs[:n] {
		e := (*abi.UverbsWC)(unsafe.Add(base, uintptr(next&mask)<<shift))
		copyCQE(unsafe.Pointer(&wcs[i]), unsafe.Pointer(e)) // decodeCQE, inlined
		splitEx(e, &wcs[i])
		next++
	}
	c.next = next & mask
	return n
}

// WC has rdma.WC's field order and types, so a poll decodes into the
// caller's completions directly (WCs). Checked here at compile time: a
// negative array length does not compile.
var (
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
	_ [unsafe.Offsetof(WC{}.PortNum) - unsafe.Offsetof(rdma.WC{}.Port)]byte
	_ [unsafe.Offsetof(rdma.WC{}.Port) - unsafe.Offsetof(WC{}.PortNum)]byte
)

// WCs is a completion slice as the decoder fills it: the status, opcode
// and flags are the kernel's values, which rdma.WC carries.
func WCs(wcs []rdma.WC) []WC {
	return unsafe.Slice((*WC)(unsafe.Pointer(unsafe.SliceData(wcs))), len(wcs))
}
