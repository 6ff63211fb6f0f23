package siw

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// The tests lay out and read the rings at literal offsets taken from
// include/uapi/rdma/siw-abi.h (struct siw_sqe, siw_rqe, siw_cqe,
// siw_cq_ctrl), independently of ring.go, and play the kernel's side of
// the VALID handshake as drivers/infiniband/sw/siw does.
var le = binary.LittleEndian

const (
	litSQE = 120 // sizeof(struct siw_sqe)
	litRQE = 112 // sizeof(struct siw_rqe)
	litCQE = 32  // sizeof(struct siw_cqe)
)

// mapAnon returns size bytes (rounded up to pages) of anonymous mapped
// memory, unmapped at the end of the test: the kernel's rings are
// vmalloc_user pages mapped the same way.
func mapAnon(t testing.TB, size int) []byte {
	t.Helper()
	size = (size + 4095) &^ 4095
	m, err := sys.MmapAnon(size, "siw test ring")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmap(); err != nil {
			t.Error(err)
		}
	})
	return m.Bytes()
}

// fakeRing is one of the kernel's element arrays.
type fakeRing struct {
	buf  []byte
	num  uint32
	size int
	get  uint32 // the kernel's counter: sq_get, rq_get or cq_put
}

func newFakeRing(t testing.TB, num uint32, size, extra int) *fakeRing {
	return &fakeRing{buf: mapAnon(t, int(num)*size+extra), num: num, size: size}
}

func (r *fakeRing) elem(i uint32) []byte {
	off := int(i%r.num) * r.size
	return r.buf[off : off+r.size]
}

// word is the kernel's view of element i's 32-bit word at byte 8 (flags
// and what follows them).
func (r *fakeRing) word(i uint32) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&r.elem(i)[8]))
}

// take plays siw_activate_tx_from_sq / siw_rqe_get: if the next element is
// VALID, copy it out and clear its flags (smp_store_mb); it returns the
// copy, or nil when the ring is empty.
func (r *fakeRing) take() []byte {
	w := r.word(r.get)
	v := w.Load()
	if v&1 == 0 {
		return nil
	}
	e := append([]byte(nil), r.elem(r.get)...)
	le.PutUint32(e[8:], v) // the copy holds the word as loaded
	// Clear the u16 flags only, as the kernel does; num_sge and opcode
	// stay.
	w.Store(v &^ 0xffff)
	r.get++
	return e
}

// drop is take without the copy, for the allocation test.
func (r *fakeRing) drop() {
	w := r.word(r.get)
	if v := w.Load(); v&1 != 0 {
		w.Store(v &^ 0xffff)
		r.get++
	}
}

// cqe is what the kernel writes into a CQE (siw_sqe_complete,
// siw_rqe_complete).
type cqe struct {
	id     uint64
	flags  uint8
	opcode uint8
	status uint16
	bytes  uint32
	inval  uint32
	qpID   uint64
}

// produce writes c into the next CQE if its flags are 0 and sets them
// last, as siw_sqe_complete does; it reports false on a full CQ.
func (r *fakeRing) produce(c cqe) bool {
	w := r.word(r.get)
	if w.Load()&0xff != 0 {
		return false
	}
	e := r.elem(r.get)
	le.PutUint64(e[0:], c.id)
	le.PutUint32(e[12:], c.bytes)
	le.PutUint64(e[16:], uint64(c.inval))
	le.PutUint64(e[24:], c.qpID)
	w.Store(uint32(c.flags) | uint32(c.opcode)<<8 | uint32(c.status)<<16)
	r.get++
	return true
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

func newSQ(t testing.TB, num uint32, lim SendLimits) (*SQ, *fakeRing) {
	t.Helper()
	r := newFakeRing(t, num, litSQE, 0)
	q, err := NewSQ(r.buf, num, lim)
	if err != nil {
		t.Fatal(err)
	}
	return q, r
}

func newRQ(t testing.TB, num uint32, maxSGE int) (*RQ, *fakeRing) {
	t.Helper()
	r := newFakeRing(t, num, litRQE, 0)
	q, err := NewRQ(r.buf, num, maxSGE, "siw0")
	if err != nil {
		t.Fatal(err)
	}
	return q, r
}

func newCQ(t testing.TB, num uint32) (*CQ, *fakeRing) {
	t.Helper()
	r := newFakeRing(t, num, litCQE, 8)
	q, err := NewCQ(r.buf, num)
	if err != nil {
		t.Fatal(err)
	}
	return q, r
}

var rcLimits = SendLimits{MaxSGE: 6, MaxInline: 80, Device: "siw0"}
