package siw

import (
	"runtime"
	"sync"
	"testing"
)

func TestHotPathAllocatesNothing(t *testing.T) {
	src := mapAnon(t, 4096)
	sq, sr := newSQ(t, 8, rcLimits)
	rq, rr := newRQ(t, 8, 2)
	cq, cr := newCQ(t, 8)
	sges := []SGE{{Addr: addrOf(src), Length: 32, LKey: 1}, {Addr: addrOf(src[64:]), Length: 16, LKey: 1}}
	send := &SendWR{ID: 1, Op: OpWrite, Flags: SendSignaled, RemoteAddr: 0x1000, RKey: 2, SGEs: sges}
	inline := &SendWR{ID: 2, Op: OpSend, Flags: SendInline, SGEs: sges}
	recv := &RecvWR{ID: 3, SGEs: sges}
	wcs := make([]WC, 4)
	cases := map[string]func(){
		"CheckSend": func() { _ = CheckSend(send, &rcLimits) },
		"SQ.Post": func() {
			start := sq.Next()
			if err := sq.Post(send); err != nil {
				panic(err)
			}
			_ = sq.DoorbellNeeded(start)
			sr.drop()
		},
		"SQ.Post inline": func() {
			if err := sq.Post(inline); err != nil {
				panic(err)
			}
			sr.drop()
		},
		"RQ.Post": func() {
			if err := rq.Post(recv); err != nil {
				panic(err)
			}
			rr.drop()
		},
		"CQ.Poll": func() {
			cr.produce(cqe{id: 9, flags: 1, opcode: 3})
			if cq.Poll(wcs) != 1 {
				panic("no completion")
			}
		},
		"CQ.Arm": func() { cq.Arm(false) },
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %.1f times per call", name, n)
		}
	}
}

// TestConcurrentKernel runs the kernel's side in another goroutine, as it
// runs on another CPU: it takes SQEs and RQEs as they become VALID and
// writes a CQE for each, while the user posts and polls. Under the race
// detector (CGO_ENABLED=1 go test -race) this checks that every element is
// handed over through the flag word: the element bytes are plain loads and
// stores on both sides.
func TestConcurrentKernel(t *testing.T) {
	const total = 3000
	src := mapAnon(t, 4096)
	sq, sr := newSQ(t, 8, rcLimits)
	rq, rr := newRQ(t, 4, 1)
	cq, cr := newCQ(t, 16)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the kernel
		defer wg.Done()
		var queued []cqe
		for {
			if e := sr.take(); e != nil {
				queued = append(queued, cqe{id: le.Uint64(e), flags: 1, opcode: e[11], bytes: le.Uint32(e[24+8:]), qpID: 1})
			}
			if e := rr.take(); e != nil {
				queued = append(queued, cqe{id: le.Uint64(e), flags: 1, opcode: 8, bytes: le.Uint32(e[16+8:]), qpID: 1})
			}
			for len(queued) > 0 && cr.produce(queued[0]) {
				queued = queued[1:]
			}
			select {
			case <-done:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	defer func() { close(done); wg.Wait() }()

	sent, recvd := uint64(0), uint64(0)
	seen := map[uint64]bool{}
	wcs := make([]WC, 8)
	for len(seen) < 2*total {
		if sent < total && sq.Room(1) {
			sent++
			src[0] = byte(sent)
			wr := SendWR{ID: sent, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{{Addr: addrOf(src), Length: 1 + uint32(sent%60)}}}
			if err := sq.Post(&wr); err != nil {
				t.Fatal(err)
			}
		}
		if recvd < total && rq.Room(1) {
			recvd++
			if err := rq.Post(&RecvWR{ID: 1<<32 | recvd, SGEs: []SGE{{Addr: addrOf(src), Length: uint32(recvd), LKey: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
		n := cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if seen[wc.ID] {
				t.Fatalf("completion %#x twice", wc.ID)
			}
			seen[wc.ID] = true
			want := uint32(1 + wc.ID%60)
			if wc.Opcode == WCOpRecv {
				want = uint32(wc.ID)
			}
			if wc.Status != WCSuccess || wc.QPN != 1 || wc.ByteLen != want {
				t.Fatalf("completion %+v, want %d bytes", wc, want)
			}
		}
		if n == 0 {
			runtime.Gosched()
		}
	}
}
