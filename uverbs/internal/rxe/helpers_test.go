package rxe

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// The tests read and write the mapped bytes at literal offsets taken from
// the kernel's layouts (kernel: drivers/infiniband/sw/rxe/rxe_queue.h
// struct rxe_queue_buf; include/uapi/rdma/rdma_user_rxe.h struct
// rxe_send_wqe, rxe_recv_wqe; include/uapi/rdma/ib_user_verbs.h struct
// ib_uverbs_wc), independently of layout.go.
var le = binary.LittleEndian

func u16(b []byte, off int) uint16 { return le.Uint16(b[off:]) }
func u32(b []byte, off int) uint32 { return le.Uint32(b[off:]) }
func u64(b []byte, off int) uint64 { return le.Uint64(b[off:]) }

// mapAnon returns size bytes (rounded up to pages) of anonymous mapped
// memory, unmapped at the end of the test.
func mapAnon(t testing.TB, size int) []byte {
	t.Helper()
	size = (size + 4095) &^ 4095
	m, err := sys.MmapAnon(size, "rxe test ring")
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

// fakeRing is a ring laid out as the kernel's rxe_queue_init does: header
// written by "the kernel", slots after byte 384. kprod/kcons are the
// kernel-side views of the indices.
type fakeRing struct {
	buf   []byte
	log2  uint32
	slots uint32
	kprod *atomic.Uint32
	kcons *atomic.Uint32
}

func newFakeRing(t testing.TB, log2, slots uint32) *fakeRing {
	t.Helper()
	buf := mapAnon(t, 384+int(slots)<<log2)
	le.PutUint32(buf[0:], log2)
	le.PutUint32(buf[4:], slots-1)
	return &fakeRing{
		buf: buf, log2: log2, slots: slots,
		kprod: (*atomic.Uint32)(unsafe.Pointer(&buf[128])),
		kcons: (*atomic.Uint32)(unsafe.Pointer(&buf[256])),
	}
}

// slot returns slot i as the kernel addresses it: data + (i << log2).
func (r *fakeRing) slot(i uint32) []byte {
	off := 384 + int(i&(r.slots-1))<<r.log2
	return r.buf[off : off+1<<r.log2]
}

// kernelConsumeAll marks every posted entry consumed, as the kernel's
// completer does for an SQ (smp_store_release of consumer_index).
func (r *fakeRing) kernelConsumeAll() { r.kcons.Store(r.kprod.Load()) }

// kernelPostCQE writes a CQE into the next slot and publishes it, as
// rxe_cq_post does.
func (r *fakeRing) kernelPostCQE(t testing.TB, fill func(s []byte)) {
	p := r.kprod.Load()
	if (p+1)&(r.slots-1) == r.kcons.Load() {
		t.Fatalf("fake kernel: CQ overflow at producer %d", p)
	}
	s := r.slot(p)
	clear(s)
	fill(s)
	r.kprod.Store((p + 1) & (r.slots - 1))
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }
