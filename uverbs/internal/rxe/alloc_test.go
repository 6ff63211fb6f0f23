package rxe

import (
	"runtime"
	"sync"
	"testing"
)

func TestHotPathAllocatesNothing(t *testing.T) {
	src := mapAnon(t, 4096)
	sqr := newFakeRing(t, 8, 64)
	sq, err := NewSQ(sqr.buf, SendLimits{QPType: QPTypeRC, MaxSGE: 2, MaxInline: 48})
	if err != nil {
		t.Fatal(err)
	}
	rqr := newFakeRing(t, 7, 64)
	rq, err := NewRQ(rqr.buf, 4)
	if err != nil {
		t.Fatal(err)
	}
	cqr := newFakeRing(t, 7, 64)
	cq, err := NewCQ(cqr.buf)
	if err != nil {
		t.Fatal(err)
	}
	sges := []SGE{{Addr: addrOf(src), Length: 32, LKey: 1}, {Addr: addrOf(src[64:]), Length: 16, LKey: 1}}
	send := &SendWQE{ID: 1, Op: OpRDMAWriteWithImm, Flags: SendSignaled, Imm: 7, RemoteAddr: 0x1000, RKey: 2, SGEs: sges}
	inline := &SendWQE{ID: 2, Op: OpSend, Flags: SendInline, SGEs: sges}
	recv := &RecvWQE{ID: 3, SGEs: sges}
	wcs := make([]WC, 4)
	slot := make([]byte, 256)

	cases := map[string]func(){
		"EncodeSend":        func() { EncodeSend(slot, send, 0) },
		"EncodeSend inline": func() { EncodeSend(slot, inline, 0) },
		"ValidateSend":      func() { _ = ValidateSend(send, 0, &SendLimits{QPType: QPTypeRC, MaxSGE: 2}) },
		"SQ.Post": func() {
			if err := sq.Post(send, 0); err != nil {
				panic(err)
			}
			if err := sq.Post(inline, 0); err != nil {
				panic(err)
			}
			sqr.kernelConsumeAll()
		},
		"RQ.Post": func() {
			if err := rq.Post(recv); err != nil {
				panic(err)
			}
			rqr.kernelConsumeAll()
		},
		"Publish/Consume": func() {
			if !sq.Full() {
				EncodeSend(sq.Slot(), send, 0)
				sq.Publish()
			}
			sqr.kernelConsumeAll()
			cqr.kernelPostCQE(t, func(s []byte) { s[0] = 1 })
			if !cq.Empty() {
				_ = cq.Peek()
				cq.Consume()
			}
		},
		"CQ.Poll": func() {
			cqr.kernelPostCQE(t, func(s []byte) { writeCQE(s, 9, 0, 128, 0, 10, [4]byte{}, 1, 0, WCGRH, 0, 0, 0, 0, 1) })
			cqr.kernelPostCQE(t, func(s []byte) { s[0] = 1 })
			if n := cq.Poll(wcs); n != 2 {
				panic("poll")
			}
		},
		"DecodeCQE": func() { DecodeCQE(slot, &wcs[0]) },
	}
	for name, f := range cases {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, a)
		}
	}
}

// TestSQAgainstConcurrentKernel posts many WQEs while another goroutine
// plays the kernel requester/completer: it load-acquires producer_index,
// reads each WQE at its documented offsets, checks it, and store-releases
// consumer_index. Every WQE must arrive complete and in order across many
// wraparounds of a small ring.
func TestSQAgainstConcurrentKernel(t *testing.T) {
	const total = 50000
	r := newFakeRing(t, 8, 8)
	sq, err := NewSQ(r.buf, SendLimits{QPType: QPTypeRC, MaxSGE: 3, MaxInline: 48})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := r.kcons.Load()
		for want := uint64(1); want <= total; {
			if r.kprod.Load() == c {
				runtime.Gosched()
				continue
			}
			s := r.slot(c)
			if id := u64(s, 0); id != want || u32(s, 12) != 0 || u64(s, 24) != want*8 ||
				u32(s, 32) != uint32(want) || u64(s, 152) != want*8 || u32(s, 184) != uint32(want%4096) ||
				u32(s, 196) != 1 || u64(s, 208) != want*16 {
				errc <- "kernel saw a torn or misplaced WQE"
				return
			}
			c = (c + 1) & 7
			r.kcons.Store(c)
			want++
		}
	}()
	wr := &SendWQE{Op: OpRDMAWrite, SGEs: make([]SGE, 1)}
	for id := uint64(1); id <= total; {
		wr.ID, wr.RemoteAddr, wr.RKey = id, id*8, uint32(id)
		wr.SGEs[0] = SGE{Addr: id * 16, Length: uint32(id % 4096), LKey: 1}
		switch err := sq.Post(wr, 0); err {
		case nil:
			id++
		case ErrQueueFull:
			select {
			case msg := <-errc:
				t.Fatal(msg)
			default:
			}
			runtime.Gosched()
		default:
			t.Fatal(err)
		}
	}
	wg.Wait()
	select {
	case msg := <-errc:
		t.Fatal(msg)
	default:
	}
}

func BenchmarkEncodeSend(b *testing.B) {
	slot := make([]byte, 256)
	wr := &SendWQE{ID: 1, Op: OpRDMAWrite, Flags: SendSignaled, RemoteAddr: 0x1000, RKey: 2,
		SGEs: []SGE{{Addr: 0x2000, Length: 4096, LKey: 1}}}
	lim := &SendLimits{QPType: QPTypeRC, MaxSGE: 2, MaxInline: 48}
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidateSend(wr, 0, lim); err != nil {
			b.Fatal(err)
		}
		EncodeSend(slot, wr, 0)
	}
}

func BenchmarkSQPost(b *testing.B) {
	r := newFakeRing(b, 8, 1024)
	sq, err := NewSQ(r.buf, SendLimits{QPType: QPTypeRC, MaxSGE: 2, MaxInline: 48})
	if err != nil {
		b.Fatal(err)
	}
	wr := &SendWQE{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x2000, Length: 64, LKey: 1}}}
	b.ReportAllocs()
	for b.Loop() {
		if err := sq.Post(wr, 0); err == ErrQueueFull {
			r.kernelConsumeAll()
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPollDecode(b *testing.B) {
	r := newFakeRing(b, 7, 1024)
	cq, err := NewCQ(r.buf)
	if err != nil {
		b.Fatal(err)
	}
	// Fill every slot with a CQE once; the fake kernel then only advances
	// producer_index, so the benchmark measures the poll and decode.
	for i := uint32(0); i < 1024; i++ {
		writeCQE(r.slot(i), uint64(i), 0, 128, 0, 64, [4]byte{}, 17, 0, WCGRH, 0, 0, 0, 0, 1)
	}
	wcs := make([]WC, 16)
	b.ReportAllocs()
	polled := 0
	for b.Loop() {
		if cq.Empty() {
			r.kprod.Store((r.kcons.Load() + 1023) & 1023)
		}
		polled += cq.Poll(wcs)
	}
	b.ReportMetric(float64(polled)/float64(b.N), "wc/op")
}
