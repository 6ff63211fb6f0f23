package rxe

import (
	"testing"
)

func TestSQPendingUsesLKey(t *testing.T) {
	r := newFakeRing(t, 9, 8) // 512-byte slots, capacity 7
	sq, err := NewSQ(r.buf, SendLimits{QPType: QPTypeRC, MaxSGE: 4, MaxInline: 64})
	if err != nil {
		t.Fatal(err)
	}
	if sq.PendingUsesLKey(7) || sq.PendingNow() != 0 {
		t.Fatal("empty SQ uses a key")
	}
	post := func(w *SendWQE) {
		t.Helper()
		if err := sq.Post(w, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Inline data is copied from this memory: its key is not kept.
	src := mapAnon(t, 4096)
	post(&SendWQE{ID: 1, Op: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: addrOf(src), Length: 16, LKey: 9}}})
	post(&SendWQE{ID: 2, Op: OpSend, SGEs: []SGE{{Addr: 0x1000, Length: 8, LKey: 5}, {Addr: 0x2000, Length: 8, LKey: 7}}})
	if sq.PendingNow() != 2 {
		t.Fatalf("PendingNow %d, want 2", sq.PendingNow())
	}
	if !sq.PendingUsesLKey(7) || !sq.PendingUsesLKey(5) {
		t.Fatal("the key of the second SGE of a posted send was not found")
	}
	if sq.PendingUsesLKey(9) {
		t.Fatal("the key of an inline SGE was reported")
	}
	if sq.PendingUsesLKey(6) {
		t.Fatal("a key no request names was reported")
	}
	// The kernel retires both: nothing is in use any more, although the
	// slots still hold the bytes.
	r.kernelConsumeAll()
	if sq.PendingUsesLKey(7) || sq.PendingNow() != 0 {
		t.Fatal("a retired request still counts")
	}
	// Wrap around the ring end: only the pending window is scanned.
	for i := range 6 {
		post(&SendWQE{ID: uint64(10 + i), Op: OpSend, SGEs: []SGE{{Addr: 0x3000, Length: 8, LKey: uint32(100 + i)}}})
	}
	r.kcons.Store((r.kprod.Load() + r.slots - 1) & (r.slots - 1)) // all but the last retired
	if !sq.PendingUsesLKey(105) || sq.PendingUsesLKey(104) || sq.PendingNow() != 1 {
		t.Fatalf("after a wrap: 105 %v, 104 %v, pending %d", sq.PendingUsesLKey(105), sq.PendingUsesLKey(104), sq.PendingNow())
	}
	// A corrupt num_sge is clamped to the slot.
	s := r.slot((r.kprod.Load() + r.slots - 1) & (r.slots - 1))
	le.PutUint32(s[184+12:], 1<<30)
	if !sq.PendingUsesLKey(105) || sq.PendingUsesLKey(1) {
		t.Fatal("num_sge beyond the slot")
	}
}

func TestRQPendingUsesLKey(t *testing.T) {
	r := newFakeRing(t, 7, 4) // 128-byte slots, capacity 3
	rq, err := NewRQ(r.buf, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := rq.Post(&RecvWQE{ID: 1, SGEs: []SGE{{Addr: 0x1000, Length: 64, LKey: 3}, {Addr: 0x2000, Length: 64, LKey: 4}}}); err != nil {
		t.Fatal(err)
	}
	if err := rq.Post(&RecvWQE{ID: 2}); err != nil {
		t.Fatal(err)
	}
	if !rq.PendingUsesLKey(4) || !rq.PendingUsesLKey(3) || rq.PendingUsesLKey(5) {
		t.Fatal("receive keys")
	}
	r.kcons.Store(1) // the first receive was consumed
	if rq.PendingUsesLKey(4) || rq.PendingNow() != 1 {
		t.Fatal("a consumed receive still counts")
	}
}

// Stage fills slots without publishing them; Commit publishes the batch
// with one store.
func TestProducerStageCommit(t *testing.T) {
	r := newFakeRing(t, 7, 4) // capacity 3
	rq, err := NewRQ(r.buf, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		EncodeRecv(rq.Slot(), &RecvWQE{ID: uint64(i)})
		rq.Stage()
		if got := r.kprod.Load(); got != 0 {
			t.Fatalf("producer_index %d before Commit", got)
		}
	}
	rq.Commit()
	if got := r.kprod.Load(); got != 3 {
		t.Fatalf("producer_index %d after Commit, want 3", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Stage on a full ring did not panic")
		}
	}()
	rq.Stage()
}
