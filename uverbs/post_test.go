package uverbs

import (
	"bytes"
	"errors"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/provider"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// TestPlainSends checks that every request plainSends lets past is one
// the full check accepts (checkSend, with no MR list, as stageSend's slow
// path would call it) and whose inline bytes lie in an open Buffer, over
// every opcode, flag set, SGE count, length and source, AH (none, open,
// closed, of another PD) and UD field, on each QP type; that a list stops
// at its first request that is not plain; and that the common requests
// are plain.
func TestPlainSends(t *testing.T) {
	buf, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	var list []bufEntry
	if p := bufferView.Load(); p != nil {
		list = *p
	}
	inBuf, outside := buf.Addr(), uint64(0x1000)

	pd, other := &PD{}, &PD{}
	fakeLKey(pd, 0) // the SGEs' lkey names an MR, recorded by an earlier post
	closed := &AH{pd: pd, drv: provider.AH{Num: 2}}
	closed.closed.Store(true)
	ahs := []*AH{nil, {pd: pd, drv: provider.AH{Num: 1}}, closed, {pd: other, drv: provider.AH{Num: 3}}}

	plain := 0
	for _, typ := range []struct {
		t QPType
		r rxe.QPType
	}{{RC, rxe.QPTypeRC}, {UC, rxe.QPTypeUC}, {UD, rxe.QPTypeUD}} {
		for cfg := range 3 * 2 {
			qp := &QP{pd: pd, typ: typ.t, lim: rxe.SendLimits{QPType: typ.r, MaxSGE: cfg % 3, MaxInline: 64 * (cfg / 3)}}
			pd.noteLKey(lkeyUser{qp: qp}, &qp.sendKeys, 0)
			for op := WROpcode(0); op <= OpAtomicFetchAdd+2; op++ {
				for flags := SendFlags(0); flags <= 2*(SendFence|SendSignaled|SendSolicited|SendInline)+1; flags++ {
					for nsge := range 3 {
						for _, length := range []uint32{0, 64, 65, 1<<32 - 1} {
							for _, addr := range []uint64{inBuf, outside} {
								sges := make([]SGE, nsge)
								for i := range sges {
									sges[i] = SGE{Addr: addr, Length: length, LKey: 7}
								}
								for _, ah := range ahs {
									for _, qpn := range []uint32{0, 5} {
										wr := SendWR{ID: 1, Op: op, Flags: flags, SGEs: sges, RemoteAddr: 0x2001, AH: ah, RemoteQPN: qpn, RemoteQKey: qpn}
										if qp.plainSends([]SendWR{wr}) == 0 {
											continue
										}
										plain++
										if err := qp.checkSend("post_send", 0, &wr, nil, false); err != nil {
											t.Errorf("%v QP %+v: plainSends passed %+v (AH %+v), which checkSend refuses: %v", typ.t, qp.lim, wr, ah, err)
										}
										if !qp.inlineInBuffers(list, []SendWR{wr}) {
											t.Errorf("%v QP %+v: plainSends passed %+v, whose inline bytes are not in a Buffer", typ.t, qp.lim, wr)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}

	rc := &QP{pd: pd, typ: RC, lim: rxe.SendLimits{QPType: rxe.QPTypeRC, MaxSGE: 1, MaxInline: 64}}
	ud := &QP{pd: pd, typ: UD, lim: rxe.SendLimits{QPType: rxe.QPTypeUD, MaxSGE: 1, MaxInline: 64}}
	sge := []SGE{{Addr: inBuf, Length: 64, LKey: 7}}
	fakeLKey(pd, 7)
	for _, qp := range []*QP{rc, ud} {
		// A request naming an lkey the QP's posts have not recorded
		// leaves the fast path, which records it (stageSendSlow).
		if n := qp.plainSends([]SendWR{{Op: OpSend, SGEs: sge}}); n != 0 {
			t.Errorf("plainSends passed a request naming an lkey the QP has not recorded")
		}
		qp.trackSends([]SendWR{{Op: OpSend, SGEs: sge}})
	}
	write := SendWR{Op: OpWrite, Flags: SendSignaled, SGEs: sge, RemoteAddr: 0x2000, RKey: 9}
	for _, c := range []struct {
		qp *QP
		wr SendWR
	}{
		{rc, write},
		{rc, SendWR{Op: OpRead, Flags: SendSignaled | SendFence, SGEs: sge}},
		{rc, SendWR{Op: OpSendImm, Flags: SendSolicited, SGEs: sge, Imm: 3}},
		{rc, SendWR{Op: OpSend, Flags: SendSignaled | SendInline, SGEs: sge}},
		{ud, SendWR{Op: OpSend, Flags: SendSignaled, SGEs: sge, AH: ahs[1], RemoteQPN: 5, RemoteQKey: 7}},
		{ud, SendWR{Op: OpSend, Flags: SendInline, SGEs: sge, AH: ahs[1], RemoteQPN: 5, RemoteQKey: 7}},
	} {
		if c.qp.plainSends([]SendWR{c.wr}) != 1 {
			t.Errorf("%+v on a %v QP is not plain", c.wr, c.qp.typ)
		}
	}
	// A list stops at its first request that is not plain, here an
	// unknown flag.
	bad := write
	bad.Flags |= 1 << 10
	if got := rc.plainSends([]SendWR{write, write, bad, write}); got != 2 {
		t.Errorf("plainSends of a list with a bad third request: %d, want 2", got)
	}
	t.Logf("%d plain requests checked", plain)
}

// TestRecvOne: the path for one receive of at most one SGE, of PostRecv
// and of SRQ.PostRecv, written out for rxe, writes the bytes and the
// producer index the provider's list path (providerPostRecv) writes,
// receive after receive, past the end of the ring and back (on rings of
// the native benchmarks), and on a full ring refuses as the list path
// does; a list takes the list path whole.
func TestRecvOne(t *testing.T) {
	a, b, c := newNativeRig(t), newNativeRig(t), newNativeRig(t)
	// c posts through an SRQ on its receive ring.
	srq := &SRQ{pd: c.qp.pd, drv: rxe.NewSRQState(&c.qp.drv.(*rxe.QPState).RQ)}
	listPath := func(w []RecvWR) error {
		b.qp.trackRecvs(w)
		return b.qp.providerPostRecv("post_recv", w)
	}
	// The SRQ's errors name its verb.
	srqPost := func(w []RecvWR) error {
		err := srq.PostRecv(w)
		var pe *PostError
		if errors.As(err, &pe) && pe.Op == "post_srq_recv" {
			pe.Op = "post_recv"
		}
		return err
	}
	for i := rxe.RingHeaderSize; i < len(a.rqBuf); i++ {
		a.rqBuf[i], b.rqBuf[i], c.rqBuf[i] = byte(i), byte(i), byte(i)
	}
	wr := func(i int) RecvWR {
		w := RecvWR{ID: 0x900 + uint64(i)}
		if i%3 != 0 {
			w.SGEs = []SGE{{Addr: 0xc0c1c2c3c4c5c6c7 + uint64(i), Length: uint32(i) * 17, LKey: 0x5a5b5c5d}}
		}
		return w
	}
	post := func(i int) (error, error) {
		w := []RecvWR{wr(i)}
		ea, eb, ec := a.qp.PostRecv(w), listPath(w), srqPost(w)
		if (ec == nil) != (eb == nil) || (ec != nil && ec.Error() != eb.Error()) || !bytes.Equal(c.rqBuf, b.rqBuf) {
			t.Fatalf("receive %d: SRQ.PostRecv %v, list path %v, rings equal %v", i, ec, eb, bytes.Equal(c.rqBuf, b.rqBuf))
		}
		return ea, eb
	}
	// A list goes to the list path whole.
	list := []RecvWR{wr(1), wr(2), wr(4)}
	if ea, eb := a.qp.PostRecv(list), listPath(list); ea != nil || eb != nil || srqPost(list) != nil {
		t.Fatalf("a list of three: %v, %v", ea, eb)
	}
	if !bytes.Equal(a.rqBuf, b.rqBuf) || !bytes.Equal(c.rqBuf, b.rqBuf) {
		t.Fatal("a list of three: PostRecv or SRQ.PostRecv left a ring other than the list path's")
	}
	a.rqK.consume()
	b.rqK.consume()
	c.rqK.consume()
	// Past the ring's 1024 slots, each receive taken at once.
	for i := range 1100 {
		if ea, eb := post(i); ea != nil || eb != nil {
			t.Fatalf("receive %d: %v, %v", i, ea, eb)
		}
		if !bytes.Equal(a.rqBuf, b.rqBuf) {
			t.Fatalf("receive %d (%+v): PostRecv and the list path left different rings", i, wr(i))
		}
		a.rqK.consume()
		b.rqK.consume()
		c.rqK.consume()
	}
	// Then none taken until the ring is full.
	for i := 1100; ; i++ {
		ea, eb := post(i)
		if (ea == nil) != (eb == nil) || !bytes.Equal(a.rqBuf, b.rqBuf) {
			t.Fatalf("receive %d: PostRecv %v, list path %v, rings equal %v", i, ea, eb, bytes.Equal(a.rqBuf, b.rqBuf))
		}
		if ea != nil {
			if !errors.Is(ea, ErrQueueFull) || ea.Error() != eb.Error() {
				t.Fatalf("full ring after %d receives: PostRecv %v, list path %v", i-1100, ea, eb)
			}
			if i-1100 != 1023 {
				t.Fatalf("the ring took %d receives, want 1023", i-1100)
			}
			break
		}
	}
}

// fakeLKey makes lkey name an open MR of pd, as RegMR does, for posts on
// fake rings.
func fakeLKey(pd *PD, lkey uint32) *MR {
	mr := &MR{pd: pd, lkey: lkey}
	pd.addMR(mr)
	return mr
}
