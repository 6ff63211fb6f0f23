package uverbs

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A CQ, QPs and an SRQ created with SingleGoroutine work end to end on
// rxe: receives posted to a QP and to the SRQ, sends, completions taken
// with PollWait (arm, event, poll), and the queues handed from one
// goroutine to another in turn, through a channel, as the option allows.
// Closing them in the end (closeLater) drains the QPs through the CQ.
func TestVerbsSingleGoroutine(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(8192)
	ch := e.channel()
	cq, err := e.ctx.CreateCQ(CQInit{Depth: 64, Channel: ch, SingleGoroutine: true})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "CQ", cq.Close)
	srq, err := e.pd.CreateSRQ(SRQInit{MaxWR: 16, MaxSGE: 1, SingleGoroutine: true})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "SRQ", srq.Close)
	init := QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap, SingleGoroutine: true}
	a, b := e.qp(init), e.qp(init)
	e.connect(a, b)
	withSRQ := init
	withSRQ.SRQ, withSRQ.Cap = srq, QPCap{MaxSendWR: 8}
	a2, b2 := e.qp(init), e.qp(withSRQ)
	e.connect(a2, b2)

	mem := buf.Bytes()
	fillPattern(mem[:1024], 3)
	// round sends 100 bytes from a to b's receive queue and 60 inline from
	// a2 to the SRQ, and waits for the four completions.
	round := func(n int) {
		id := uint64(10 * n)
		clear(mem[4096:8192])
		if err := b.PostRecv([]RecvWR{{ID: id + 1, SGEs: []SGE{mr.SGE(4096, 512)}}}); err != nil {
			t.Error(err)
			return
		}
		if err := srq.PostRecv([]RecvWR{{ID: id + 2, SGEs: []SGE{mr.SGE(6144, 512)}}}); err != nil {
			t.Error(err)
			return
		}
		if err := a.PostSend([]SendWR{{ID: id + 3, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 100)}}}); err != nil {
			t.Error(err)
			return
		}
		if err := a2.PostSend([]SendWR{{ID: id + 4, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{mr.SGE(512, 60)}}}); err != nil {
			t.Error(err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		got := map[uint64]WC{}
		wcs := make([]WC, 4)
		for len(got) < 4 {
			k, err := cq.PollWait(ctx, wcs)
			if err != nil {
				t.Errorf("round %d: PollWait after %d completions: %v", n, len(got), err)
				return
			}
			for _, wc := range wcs[:k] {
				if wc.Status != WCSuccess {
					t.Errorf("round %d: completion %+v", n, wc)
				}
				got[wc.ID] = wc
			}
		}
		for _, w := range []struct {
			id   uint64
			qpn  uint32
			size uint32
		}{{id + 1, b.QPN(), 100}, {id + 2, b2.QPN(), 60}} {
			if wc, ok := got[w.id]; !ok || wc.Opcode != WCOpRecv || wc.QPN != w.qpn || wc.ByteLen != w.size {
				t.Errorf("round %d: receive %d: %+v (present %v), want %d bytes on QP %#x", n, w.id, wc, ok, w.size, w.qpn)
			}
		}
		if !bytes.Equal(mem[4096:4196], mem[:100]) || !bytes.Equal(mem[6144:6204], mem[512:572]) {
			t.Errorf("round %d: received data differs", n)
		}
	}
	round(1)
	// The next rounds in another goroutine each, one after the other: the
	// channel orders each round after the last.
	for n := 2; n <= 3; n++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			round(n)
		}()
		<-done
	}
}
