package uverbs

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// lockWatchingDoorbell is a fake device whose doorbell records whether the
// send queue's lock of qp was held when it was rung.
type lockWatchingDoorbell struct {
	fakeDoorbell
	qp           *QP
	rung, locked atomic.Int32
}

func (d *lockWatchingDoorbell) Doorbell(string, unsafe.Pointer, uintptr) error {
	d.rung.Add(1)
	if d.qp.sendMu.heldNow() {
		d.locked.Add(1)
	}
	return nil
}

// watchedQP is fakeQP with a doorbell that watches the send lock.
func watchedQP(t *testing.T) (*QP, *lockWatchingDoorbell, []byte) {
	t.Helper()
	lim := rxe.SendLimits{QPType: rxe.QPTypeRC, MaxSGE: 1, MaxInline: 64}
	buf, _, _ := fakeRing(t, 9, 1024)
	sq, err := rxe.NewSQ(buf, lim)
	if err != nil {
		t.Fatal(err)
	}
	db := &lockWatchingDoorbell{}
	qp := &QP{ctx: &Device{}, pd: &PD{}, typ: RC, qpn: 0x11, drv: rxe.NewQPState(db, sq, nil), lim: lim}
	db.qp = qp
	fakeLKey(qp.pd, 7)
	qp.state.Store(uint32(QPStateRTS))
	return qp, db, buf
}

// On rxe the doorbell, a system call, is rung after the send queue's lock
// is released, as rdma-core's rxe_post_send rings it: on the slow path
// (the first post, whose lkey the queue has not recorded yet) and on the
// fast one (the second).
func TestPostSendDoorbellOutsideLock(t *testing.T) {
	qp, db, _ := watchedQP(t)
	write := SendWR{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x10000, Length: 64, LKey: 7}}, RemoteAddr: 0x20000, RKey: 9}
	if err := qp.PostSend([]SendWR{write, write}); err != nil {
		t.Fatal(err)
	}
	fenced := write
	fenced.Flags |= SendFence | SendSolicited
	if err := qp.PostSend([]SendWR{fenced}); err != nil {
		t.Fatal(err)
	}
	if n := db.rung.Load(); n != 2 {
		t.Errorf("two posts rang the doorbell %d times, want 2", n)
	}
	if n := db.locked.Load(); n != 0 {
		t.Errorf("%d doorbells were rung under the send queue's lock", n)
	}
	// A refused list writes nothing and rings nothing.
	bad := write
	bad.SGEs = []SGE{{Addr: 0x10000, Length: 64, LKey: 7}, {Addr: 0x10000, Length: 64, LKey: 7}}
	if err := qp.PostSend([]SendWR{bad}); err == nil {
		t.Fatal("a request with more SGEs than the QP allows was posted")
	}
	if n := db.rung.Load(); n != 2 {
		t.Errorf("a refused post rang the doorbell (%d rings)", n)
	}
}

// Lists posted by two goroutines at once reach the ring whole and in each
// poster's order, whichever rings the doorbell first: the ring, written
// under the lock, orders them.
func TestPostSendConcurrentListsInOrder(t *testing.T) {
	qp, _, buf := watchedQP(t)
	const posters, lists, per = 2, 120, 4 // 960 requests: the ring has room for 1023
	var wg sync.WaitGroup
	for g := range posters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range lists {
				wrs := make([]SendWR, per)
				for i := range wrs {
					wrs[i] = SendWR{ID: uint64(g)<<32 | uint64(l*per+i), Op: OpWrite, SGEs: []SGE{{Addr: 0x10000, Length: 64, LKey: 7}}, RemoteAddr: 0x20000, RKey: 9}
				}
				if err := qp.PostSend(wrs); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// wr_id is the first field of each WQE (struct rxe_send_wqe, wr.wr_id),
	// in slots of 512 bytes after the ring header.
	next := make([]uint64, posters)
	for s := range posters * lists * per {
		id := binary.LittleEndian.Uint64(buf[rxe.RingHeaderSize+s*512:])
		g, seq := int(id>>32), id&0xffffffff
		if g >= posters || seq != next[g] {
			t.Fatalf("slot %d holds request %d of poster %d; poster %d's next is %d", s, seq, g, g, next[min(g, posters-1)])
		}
		if seq%per == 0 && s%per != 0 {
			t.Fatalf("slot %d starts a list in the middle of another", s)
		}
		next[g]++
	}
}

// blockingDoorbell is a fake device whose doorbell signals that it is
// being rung and returns only when released.
type blockingDoorbell struct {
	fakeDoorbell
	ringing, release chan struct{}
}

func (d *blockingDoorbell) Doorbell(string, unsafe.Pointer, uintptr) error {
	d.ringing <- struct{}{}
	<-d.release
	return nil
}

// Close waits for a doorbell PostSend is ringing after the send lock
// (waitDoorbells, between marking the QP closed and releasing the rings):
// here the doorbell is held until the test lets it go, and the wait must
// not end before (it fails at once without the wait).
func TestCloseWaitsForDoorbell(t *testing.T) {
	lim := rxe.SendLimits{QPType: rxe.QPTypeRC, MaxSGE: 1, MaxInline: 64}
	buf, _, _ := fakeRing(t, 9, 1024)
	sq, err := rxe.NewSQ(buf, lim)
	if err != nil {
		t.Fatal(err)
	}
	db := &blockingDoorbell{ringing: make(chan struct{}), release: make(chan struct{})}
	qp := &QP{ctx: &Device{}, pd: &PD{}, typ: RC, qpn: 0x11, drv: rxe.NewQPState(db, sq, nil), lim: lim}
	fakeLKey(qp.pd, 7)
	qp.state.Store(uint32(QPStateRTS))
	posted := make(chan error)
	go func() {
		posted <- qp.PostSend([]SendWR{{ID: 1, Op: OpWrite, SGEs: []SGE{{Addr: 0x10000, Length: 64, LKey: 7}}, RemoteAddr: 0x20000, RKey: 9}})
	}()
	<-db.ringing
	// Close's first section: from here no post writes the rings.
	qp.sendMu.Lock()
	qp.closed = true
	qp.sendMu.Unlock()
	waited := make(chan struct{})
	go func() {
		qp.waitDoorbells()
		qp.drv.Release() // as Close's unmap does, after DESTROY_QP
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Close went on to release the QP while its doorbell was being rung")
	case <-time.After(50 * time.Millisecond):
	}
	close(db.release)
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	<-waited
}
