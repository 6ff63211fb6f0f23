package siw

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/mmio"
)

// Byte offsets inside the ring elements (include/uapi/rdma/siw-abi.h).
// Each element has a 32-bit word at byte 8 that the handshake with the
// kernel goes through (docs/siw.md §3): in an SQE or RQE it holds the u16
// flags, then num_sge and opcode; in a CQE the u8 flags, opcode and the u16
// status. The flags are its low bits on a little-endian machine, the only
// kind this package builds for (internal/mmio refuses others).
const (
	sqeID     = int(unsafe.Offsetof(abi.SiwSQE{}.ID))
	sqeNumSGE = int(unsafe.Offsetof(abi.SiwSQE{}.NumSGE))
	sqeOpcode = int(unsafe.Offsetof(abi.SiwSQE{}.Opcode))
	sqeRKey   = int(unsafe.Offsetof(abi.SiwSQE{}.RKey))
	sqeRaddr  = int(unsafe.Offsetof(abi.SiwSQE{}.Raddr))
	sqeSGE    = int(abi.SiwSQEOffSGE)

	rqeID     = int(unsafe.Offsetof(abi.SiwRQE{}.ID))
	rqeNumSGE = int(unsafe.Offsetof(abi.SiwRQE{}.NumSGE))
	rqeSGE    = int(unsafe.Offsetof(abi.SiwRQE{}.SGE))

	cqeID        = int(unsafe.Offsetof(abi.SiwCQE{}.ID))
	cqeOpcode    = int(unsafe.Offsetof(abi.SiwCQE{}.Opcode))
	cqeStatus    = int(unsafe.Offsetof(abi.SiwCQE{}.Status))
	cqeBytes     = int(unsafe.Offsetof(abi.SiwCQE{}.Bytes))
	cqeInvalSTag = int(abi.SiwCQEOffInvalSTag)
	cqeQPID      = int(abi.SiwCQEOffQPID)

	// inlineData is where inline bytes start: sge[1] of an SQE, with their
	// count in sge[0].length (docs/siw.md §4).
	inlineData = sqeSGE + sgeSize
)

// The flag word is at byte 8 of all three elements, num_sge and opcode are
// its third and fourth bytes in an SQE and RQE, and the CQE's opcode and
// status its second and third: a negative array length does not compile.
var (
	_ [flagWordOff - 8]byte
	_ [8 - flagWordOff]byte
	_ [unsafe.Offsetof(abi.SiwRQE{}.Flags) - 8]byte
	_ [8 - unsafe.Offsetof(abi.SiwRQE{}.Flags)]byte
	_ [unsafe.Offsetof(abi.SiwCQE{}.Flags) - 8]byte
	_ [8 - unsafe.Offsetof(abi.SiwCQE{}.Flags)]byte
	_ [sqeNumSGE - 10]byte
	_ [10 - sqeNumSGE]byte
	_ [sqeOpcode - 11]byte
	_ [11 - sqeOpcode]byte
	_ [rqeNumSGE - 10]byte
	_ [10 - rqeNumSGE]byte
	_ [cqeOpcode - 9]byte
	_ [9 - cqeOpcode]byte
	_ [cqeStatus - 10]byte
	_ [10 - cqeStatus]byte
	_ [inlineData + MaxInline - SQESize]byte
	_ [SQESize - inlineData - MaxInline]byte
)

// ring is an array of num fixed-size elements the kernel shares with user
// space (vmalloc_user memory mapped through the key of the create
// response, docs/siw.md §2). Its indexes are free-running counters taken
// modulo num, which is a power of two (kernel: siw_create_qp,
// siw_create_cq, siw_create_srq round it up), as the kernel's sq_put/sq_get
// are. Neither side shares an index: each element's VALID flag says who
// owns it.
type ring struct {
	base unsafe.Pointer // element 0, inside the mapping
	num  uint32
	mask uint32
	size uintptr
	next uint32 // the producer's or consumer's private counter
}

func newRing(buf []byte, num uint32, size int, extra int, what string) (ring, error) {
	if num == 0 || num&(num-1) != 0 || num > 1<<30 {
		return ring{}, fmt.Errorf("siw: %s has %d elements; the kernel gives a power of two", what, num)
	}
	if need := uint64(num)*uint64(size) + uint64(extra); uint64(len(buf)) < need {
		return ring{}, fmt.Errorf("siw: %s mapping is %d bytes, %d elements of %d bytes need %d", what, len(buf), num, size, need)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(buf)))&7 != 0 {
		return ring{}, fmt.Errorf("siw: %s mapping is not 8-byte aligned", what)
	}
	return ring{
		base: unsafe.Pointer(unsafe.SliceData(buf)),
		num:  num,
		mask: num - 1,
		size: uintptr(size),
	}, nil
}

// elem returns element i mod num.
func (r *ring) elem(i uint32) unsafe.Pointer {
	return unsafe.Add(r.base, uintptr(i&r.mask)*r.size)
}

// flagWord is the atomic view of element i's flag word.
func (r *ring) flagWord(i uint32) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Add(r.elem(i), flagWordOff))
}

// busy reports whether element i still has its VALID flag set, loaded with
// acquire ordering: once it is clear, the kernel has finished reading the
// element (it clears the flag last, with smp_store_mb: siw_qp.c
// siw_activate_tx_from_sq, siw_qp_rx.c siw_rqe_get).
func (r *ring) busy(i uint32) bool {
	return mmio.LoadAcquire32(r.flagWord(i))&abi.SIW_WQE_VALID != 0
}

// Room reports whether the next n elements are free, as libsiw finds out
// before it writes each one (providers/siw/siw.c siw_post_send,
// siw_post_recv): by the VALID flag of the slot. The kernel frees the
// elements in ring order, so the free ones after the producer are one run,
// and the last of the n tells for all (docs/siw.md §3).
func (r *ring) Room(n int) bool {
	if n <= 0 {
		return n == 0
	}
	if n > int(r.num) {
		return false
	}
	return !r.busy(r.next + uint32(n) - 1)
}

// Full reports whether the next element is still the kernel's.
func (r *ring) Full() bool { return r.busy(r.next) }

// Size returns the number of elements.
func (r *ring) Size() int { return int(r.num) }

// Pending counts the elements posted that the kernel has not taken yet:
// those before the producer's counter with VALID set. It only reads; the
// kernel may take more while it runs.
func (r *ring) Pending() int {
	n := 0
	for n < int(r.num) && r.busy(r.next-uint32(n)-1) {
		n++
	}
	return n
}

// oldestPending is the counter of the oldest element the kernel has not
// taken (the producer's counter if there is none): the pending elements
// are the run from it to the producer's counter.
func (r *ring) oldestPending() uint32 { return r.next - uint32(r.Pending()) }

// forPending calls f on each element the kernel has not taken, newest
// first, until f returns true; it reports whether f did.
func (r *ring) forPending(f func(e unsafe.Pointer) bool) bool {
	for n := uint32(0); n < r.num; n++ {
		i := r.next - n - 1
		if !r.busy(i) {
			return false
		}
		if f(r.elem(i)) {
			return true
		}
	}
	return false
}

func put32(p unsafe.Pointer, off int, v uint32) { *(*uint32)(unsafe.Add(p, off)) = v }
func put64(p unsafe.Pointer, off int, v uint64) { *(*uint64)(unsafe.Add(p, off)) = v }
func get32(p unsafe.Pointer, off int) uint32    { return *(*uint32)(unsafe.Add(p, off)) }
func get64(p unsafe.Pointer, off int) uint64    { return *(*uint64)(unsafe.Add(p, off)) }
