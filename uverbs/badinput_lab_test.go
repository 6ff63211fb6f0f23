package uverbs

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Bad inputs and failure injections (docs/robustness.md §1) on the lab's
// rxe device on lo. Every case checks the exact outcome (the completion
// status, the async event or the Go error with its errno and text) and that
// nothing is lost: every work request posted comes back as exactly one
// completion, executed or flushed. The leak tracer of TestMain checks that
// nothing leaks.

// linkOpts are the RC connection attributes a case needs.
type linkOpts struct {
	timeout     uint8  // RTS local ACK timeout (4.096 µs × 2^timeout)
	retry       uint8  // RTS retry_cnt
	rnrRetry    uint8  // RTS rnr_retry (7: forever)
	minRNRTimer uint8  // RTR min_rnr_timer this side asks its peer to wait
	access      Access // remote rights each QP grants
}

var defaultLink = linkOpts{timeout: 14, retry: 7, rnrRetry: 7, minRNRTimer: 12,
	access: AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic}

// link moves two RC QPs of e to RTS, each addressed to the other, with o.
func (e *verbsEnv) link(a, b *QP, o linkOpts) {
	e.t.Helper()
	for _, p := range [][2]*QP{{a, b}, {b, a}} {
		q, peer := p[0], p[1]
		if err := q.ToInit(InitAttr{Port: 1, Access: o.access}); err != nil {
			e.t.Fatal(err)
		}
		if err := q.ToRTR(RTRAttr{DestQPN: peer.QPN(), RQPSN: 200, MinRNRTimer: o.minRNRTimer,
			AH: AHAttr{DGID: e.gid, SGIDIndex: e.gidIdx, HopLimit: 1}}); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, q := range []*QP{a, b} {
		if err := q.ToRTS(RTSAttr{SQPSN: 200, Timeout: o.timeout, RetryCount: o.retry, RNRRetry: o.rnrRetry}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// linkedPair creates two RC QPs on cq with defaultCap and links them. The
// cases register their memory first, so that the cleanups (last in, first
// out) close the QPs, which drain, before the MRs: an MR refuses to close
// while a QP of its PD has work the kernel has not retired.
func (e *verbsEnv) linkedPair(cq *CQ, o linkOpts) (*QP, *QP) {
	e.t.Helper()
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	e.link(a, b, o)
	return a, b
}

// want is the expected completion of one work request. Opcode and ByteLen
// are only defined for successful completions (ibv_poll_cq(3)), so they are
// checked only when status is WCSuccess.
type want struct {
	qp      *QP
	status  WCStatus
	op      WCOpcode
	byteLen uint32
}

// expectCompletions polls cqs until every work request of wants has
// completed, and checks that each completed exactly once, on its QP, with
// its status (and on success its opcode and length). An ID not in wants is
// an error, and so is one that never completes (after a generous timeout,
// which turns a hang into a failure).
func expectCompletions(t *testing.T, wants map[uint64]want, cqs ...*CQ) {
	t.Helper()
	got := map[uint64]WC{}
	wcs := make([]WC, 16)
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < len(wants) {
		progress := false
		for _, cq := range cqs {
			n, err := cq.Poll(wcs)
			if err != nil {
				t.Fatal(err)
			}
			for _, wc := range wcs[:n] {
				progress = true
				if _, ok := wants[wc.ID]; !ok {
					t.Errorf("unexpected completion %+v (%v)", wc, wc.Status.Name())
					continue
				}
				if prev, dup := got[wc.ID]; dup {
					t.Errorf("work request %d completed twice: %+v and %+v", wc.ID, prev, wc)
					continue
				}
				got[wc.ID] = wc
			}
		}
		if !progress {
			if time.Now().After(deadline) {
				var missing []string
				for id, w := range wants {
					if _, ok := got[id]; !ok {
						missing = append(missing, fmt.Sprintf("%d (want %v on QP %#x)", id, w.status.Name(), w.qp.QPN()))
					}
				}
				t.Fatalf("lost work requests: no completion for %s; got %+v", strings.Join(missing, ", "), got)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	for id, w := range wants {
		wc := got[id]
		if wc.Status != w.status || wc.QPN != w.qp.QPN() {
			t.Errorf("work request %d: status %v on QP %#x, want %v on QP %#x (%+v)",
				id, wc.Status.Name(), wc.QPN, w.status.Name(), w.qp.QPN(), wc)
			continue
		}
		if w.status == WCSuccess && (wc.Opcode != w.op || wc.ByteLen != w.byteLen) {
			t.Errorf("work request %d: opcode %v byte_len %d, want %v and %d", id, wc.Opcode, wc.ByteLen, w.op, w.byteLen)
		}
		if w.status != WCSuccess {
			err := wc.Status.Err()
			var we WCError
			if !errors.As(err, &we) || we.Status != w.status || errors.Is(err, ErrFlushed) != (w.status == WCFlushError) {
				t.Errorf("work request %d: Status.Err() = %v", id, err)
			}
		}
	}
	// Nothing else is queued.
	for _, cq := range cqs {
		if n, err := cq.Poll(wcs); n != 0 || err != nil {
			t.Errorf("extra completions %+v, %v", wcs[:n], err)
		}
	}
}

// waitState queries qp until the kernel reports state st: rxe moves a QP to
// ERR by itself right after posting the failed completion
// (kernel: sw/rxe/rxe_comp.c, rxe_resp.c call rxe_qp_error).
func waitState(t *testing.T, qp *QP, st QPState) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		attr, err := qp.Query(QPAttrState)
		if err != nil {
			t.Fatal(err)
		}
		if attr.State == st {
			if qp.State() != st {
				t.Errorf("Query saw %v but State() says %v", st, qp.State())
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("QP %#x stays in %v, want %v", qp.QPN(), attr.State, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// eventsSoFar returns the async events queued now.
func eventsSoFar(t *testing.T, c *Device) []AsyncEvent {
	t.Helper()
	var out []AsyncEvent
	for {
		ev, ok, err := c.TryNextEvent()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// firstQP returns the QP the first of evs names, if any.
func firstQP(evs []AsyncEvent) *QP {
	if len(evs) == 0 {
		return nil
	}
	return evs[0].QP()
}

// badKey returns a key that names no MR of the context: rxe keys are an
// index in the upper 24 bits and a variant in the low 8 bits
// (kernel: sw/rxe/rxe_mr.c rxe_mr_init); flipping the variant keeps the index
// but no longer matches.
func badKey(k uint32) uint32 { return k ^ 0x5a }

// Remote access violations on RC: the responder checks the rkey, the range
// and the MR's rights (kernel: sw/rxe/rxe_resp.c check_rkey), answers with a
// NAK "remote access error" and moves itself to ERR; the requester completes
// the request with IBV_WC_REM_ACCESS_ERR and moves to ERR too, which flushes
// everything behind it (docs/kernel-behaviour.md §2, docs/robustness.md §1
// items 1-2). Nothing is written to the target. From 7.1 the responder also
// raises IBV_EVENT_QP_ACCESS_ERR on its QP (sw/rxe/rxe_resp.c
// RESPST_ERR_RKEY_VIOLATION_EVENT, "RDMA/rxe: Generate async error for r_key
// violations"), as the InfiniBand spec asks (C9-222.1.1); earlier kernels
// raise no event.
func TestBadRemoteAccess(t *testing.T) {
	e := newVerbsEnv(t)
	accessEvent := kernelAtLeast(t, 7, 1)
	cases := []struct {
		name   string
		access Access // of the target MR
		wr     func(remote, local *MR) SendWR
	}{
		{"write with an invalid rkey", allAccess, func(r, l *MR) SendWR {
			return SendWR{Op: OpWrite, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr(), RKey: badKey(r.RKey())}
		}},
		{"read with an invalid rkey", allAccess, func(r, l *MR) SendWR {
			return SendWR{Op: OpRead, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr(), RKey: badKey(r.RKey())}
		}},
		{"atomic with an invalid rkey", allAccess, func(r, l *MR) SendWR {
			return SendWR{Op: OpAtomicFetchAdd, SGEs: []SGE{l.SGE(0, 8)}, RemoteAddr: r.Addr(), RKey: badKey(r.RKey()), CompareAdd: 1}
		}},
		{"write beyond the end of the MR", allAccess, func(r, l *MR) SendWR {
			return SendWR{Op: OpWrite, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr() + uint64(r.Len()) - 32, RKey: r.RKey()}
		}},
		{"write before the start of the MR", allAccess, func(r, l *MR) SendWR {
			return SendWR{Op: OpWrite, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr() - 64, RKey: r.RKey()}
		}},
		{"read beyond the end of the MR", allAccess, func(r, l *MR) SendWR {
			return SendWR{Op: OpRead, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr() + uint64(r.Len()) - 32, RKey: r.RKey()}
		}},
		{"write to an MR without remote write", AccessLocalWrite | AccessRemoteRead, func(r, l *MR) SendWR {
			return SendWR{Op: OpWrite, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr(), RKey: r.RKey()}
		}},
		{"read from an MR without remote read", AccessLocalWrite | AccessRemoteWrite, func(r, l *MR) SendWR {
			return SendWR{Op: OpRead, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr(), RKey: r.RKey()}
		}},
		{"atomic on an MR without remote atomic", AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead, func(r, l *MR) SendWR {
			return SendWR{Op: OpAtomicCmpSwap, SGEs: []SGE{l.SGE(0, 8)}, RemoteAddr: r.Addr(), RKey: r.RKey(), Swap: 1}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := *e
			e.t = t
			lbuf, lmr := e.memory(4096)
			fillPattern(lbuf.Bytes(), 7)
			rbuf, err := AllocBuffer(4096)
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, "buffer", rbuf.Close)
			fillPattern(rbuf.Bytes(), 99)
			before := append([]byte(nil), rbuf.Bytes()...)
			// The target MR covers the middle of the buffer, so that the
			// out-of-range accesses land on mapped memory that must stay
			// untouched.
			rmr, err := e.pd.RegMR(rbuf.Bytes()[1024:3072], c.access)
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, "MR", rmr.Close)
			// QPs last, so that they close (and drain) before the MRs.
			cq := e.cq(64, nil)
			a, b := e.linkedPair(cq, defaultLink)

			if err := a.PostRecv([]RecvWR{{ID: 10, SGEs: []SGE{lmr.SGE(2048, 64)}}}); err != nil {
				t.Fatal(err)
			}
			if err := b.PostRecv([]RecvWR{{ID: 20, SGEs: []SGE{lmr.SGE(2048, 64)}}, {ID: 21}}); err != nil {
				t.Fatal(err)
			}
			bad := c.wr(rmr, lmr)
			bad.ID, bad.Flags = 1, SendSignaled
			if err := a.PostSend([]SendWR{bad,
				{ID: 2, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{lmr.SGE(0, 8)}, RemoteAddr: rmr.Addr(), RKey: rmr.RKey()},
				{ID: 3, Op: OpSend, SGEs: []SGE{lmr.SGE(0, 8)}}, // unsignaled: flushed work completes anyway
			}); err != nil {
				t.Fatal(err)
			}
			expectCompletions(t, map[uint64]want{
				1:  {qp: a, status: WCRemoteAccessError},
				2:  {qp: a, status: WCFlushError},
				3:  {qp: a, status: WCFlushError},
				10: {qp: a, status: WCFlushError},
				20: {qp: b, status: WCFlushError},
				21: {qp: b, status: WCFlushError},
			}, cq)
			waitState(t, a, QPStateError)
			waitState(t, b, QPStateError)
			if !bytes.Equal(rbuf.Bytes(), before) {
				t.Error("the refused request changed the target memory")
			}
			evs := eventsSoFar(t, e.ctx)
			if !accessEvent {
				if len(evs) != 0 {
					t.Errorf("async events %v; this kernel raises none for a remote access error", evs)
				}
				return
			}
			if len(evs) != 1 || evs[0].Type != EventQPAccessErr || evs[0].QP() != b {
				t.Errorf("async events %v (QP %p), want one %v on the responder's QP %p (the requester's is %p)",
					evs, firstQP(evs), EventQPAccessErr, b, a)
			}
		})
	}
}

// Local access errors: a work request whose local SGE names no MR, lies
// outside its MR, or needs a right the MR lacks. The requester fails it, moves
// to ERR and flushes what follows; the follow-up request is fenced so that it
// cannot leave before the failed READ or atomic has completed. What status
// the failed request carries depends on where rxe notices, and on the kernel
// (observed in the lab on 6.1.x and 6.12.x; docs/kernel-behaviour.md §2):
//
//   - SEND/WRITE gather (kernel: sw/rxe/rxe_req.c finish_packet -> copy_data):
//     on 6.1 an lkey that names no MR gives IBV_WC_LOC_QP_OP_ERR (copy_data
//     answers EINVAL) and a range outside the MR IBV_WC_LOC_PROT_ERR (EFAULT).
//     On 6.12 the requester's error path calls rxe_qp_error itself
//     (rxe_req.c, label err), so the completer finds the QP in ERR and
//     flushes every WQE, the failed one included: IBV_WC_WR_FLUSH_ERR, and
//     the cause is not reported.
//   - READ and atomic results (kernel: sw/rxe/rxe_comp.c do_read/do_atomic):
//     IBV_WC_LOC_PROT_ERR on both. The peer executed an atomic all the same.
//
// Nothing of a failed SEND/WRITE reaches the peer, which stays in RTS with its
// receive posted.
func TestBadLocalAccess(t *testing.T) {
	e := newVerbsEnv(t)
	is612 := kernelAtLeast(t, 6, 12) // the lab's kernel, GOVERBS_LAB_KERNEL
	gather := func(v61 WCStatus) WCStatus {
		if is612 {
			return WCFlushError
		}
		return v61
	}
	cases := []struct {
		name   string
		status WCStatus
		atomic bool // the peer's word at offset 0 was incremented
		wr     func(remote, local, other *MR) SendWR
	}{
		{"send with an invalid lkey", gather(WCLocalQPOpError), false, func(r, l, o *MR) SendWR {
			s := l.SGE(0, 64)
			s.LKey = badKey(s.LKey)
			return SendWR{Op: OpSend, SGEs: []SGE{s}}
		}},
		{"send from beyond the end of the MR", gather(WCLocalProtectionError), false, func(r, l, o *MR) SendWR {
			s := l.SGE(l.Len()-32, 32)
			s.Length = 64
			return SendWR{Op: OpSend, SGEs: []SGE{s}}
		}},
		{"write with an invalid lkey", gather(WCLocalQPOpError), false, func(r, l, o *MR) SendWR {
			s := l.SGE(0, 64)
			s.LKey = badKey(s.LKey)
			return SendWR{Op: OpWrite, SGEs: []SGE{s}, RemoteAddr: r.Addr(), RKey: r.RKey()}
		}},
		{"write from an MR of another PD", gather(WCLocalQPOpError), false, func(r, l, o *MR) SendWR {
			return SendWR{Op: OpWrite, SGEs: []SGE{o.SGE(0, 64)}, RemoteAddr: r.Addr(), RKey: r.RKey()}
		}},
		{"read into an invalid lkey", WCLocalProtectionError, false, func(r, l, o *MR) SendWR {
			s := l.SGE(0, 64)
			s.LKey = badKey(s.LKey)
			return SendWR{Op: OpRead, SGEs: []SGE{s}, RemoteAddr: r.Addr(), RKey: r.RKey()}
		}},
		{"read into an MR without local write", WCLocalProtectionError, false, func(r, l, o *MR) SendWR {
			return SendWR{Op: OpRead, SGEs: []SGE{l.SGE(0, 64)}, RemoteAddr: r.Addr(), RKey: r.RKey()}
		}},
		{"atomic result into an invalid lkey", WCLocalProtectionError, true, func(r, l, o *MR) SendWR {
			s := l.SGE(0, 8)
			s.LKey = badKey(s.LKey)
			return SendWR{Op: OpAtomicFetchAdd, SGEs: []SGE{s}, RemoteAddr: r.Addr(), RKey: r.RKey(), CompareAdd: 1}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := *e
			e.t = t
			// The local MR is read-only for the device (no LOCAL_WRITE): fine
			// as a SEND/WRITE source, refused as a READ target.
			lbuf, err := AllocBuffer(4096)
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, "buffer", lbuf.Close)
			fillPattern(lbuf.Bytes(), 3)
			lmr, err := e.pd.RegMR(lbuf.Bytes(), AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, "MR", lmr.Close)
			rbuf, rmr := e.memory(4096)
			fillPattern(rbuf.Bytes(), 5)
			// An MR of another PD: its lkey is valid, but not for this QP.
			opd, err := e.ctx.AllocPD()
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, "PD", opd.Close)
			omr, err := opd.RegMR(lbuf.Bytes(), AccessLocalWrite)
			if err != nil {
				t.Fatal(err)
			}
			closeLater(t, "MR", omr.Close)
			rbefore := append([]byte(nil), rbuf.Bytes()...)
			cq := e.cq(64, nil)
			a, b := e.linkedPair(cq, defaultLink)

			if err := b.PostRecv([]RecvWR{{ID: 20, SGEs: []SGE{rmr.SGE(2048, 128)}}}); err != nil {
				t.Fatal(err)
			}
			bad := c.wr(rmr, lmr, omr)
			bad.ID, bad.Flags = 1, SendSignaled
			if err := a.PostSend([]SendWR{bad, {ID: 2, Op: OpSend, Flags: SendSignaled | SendFence, SGEs: []SGE{lmr.SGE(0, 8)}}}); err != nil {
				t.Fatal(err)
			}
			expectCompletions(t, map[uint64]want{
				1: {qp: a, status: c.status},
				2: {qp: a, status: WCFlushError},
			}, cq)
			waitState(t, a, QPStateError)
			if st, err := b.Query(QPAttrState); err != nil || st.State != QPStateRTS {
				t.Errorf("peer state %v, %v; want RTS", st.State, err)
			}
			if c.atomic {
				rbefore[0]++ // fetch-and-add 1 on a little-endian word
			}
			if !bytes.Equal(rbuf.Bytes(), rbefore) {
				t.Error("the peer's memory is not as expected")
			}
			if err := b.ToError(); err != nil {
				t.Fatal(err)
			}
			expectCompletions(t, map[uint64]want{20: {qp: b, status: WCFlushError}}, cq)
			if evs := eventsSoFar(t, e.ctx); len(evs) != 0 {
				t.Errorf("async events %v", evs)
			}
		})
	}
}

// A receive whose SGE names no MR: the responder cannot place the incoming
// SEND. Observed on 6.1 and 6.12 (docs/kernel-behaviour.md §2; kernel: sw/rxe/rxe_resp.c send_data_in ->
// RESPST_ERR_MALFORMED_WQE, a class A error): the receive completes with
// IBV_WC_LOC_QP_OP_ERR, the responder answers NAK "remote operational
// error" and both QPs go to ERR.
func TestBadRecvLKey(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	cq := e.cq(64, nil)
	a, b := e.linkedPair(cq, defaultLink)
	s := mr.SGE(2048, 128)
	s.LKey = badKey(s.LKey)
	if err := b.PostRecv([]RecvWR{{ID: 20, SGEs: []SGE{s}}, {ID: 21, SGEs: []SGE{mr.SGE(2048, 128)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 64)}},
		{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	expectCompletions(t, map[uint64]want{
		1:  {qp: a, status: WCRemoteOpError},
		2:  {qp: a, status: WCFlushError},
		20: {qp: b, status: WCLocalQPOpError},
		21: {qp: b, status: WCFlushError},
	}, cq)
	waitState(t, a, QPStateError)
	waitState(t, b, QPStateError)
	if evs := eventsSoFar(t, e.ctx); len(evs) != 0 {
		t.Errorf("async events %v", evs)
	}
}

// A SEND longer than the receive buffer (RC; docs/robustness.md §1 item 4).
// One might expect the length error path (NAK "invalid request"); what rxe
// does on both 6.1 and 6.12 (docs/kernel-behaviour.md §2) is the
// malformed-WQE path (kernel: sw/rxe/rxe_resp.c send_data_in: copy_data fails ->
// RESPST_ERR_MALFORMED_WQE, a class A error): the receive completes with
// IBV_WC_LOC_QP_OP_ERR, the responder answers NAK "remote operational error",
// so the SEND completes with IBV_WC_REM_OP_ERR, and both QPs go to ERR.
// Nothing is written past the receive buffer.
func TestBadSendLongerThanRecv(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(8192)
	cq := e.cq(64, nil)
	a, b := e.linkedPair(cq, defaultLink)
	fillPattern(buf.Bytes()[:4096], 1)
	before := append([]byte(nil), buf.Bytes()[4096+64:]...)
	if err := b.PostRecv([]RecvWR{{ID: 20, SGEs: []SGE{mr.SGE(4096, 64)}}, {ID: 21, SGEs: []SGE{mr.SGE(6000, 1024)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 256)}},
		{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	expectCompletions(t, map[uint64]want{
		1:  {qp: a, status: WCRemoteOpError},
		2:  {qp: a, status: WCFlushError},
		20: {qp: b, status: WCLocalQPOpError},
		21: {qp: b, status: WCFlushError},
	}, cq)
	waitState(t, a, QPStateError)
	waitState(t, b, QPStateError)
	if !bytes.Equal(buf.Bytes()[4096+64:], before) {
		t.Error("the SEND wrote past its receive buffer")
	}
	if evs := eventsSoFar(t, e.ctx); len(evs) != 0 {
		t.Errorf("async events %v", evs)
	}
}

// RNR: a SEND (or WRITE WITH IMM) reaches a QP with no receive posted. The
// responder answers RNR NAKs; with rnr_retry < 7 the requester gives up
// after that many retries with IBV_WC_RNR_RETRY_EXC_ERR and moves to ERR
// (kernel: sw/rxe/rxe_comp.c, COMPST_RNR_RETRY). The responder is not at
// fault and stays in RTS. min_rnr_timer 1 (0.01 ms) keeps the retries
// short.
func TestBadRNRRetryExceeded(t *testing.T) {
	e := newVerbsEnv(t)
	for _, op := range []WROpcode{OpSend, OpWriteImm} {
		t.Run(op.String(), func(t *testing.T) {
			e := *e
			e.t = t
			_, mr := e.memory(4096)
			cq := e.cq(64, nil)
			o := defaultLink
			o.rnrRetry, o.minRNRTimer = 2, 1
			a, b := e.linkedPair(cq, o)
			wr := SendWR{ID: 1, Op: op, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 64)}}
			if op == OpWriteImm {
				wr.RemoteAddr, wr.RKey = mr.Addr()+2048, mr.RKey()
			}
			if err := a.PostSend([]SendWR{wr, {ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}}}); err != nil {
				t.Fatal(err)
			}
			expectCompletions(t, map[uint64]want{
				1: {qp: a, status: WCRNRRetryExceededError},
				2: {qp: a, status: WCFlushError},
			}, cq)
			waitState(t, a, QPStateError)
			if st, err := b.Query(QPAttrState); err != nil || st.State != QPStateRTS {
				t.Errorf("responder state %v, %v; want RTS", st.State, err)
			}
		})
	}
}

// Zero-length SEND, RDMA WRITE, WRITE WITH IMM and RDMA READ succeed with
// byte_len 0 (docs/robustness.md §1 item 10; kernel: sw/rxe/rxe_resp.c
// check_rkey: "A zero-byte op is not required to set an addr or rkey").
// Nothing is written anywhere.
func TestBadZeroLength(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(8192)
	cq := e.cq(64, nil)
	a, b := e.linkedPair(cq, defaultLink)
	fillPattern(buf.Bytes(), 17)
	before := append([]byte(nil), buf.Bytes()...)
	if err := b.PostRecv([]RecvWR{{ID: 20, SGEs: []SGE{mr.SGE(4096, 64)}}, {ID: 21}, {ID: 22, SGEs: []SGE{mr.SGE(4096, 64)}}, {ID: 23}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{
		{ID: 1, Op: OpSend, Flags: SendSignaled},
		{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 0)}},
		{ID: 3, Op: OpWrite, Flags: SendSignaled, RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey()},
		{ID: 4, Op: OpWrite, Flags: SendSignaled}, // no address, no rkey
		{ID: 5, Op: OpWriteImm, Flags: SendSignaled, Imm: 5, RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey()},
		{ID: 6, Op: OpRead, Flags: SendSignaled, SGEs: []SGE{mr.SGE(100, 0)}, RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey()},
		{ID: 7, Op: OpRead, Flags: SendSignaled},
		{ID: 8, Op: OpSend, Flags: SendSignaled | SendInline},
	}); err != nil {
		t.Fatal(err)
	}
	expectCompletions(t, map[uint64]want{
		1:  {qp: a, op: WCOpSend},
		2:  {qp: a, op: WCOpSend},
		3:  {qp: a, op: WCOpRDMAWrite},
		4:  {qp: a, op: WCOpRDMAWrite},
		5:  {qp: a, op: WCOpRDMAWrite},
		6:  {qp: a, op: WCOpRDMARead},
		7:  {qp: a, op: WCOpRDMARead},
		8:  {qp: a, op: WCOpSend},
		20: {qp: b, op: WCOpRecv},
		21: {qp: b, op: WCOpRecv},
		22: {qp: b, op: WCOpRecvRDMAWithImm},
		23: {qp: b, op: WCOpRecv},
	}, cq)
	if !bytes.Equal(buf.Bytes(), before) {
		t.Error("a zero-length operation changed memory")
	}
	for _, q := range []*QP{a, b} {
		if st, err := q.Query(QPAttrState); err != nil || st.State != QPStateRTS {
			t.Errorf("QP %#x: state %v, %v; want RTS", q.QPN(), st.State, err)
		}
	}
}

// CQ overflow: a receive CQ too small for the completions the responder
// posts. rxe finds the ring full, raises IBV_EVENT_CQ_ERR naming the CQ (its
// user handle) and the responder moves its QP to ERR (kernel:
// sw/rxe/rxe_cq.c rxe_cq_post, rxe_resp.c do_complete ->
// RESPST_ERR_CQ_OVERFLOW; docs/abi.md §3.9). The completion that did not fit
// is lost: that is what an overflow means. The requester gets no ACK for that
// message, and after its retries IBV_WC_RETRY_EXC_ERR; what follows is
// flushed. A small ACK timeout keeps this short.
func TestBadCQOverflow(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(8192)
	cq := e.cq(64, nil)
	tiny := e.cq(1, nil)
	n := tiny.Depth()
	t.Logf("a CQ of depth 1 holds %d completions", n)
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: tiny, Cap: defaultCap})
	o := defaultLink
	o.timeout, o.retry = 8, 1 // about 1 ms, one retry
	e.link(a, b, o)
	fillPattern(buf.Bytes()[:1024], 9)
	const extra = 3
	var recvs []RecvWR
	var sends []SendWR
	for i := range n + extra {
		recvs = append(recvs, RecvWR{ID: uint64(100 + i), SGEs: []SGE{mr.SGE(4096+i*64, 64)}})
		sends = append(sends, SendWR{ID: uint64(1 + i), Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(i*16, 16)}})
	}
	if err := b.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend(sends); err != nil {
		t.Fatal(err)
	}
	ev := awaitEvent(t, e.ctx, EventCQErr)
	if ev.CQ() != tiny || ev.QP() != nil || ev.Element != tiny.h {
		t.Errorf("%v names CQ %p (handle %d), want %p (handle %d)", ev, ev.CQ(), ev.Element, tiny, tiny.h)
	}
	if ev.Type.Name() != "IBV_EVENT_CQ_ERR" {
		t.Errorf("event name %q", ev.Type.Name())
	}
	waitState(t, b, QPStateError)

	// The requester: the messages that fitted were acknowledged; the first
	// that did not is retried until retry_cnt is exhausted; the rest flush.
	wants := map[uint64]want{}
	for i := range n {
		wants[uint64(1+i)] = want{qp: a, status: WCSuccess, op: WCOpSend, byteLen: 16}
	}
	wants[uint64(1+n)] = want{qp: a, status: WCRetryExceededError}
	for i := n + 1; i < n+extra; i++ {
		wants[uint64(1+i)] = want{qp: a, status: WCFlushError}
	}
	expectCompletions(t, wants, cq)
	waitState(t, a, QPStateError)

	// The tiny CQ holds the receives that fitted, in order, with their data.
	wcs := make([]WC, n+extra)
	got, err := tiny.Poll(wcs)
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("the overflowed CQ holds %d completions, want %d: %+v", got, n, wcs[:got])
	}
	for i, wc := range wcs[:n] {
		if wc.ID != uint64(100+i) || wc.Status != WCSuccess || wc.Opcode != WCOpRecv || wc.ByteLen != 16 || wc.QPN != b.QPN() {
			t.Errorf("receive completion %d: %+v", i, wc)
		}
		if !bytes.Equal(buf.Bytes()[4096+i*64:4096+i*64+16], buf.Bytes()[i*16:i*16+16]) {
			t.Errorf("receive %d: data differs", i)
		}
	}
	for _, ev := range eventsSoFar(t, e.ctx) {
		if ev.Type != EventCQErr || ev.CQ() != tiny {
			t.Errorf("other async event %v", ev)
		}
	}
}

// Queue overflow: posting to a full send or receive queue is refused at post
// time with ErrQueueFull (ENOMEM, rdma-core's errno; docs/robustness.md §1
// item 6), nothing of the call is written, and the requests already queued
// complete normally. The send queue is kept full by RNR: the peer has no
// receive posted, and rnr_retry 7 retries forever.
func TestBadQueueOverflow(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(16384)
	cq := e.cq(256, nil)
	cp := QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	o := defaultLink
	o.minRNRTimer = 1
	e.link(a, b, o)
	mem := buf.Bytes()
	fillPattern(mem[:4096], 4)

	full := func(what string, err error, id uint64, op string) {
		t.Helper()
		var pe *PostError
		if !errors.Is(err, ErrQueueFull) || !errors.Is(err, unix.ENOMEM) || !errors.As(err, &pe) {
			t.Fatalf("%s: %v, want ErrQueueFull matching ENOMEM", what, err)
		}
		if pe.Op != op || pe.Index != 0 || pe.ID != id {
			t.Errorf("%s: PostError %+v, want op %s, index 0, ID %d", what, pe, op, id)
		}
		for _, s := range []string{"nothing was posted", "poll the completion queue", "max_send_wr/max_recv_wr"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
	}

	// The send queue.
	sq := a.Cap().MaxSendWR
	for i := range sq {
		if err := a.PostSend([]SendWR{{ID: uint64(1 + i), Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(i*32, 32)}}}); err != nil {
			t.Fatalf("send %d of %d: %v", i+1, sq, err)
		}
	}
	full("PostSend on a full send queue", a.PostSend([]SendWR{{ID: 999, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}}}), 999, "post_send")
	full("PostSend of two on a full send queue", a.PostSend([]SendWR{{ID: 998, Op: OpSend, Flags: SendSignaled}, {ID: 997, Op: OpSend}}), 998, "post_send")
	if s, _ := a.outstanding(); s != sq {
		t.Fatalf("%d send requests in the ring, want %d", s, sq)
	}
	// The receiver catches up: every queued SEND is delivered, in order.
	wants := map[uint64]want{}
	var recvs []RecvWR
	for i := range sq {
		recvs = append(recvs, RecvWR{ID: uint64(100 + i), SGEs: []SGE{mr.SGE(8192+i*64, 64)}})
		wants[uint64(1+i)] = want{qp: a, op: WCOpSend, byteLen: 32}
		wants[uint64(100+i)] = want{qp: b, op: WCOpRecv, byteLen: 32}
	}
	for len(recvs) > 0 { // the receive queue may be smaller than the send queue
		k := min(len(recvs), b.Cap().MaxRecvWR)
		if err := b.PostRecv(recvs[:k]); err != nil {
			t.Fatal(err)
		}
		recvs = recvs[k:]
		for deadline := time.Now().Add(20 * time.Second); ; {
			if _, r := b.outstanding(); r == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the queued SENDs did not consume the receives")
			}
			time.Sleep(time.Millisecond)
		}
	}
	expectCompletions(t, wants, cq)
	for i := range sq {
		if !bytes.Equal(mem[8192+i*64:8192+i*64+32], mem[i*32:i*32+32]) {
			t.Errorf("SEND %d: data differs", i+1)
		}
	}

	// The receive queue.
	rq := b.Cap().MaxRecvWR
	recvs = recvs[:0]
	for i := range rq {
		recvs = append(recvs, RecvWR{ID: uint64(200 + i), SGEs: []SGE{mr.SGE(8192+i*64, 64)}})
	}
	if err := b.PostRecv(recvs[:rq/2]); err != nil {
		t.Fatal(err)
	}
	if err := b.PostRecv(recvs[rq/2:]); err != nil {
		t.Fatal(err)
	}
	full("PostRecv on a full receive queue", b.PostRecv([]RecvWR{{ID: 299, SGEs: []SGE{mr.SGE(0, 8)}}}), 299, "post_recv")
	if _, r := b.outstanding(); r != rq {
		t.Fatalf("%d receives in the ring, want %d", r, rq)
	}
	wants = map[uint64]want{}
	for i := range rq {
		wants[uint64(200+i)] = want{qp: b, op: WCOpRecv, byteLen: 8}
		wants[uint64(300+i)] = want{qp: a, op: WCOpSend, byteLen: 8}
		if err := a.PostSend([]SendWR{{ID: uint64(300 + i), Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(i*8, 8)}}}); err != nil {
			t.Fatal(err)
		}
		if i%sq == sq-1 {
			for deadline := time.Now().Add(20 * time.Second); ; {
				if s, _ := a.outstanding(); s == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the SENDs do not complete")
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	expectCompletions(t, wants, cq)
}

// Work requests the library refuses at post time, as rdma-core's rxe provider
// does (providers/rxe/rxe.c validate_send_wr; docs/robustness.md §1 item 5):
// EINVAL, a *PostError naming the request, a text that says what to do, and
// nothing written to the ring; the QP stays usable.
func TestBadPostTimeValidation(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(8192)
	cq := e.cq(64, nil)
	cp := QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInline: 32}
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	e.link(a, b, defaultLink)
	srq, err := e.pd.CreateSRQ(SRQInit{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "SRQ", srq.Close)
	fillPattern(buf.Bytes()[:4096], 6)
	sges := func(n int) []SGE {
		out := make([]SGE, n)
		for i := range out {
			out[i] = mr.SGE(i*8, 8)
		}
		return out
	}
	ca := a.Cap()
	refused := func(what string, err error, sentinel error, op string, index int, id uint64, says ...string) {
		t.Helper()
		var pe *PostError
		if !errors.Is(err, sentinel) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, unix.EINVAL) || !errors.As(err, &pe) {
			t.Errorf("%s: %v, want %v matching EINVAL", what, err, sentinel)
			return
		}
		if pe.Op != op || pe.Index != index || pe.ID != id {
			t.Errorf("%s: PostError %+v, want op %s index %d ID %d", what, pe, op, index, id)
		}
		for _, s := range append(says, "nothing was posted") {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
		if s, r := a.outstanding(); s != 0 || r != 0 {
			t.Fatalf("%s: %d send and %d receive requests were written", what, s, r)
		}
		if s, r := b.outstanding(); s != 0 || r != 0 {
			t.Fatalf("%s: %d send and %d receive requests were written on the peer", what, s, r)
		}
		if n := srq.outstanding(); n != 0 {
			t.Fatalf("%s: %d receives were written to the SRQ", what, n)
		}
	}
	refused("SEND with too many SGEs", a.PostSend([]SendWR{{ID: 1, Op: OpSend, SGEs: sges(ca.MaxSendSGE + 1)}}),
		ErrTooManySGEs, "post_send", 0, 1, fmt.Sprintf("%d SGEs, max_send_sge is %d", ca.MaxSendSGE+1, ca.MaxSendSGE))
	refused("second of a batch with too many SGEs", a.PostSend([]SendWR{{ID: 1, Op: OpSend, SGEs: sges(1)}, {ID: 2, Op: OpWrite, SGEs: sges(ca.MaxSendSGE + 1), RemoteAddr: mr.Addr(), RKey: mr.RKey()}}),
		ErrTooManySGEs, "post_send", 1, 2, "max_send_sge")
	refused("inline longer than max_inline_data", a.PostSend([]SendWR{{ID: 3, Op: OpSend, Flags: SendInline, SGEs: []SGE{mr.SGE(0, ca.MaxInline+1)}}}),
		ErrInlineTooLong, "post_send", 0, 3, fmt.Sprintf("%d bytes, max_inline_data is %d", ca.MaxInline+1, ca.MaxInline), "without the inline flag")
	refused("inline over two SGEs longer than max_inline_data", a.PostSend([]SendWR{{ID: 4, Op: OpSend, Flags: SendInline, SGEs: []SGE{mr.SGE(0, ca.MaxInline/2+1), mr.SGE(0, ca.MaxInline/2+1)}}}),
		ErrInlineTooLong, "post_send", 0, 4, "max_inline_data")
	refused("receive with too many SGEs", b.PostRecv([]RecvWR{{ID: 5, SGEs: sges(b.Cap().MaxRecvSGE + 1)}}),
		ErrTooManySGEs, "post_recv", 0, 5, "max_recv_sge")
	refused("SRQ receive with too many SGEs", srq.PostRecv([]RecvWR{{ID: 6, SGEs: sges(srq.MaxSGE() + 1)}}),
		ErrTooManySGEs, "post_srq_recv", 0, 6)

	// The refusals left the QPs usable: the largest valid requests go through.
	if err := b.PostRecv([]RecvWR{{ID: 20, SGEs: []SGE{mr.SGE(4096, 64), mr.SGE(4096+64, 64)}}, {ID: 21, SGEs: []SGE{mr.SGE(4096+256, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{
		{ID: 10, Op: OpSend, Flags: SendSignaled, SGEs: sges(ca.MaxSendSGE)},
		{ID: 11, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{mr.SGE(100, ca.MaxInline)}},
	}); err != nil {
		t.Fatal(err)
	}
	expectCompletions(t, map[uint64]want{
		10: {qp: a, op: WCOpSend, byteLen: uint32(8 * ca.MaxSendSGE)},
		11: {qp: a, op: WCOpSend, byteLen: uint32(ca.MaxInline)},
		20: {qp: b, op: WCOpRecv, byteLen: uint32(8 * ca.MaxSendSGE)},
		21: {qp: b, op: WCOpRecv, byteLen: uint32(ca.MaxInline)},
	}, cq)
	m := buf.Bytes()
	if !bytes.Equal(m[4096:4096+8*ca.MaxSendSGE], m[:8*ca.MaxSendSGE]) || !bytes.Equal(m[4096+256:4096+256+ca.MaxInline], m[100:100+ca.MaxInline]) {
		t.Error("received data differs")
	}
}

// Posting in a state that does not allow it: receives need INIT or later,
// sends RTS or later (rdma-core refuses receives in RESET; the kernel refuses
// the send doorbell before RTS, docs/abi.md §3.7). The library refuses
// before writing anything: ErrQPState, EINVAL, and a text that names the
// state and says from which state to post.
func TestBadPostInWrongState(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	cq := e.cq(64, nil)
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	refused := func(what string, err error, op string, state QPState) {
		t.Helper()
		var pe *PostError
		if !errors.Is(err, ErrQPState) || !errors.Is(err, unix.EINVAL) || !errors.As(err, &pe) || pe.Op != op {
			t.Errorf("%s: %v, want a %s PostError matching ErrQPState and EINVAL", what, err, op)
			return
		}
		for _, s := range []string{fmt.Sprintf("QP %#x is in %v", a.QPN(), state), "post receives from INIT on and sends from RTS on", "nothing was posted"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
		if s, r := a.outstanding(); s != 0 || r != 0 {
			t.Fatalf("%s: %d send and %d receive requests were written", what, s, r)
		}
	}
	send := []SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}}}
	recv := []RecvWR{{ID: 2, SGEs: []SGE{mr.SGE(2048, 8)}}}
	refused("PostSend in RESET", a.PostSend(send), "post_send", QPStateReset)
	refused("PostRecv in RESET", a.PostRecv(recv), "post_recv", QPStateReset)
	if err := a.ToInit(InitAttr{Port: 1}); err != nil {
		t.Fatal(err)
	}
	refused("PostSend in INIT", a.PostSend(send), "post_send", QPStateInit)
	if err := b.ToInit(InitAttr{Port: 1}); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]*QP{{a, b}, {b, a}} {
		if err := p[0].ToRTR(RTRAttr{DestQPN: p[1].QPN(), RQPSN: 1, MinRNRTimer: 12, AH: AHAttr{DGID: e.gid, SGIDIndex: e.gidIdx}}); err != nil {
			t.Fatal(err)
		}
	}
	refused("PostSend in RTR", a.PostSend(send), "post_send", QPStateRTR)
	// Receives are fine from INIT on; sends from RTS on.
	if err := a.PostRecv(recv); err != nil {
		t.Fatalf("PostRecv in RTR: %v", err)
	}
	if err := b.PostRecv([]RecvWR{{ID: 3, SGEs: []SGE{mr.SGE(3000, 8)}}}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []*QP{a, b} {
		if err := q.ToRTS(RTSAttr{SQPSN: 1, Timeout: 14, RetryCount: 7, RNRRetry: 7}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PostSend(send); err != nil {
		t.Fatal(err)
	}
	if err := b.PostSend([]SendWR{{ID: 4, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(8, 8)}}}); err != nil {
		t.Fatal(err)
	}
	expectCompletions(t, map[uint64]want{
		1: {qp: a, op: WCOpSend, byteLen: 8}, 2: {qp: a, op: WCOpRecv, byteLen: 8},
		3: {qp: b, op: WCOpRecv, byteLen: 8}, 4: {qp: b, op: WCOpSend, byteLen: 8},
	}, cq)
}

// Illegal state transitions are the kernel's EINVAL (kernel: core/verbs.c
// ib_modify_qp_is_ok, called by sw/rxe/rxe_qp.c rxe_qp_chk_attr), wrapped in
// an OpError "modify_qp" that names the transition and says what the kernel
// accepts. A refused transition changes nothing: the QP stays where it was
// and the next legal step works.
func TestBadStateTransition(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	cq := e.cq(64, nil)
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	refused := func(what string, err error, from, to QPState) {
		t.Helper()
		var oe *OpError
		if !errors.Is(err, unix.EINVAL) || !errors.As(err, &oe) || oe.Op != "modify_qp" {
			t.Errorf("%s: %v, want a modify_qp OpError matching EINVAL", what, err)
			return
		}
		for _, s := range []string{fmt.Sprintf("QP %#x %v -> %v", a.QPN(), from, to), "RESET -> INIT -> RTR -> RTS"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
		attr, qerr := a.Query(QPAttrState)
		if qerr != nil || attr.State != from || a.State() != from {
			t.Errorf("%s: after the refusal the QP is in %v (State() %v), %v; want %v", what, attr.State, a.State(), qerr, from)
		}
	}
	refused("RESET -> RTS", a.Modify(&QPAttr{State: QPStateRTS}, QPAttrState), QPStateReset, QPStateRTS)
	refused("RESET -> RTR", a.Modify(&QPAttr{State: QPStateRTR}, QPAttrState), QPStateReset, QPStateRTR)
	refused("RESET -> INIT without PORT and ACCESS_FLAGS", a.Modify(&QPAttr{State: QPStateInit}, QPAttrState|QPAttrPKeyIndex), QPStateReset, QPStateInit)
	refused("RESET -> SQD", a.Modify(&QPAttr{State: QPStateSQD}, QPAttrState), QPStateReset, QPStateSQD)
	if err := a.ToInit(InitAttr{Port: 1, Access: defaultLink.access}); err != nil {
		t.Fatal(err)
	}
	refused("INIT -> RTS", a.ToRTS(RTSAttr{Timeout: 14, RetryCount: 7, RNRRetry: 7}), QPStateInit, QPStateRTS)
	refused("INIT -> RTR without the address", a.Modify(&QPAttr{State: QPStateRTR, PathMTU: MTU1024}, QPAttrState|QPAttrPathMTU), QPStateInit, QPStateRTR)
	if err := b.ToInit(InitAttr{Port: 1, Access: defaultLink.access}); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]*QP{{a, b}, {b, a}} {
		if err := p[0].ToRTR(RTRAttr{DestQPN: p[1].QPN(), RQPSN: 1, MinRNRTimer: 12, AH: AHAttr{DGID: e.gid, SGIDIndex: e.gidIdx}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []*QP{a, b} {
		if err := q.ToRTS(RTSAttr{SQPSN: 1, Timeout: 14, RetryCount: 7, RNRRetry: 7}); err != nil {
			t.Fatal(err)
		}
	}
	refused("RTS -> INIT", a.Modify(&QPAttr{State: QPStateInit}, QPAttrState), QPStateRTS, QPStateInit)
	refused("RTS -> RTR", a.Modify(&QPAttr{State: QPStateRTR}, QPAttrState), QPStateRTS, QPStateRTR)
	// Still a working pair.
	if err := b.PostRecv([]RecvWR{{ID: 2, SGEs: []SGE{mr.SGE(2048, 16)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 16)}}}); err != nil {
		t.Fatal(err)
	}
	expectCompletions(t, map[uint64]want{1: {qp: a, op: WCOpSend, byteLen: 16}, 2: {qp: b, op: WCOpRecv, byteLen: 16}}, cq)
}
