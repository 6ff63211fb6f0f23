package rdmacm

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
	"golang.org/x/sys/unix"
)

// What iWARP lacks, on a siw connection the CM made: each request is
// refused at once, before anything is written, with an error naming the
// device and the reason; the connection still carries data after. Once the
// connection is over, posting is refused: siw completes nothing posted to
// a QP in the error state.
func TestSiwConnectedRefusals(t *testing.T) {
	ends := testutil.SiwPair(t)
	ctx := testCtx(t)
	srv := netip.MustParseAddr(ends[0].Addr)
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), nil, &Config{MaxInline: 32})
	if got := c.QP().Cap().MaxInline; got < 32 {
		t.Fatalf("siw QP holds %d bytes inline, asked for 32", got)
	}
	cli, ser := newEndpoint(t, c, 4096), newEndpoint(t, sc, 4096)
	defer cli.close()
	defer ser.close()
	dev := c.QP().PD().Device().Name()

	sge := []uverbs.SGE{cli.mr.SGE(0, 8)}
	for _, r := range []struct {
		what, says string
		wr         uverbs.SendWR
	}{
		{"SEND_WITH_IMM", "immediate data", uverbs.SendWR{ID: 1, Op: uverbs.OpSendImm, Flags: uverbs.SendSignaled, SGEs: sge, Imm: 7}},
		{"RDMA_WRITE_WITH_IMM", "immediate data", uverbs.SendWR{ID: 2, Op: uverbs.OpWriteImm, Flags: uverbs.SendSignaled, SGEs: sge, Imm: 7,
			RemoteAddr: ser.mr.Addr(), RKey: ser.mr.RKey()}},
		{"ATOMIC_FETCH_AND_ADD", "atomic", uverbs.SendWR{ID: 3, Op: uverbs.OpAtomicFetchAdd, Flags: uverbs.SendSignaled, SGEs: sge,
			RemoteAddr: ser.mr.Addr(), RKey: ser.mr.RKey(), CompareAdd: 1}},
		{"ATOMIC_CMP_AND_SWP", "atomic", uverbs.SendWR{ID: 4, Op: uverbs.OpAtomicCmpSwap, Flags: uverbs.SendSignaled, SGEs: sge,
			RemoteAddr: ser.mr.Addr(), RKey: ser.mr.RKey()}},
	} {
		err := c.QP().PostSend([]uverbs.SendWR{r.wr})
		var pe *uverbs.PostError
		if !errors.As(err, &pe) || !errors.Is(err, uverbs.ErrNotSupported) || !errors.Is(err, uverbs.ErrInvalidWR) ||
			!strings.Contains(err.Error(), dev) || !strings.Contains(err.Error(), r.says) {
			t.Errorf("%s: %v; want a PostError matching ErrNotSupported and ErrInvalidWR, naming %s and saying %q", r.what, err, dev, r.says)
		}
	}
	var wcs [1]uverbs.WC
	if n, err := c.CQ().Poll(wcs[:]); n != 0 || err != nil {
		t.Errorf("a refused request completed: %d %+v %v", n, wcs[0], err)
	}

	// The connection is intact.
	if err := sc.QP().PostRecv([]uverbs.RecvWR{{ID: 9, SGEs: []uverbs.SGE{ser.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	copy(cli.buf.Bytes(), "after the refusals")
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 5, Op: uverbs.OpSend, Flags: uverbs.SendSignaled | uverbs.SendInline,
		SGEs: []uverbs.SGE{cli.mr.SGE(0, 18)}}}); err != nil {
		t.Fatal(err)
	}
	if wc, err := waitWC(ctx, c); err != nil || wc.Status != uverbs.WCSuccess || wc.ID != 5 {
		t.Fatalf("send: %+v, %v", wc, err)
	}
	if wc, err := waitWC(ctx, sc); err != nil || wc.Status != uverbs.WCSuccess || wc.ID != 9 || wc.ByteLen != 18 ||
		string(ser.buf.Bytes()[:18]) != "after the refusals" {
		t.Fatalf("receive: %+v, %v, %q", wc, err, ser.buf.Bytes()[:18])
	}

	// Over: the QP is in the error state, and siw would complete nothing
	// posted now.
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if s := c.QP().State(); s != uverbs.QPStateError {
		t.Fatalf("QP in %v after the disconnect, want ERR", s)
	}
	err := c.QP().PostSend([]uverbs.SendWR{{ID: 6, Op: uverbs.OpSend, SGEs: sge}})
	if !errors.Is(err, uverbs.ErrQPState) || !strings.Contains(err.Error(), "siw completes nothing") {
		t.Errorf("send in ERR: %v, want ErrQPState saying why", err)
	}
	err = c.QP().PostRecv([]uverbs.RecvWR{{ID: 7, SGEs: sge}})
	if !errors.Is(err, uverbs.ErrQPState) || !strings.Contains(err.Error(), "siw completes nothing") {
		t.Errorf("receive in ERR: %v, want ErrQPState saying why", err)
	}
	// siw ignores every move out of ERROR (siw_qp.c siw_qp_modify), so
	// none is recorded.
	err = c.QP().Modify(&uverbs.QPAttr{State: uverbs.QPStateReset}, uverbs.QPAttrState)
	if !errors.Is(err, uverbs.ErrQPState) || !strings.Contains(err.Error(), "create a new QP") {
		t.Errorf("ERR -> RESET: %v, want ErrQPState saying to create a new QP", err)
	}
	if s := c.QP().State(); s != uverbs.QPStateError {
		t.Errorf("QP recorded in %v after the refused move, want ERR", s)
	}
}

// An RDMA READ on a connection whose side negotiated no READ depth
// (InitiatorDepth 0: siw's ORD 0) is refused by the kernel when it takes
// the request from the ring, which would leave the send queue stuck
// behind it (siw_qp.c siw_activate_tx_from_sq): the post reports the
// request posted, the QP goes to ERROR, and the READ comes back flushed.
func TestSiwReadWithoutORD(t *testing.T) {
	ends := testutil.SiwPair(t)
	ctx := testCtx(t)
	srv := netip.MustParseAddr(ends[0].Addr)
	p := DefaultConnParam()
	p.InitiatorDepth = 0
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), &Config{ConnParam: &p}, nil)
	cli, ser := newEndpoint(t, c, 4096), newEndpoint(t, sc, 4096)
	defer cli.close()
	defer ser.close()

	// Listener.Accept can return with the accepted QP recorded in RTR
	// where the kernel does not report the state (siw in 6.1), a separate
	// matter: record RTS as establishedIWARPLocked does (RTS to RTS
	// changes nothing in siw_qp.c siw_qp_nextstate_from_rts).
	if sc.QP().State() != uverbs.QPStateRTS {
		if err := sc.QP().Modify(&uverbs.QPAttr{State: uverbs.QPStateRTS}, uverbs.QPAttrState); err != nil {
			t.Fatal(err)
		}
	}
	err := sc.QP().PostSend([]uverbs.SendWR{{ID: 1, Op: uverbs.OpRead, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{ser.mr.SGE(0, 64)}, RemoteAddr: cli.mr.Addr(), RKey: cli.mr.RKey()}})
	var pe *uverbs.PostError
	if err == nil || errors.As(err, &pe) || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "moved to ERROR") ||
		!strings.Contains(err.Error(), "InitiatorDepth") {
		t.Fatalf("READ without ORD: %v; want a plain error matching EINVAL, saying the QP was moved to ERROR and naming InitiatorDepth", err)
	}
	if s := sc.QP().State(); s != uverbs.QPStateError {
		t.Errorf("QP in %v after the refused READ, want ERR", s)
	}
	if wc, err := waitWC(ctx, sc); err != nil || wc.ID != 1 || wc.Status != uverbs.WCFlushError {
		t.Fatalf("the refused READ's completion: %+v, %v; want a flush error for ID 1", wc, err)
	}
}

// siw completes a SEND once it is transmitted and an RDMA READ only when
// its response has arrived (siw_qp_tx.c siw_qp_sq_process, siw_qp_rx.c
// siw_proc_rresp), so a SEND posted after a large READ completes first.
// Its completion must not retire the READ: while the READ is in flight,
// the MR it writes into stays in use.
func TestSiwReadOutlivesLaterSend(t *testing.T) {
	ends := testutil.SiwPair(t)
	ctx := testCtx(t)
	srv := netip.MustParseAddr(ends[0].Addr)
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), nil, &Config{MaxInline: 32})
	const size = 1 << 20
	cli, ser := newEndpoint(t, c, size), newEndpoint(t, sc, size)
	defer cli.close()
	defer ser.close()

	copy(cli.buf.Bytes()[size-16:], "a later send")
	// The SEND completes before the READ when it is sent while the READ's
	// response is still coming; on a loaded machine the READ may win:
	// then the round is drained and tried again.
	for round := 0; ; round++ {
		if err := sc.QP().PostRecv([]uverbs.RecvWR{{ID: 9, SGEs: []uverbs.SGE{ser.mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
		err := c.QP().PostSend([]uverbs.SendWR{
			{ID: 1, Op: uverbs.OpRead, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{cli.mr.SGE(0, size-64)},
				RemoteAddr: ser.mr.Addr(), RKey: ser.mr.RKey()},
			{ID: 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled | uverbs.SendInline, SGEs: []uverbs.SGE{cli.mr.SGE(size-16, 12)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		wc, err := waitWC(ctx, c)
		if err != nil || wc.Status != uverbs.WCSuccess || (wc.ID != 1 && wc.ID != 2) {
			t.Fatalf("first completion %+v, %v", wc, err)
		}
		if wc.ID == 2 {
			break
		}
		if round == 20 {
			t.Fatalf("in 20 rounds the READ always completed before the SEND posted after it")
		}
		if wc, err := waitWC(ctx, c); err != nil || wc.ID != 2 || wc.Status != uverbs.WCSuccess {
			t.Fatalf("the SEND's completion: %+v, %v", wc, err)
		}
		if wc, err := waitWC(ctx, sc); err != nil || wc.ID != 9 || wc.Status != uverbs.WCSuccess {
			t.Fatalf("receive: %+v, %v", wc, err)
		}
	}
	if err := cli.mr.Close(); !errors.Is(err, uverbs.ErrBusy) {
		t.Fatalf("MR.Close of the READ's buffer while the READ is in flight: %v, want ErrBusy", err)
	}
	if wc, err := waitWC(ctx, c); err != nil || wc.ID != 1 || wc.Status != uverbs.WCSuccess {
		t.Fatalf("the READ's completion: %+v, %v", wc, err)
	}
	if wc, err := waitWC(ctx, sc); err != nil || wc.ID != 9 || wc.Status != uverbs.WCSuccess {
		t.Fatalf("receive: %+v, %v", wc, err)
	}
}

// When the peer closes, siw moves our QP to ERROR and flushes its rings
// itself (siw_cm.c siw_cm_work_handler calls siw_qp_llp_close); what is
// posted after that stays in the rings and the kernel never reads it.
// QP.Close completes it with flush errors, with the IDs and opcodes, in
// ring order, instead of waiting for the kernel, and the MR the requests
// named is free after.
func TestSiwCloseAfterPeerFlushed(t *testing.T) {
	ends := testutil.SiwPair(t)
	ctx := testCtx(t)
	srv := netip.MustParseAddr(ends[0].Addr)
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), nil, nil)
	cli := newEndpoint(t, c, 4096)
	defer cli.close()
	sge := func(i int) []uverbs.SGE { return []uverbs.SGE{cli.mr.SGE(i*64, 64)} }
	if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: sge(0)}}); err != nil {
		t.Fatal(err)
	}

	// The ID answers the peer's disconnect by moving our QP to ERR, after
	// which posting is refused; its lock holds that back until the posts
	// below are done, as a slower application would.
	c.id.mu.Lock()
	locked := true
	defer func() {
		if locked {
			c.id.mu.Unlock()
		}
	}()
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	// The kernel's flush of receive 1 says our QP is in ERROR.
	if wc, err := waitWC(ctx, c); err != nil || wc.ID != 1 || wc.Status != uverbs.WCFlushError {
		t.Fatalf("receive 1 after the peer closed: %+v, %v; want a flush error", wc, err)
	}
	if err := c.QP().PostRecv([]uverbs.RecvWR{{ID: 2, SGEs: sge(1)}, {ID: 3, SGEs: sge(2)}, {ID: 4, SGEs: sge(3)}}); err != nil {
		t.Fatal(err)
	}
	if err := c.QP().PostSend([]uverbs.SendWR{
		{ID: 5, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: sge(4)},
		{ID: 6, Op: uverbs.OpWrite, SGEs: sge(5), RemoteAddr: cli.mr.Addr(), RKey: cli.mr.RKey()},
	}); err != nil {
		t.Fatal(err)
	}
	c.id.mu.Unlock()
	locked = false

	if err := c.QP().Close(); err != nil {
		t.Fatalf("QP.Close with work the kernel left in the rings: %v", err)
	}
	var recvs, sends []uverbs.WC
	for {
		var wcs [8]uverbs.WC
		n, err := c.CQ().Poll(wcs[:])
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		for _, wc := range wcs[:n] {
			if wc.Opcode == uverbs.WCOpRecv {
				recvs = append(recvs, wc)
			} else {
				sends = append(sends, wc)
			}
		}
	}
	want := func(what string, got []uverbs.WC, ids []uint64, ops []uverbs.WCOpcode) {
		t.Helper()
		if len(got) != len(ids) {
			t.Fatalf("%s: %d completions %+v, want IDs %v", what, len(got), got, ids)
		}
		for i, wc := range got {
			if wc.ID != ids[i] || wc.Opcode != ops[i] || wc.Status != uverbs.WCFlushError {
				t.Errorf("%s completion %d: %+v; want ID %d, opcode %v, a flush error", what, i, wc, ids[i], ops[i])
			}
		}
	}
	want("receive", recvs, []uint64{2, 3, 4}, []uverbs.WCOpcode{uverbs.WCOpRecv, uverbs.WCOpRecv, uverbs.WCOpRecv})
	want("send", sends, []uint64{5, 6}, []uverbs.WCOpcode{uverbs.WCOpSend, uverbs.WCOpRDMAWrite})
	if err := cli.mr.Close(); err != nil {
		t.Errorf("MR.Close after QP.Close: %v", err)
	}
}

// On iWARP the private data limit is MPA's, not the IB CM messages': a
// request, an accept and a reject carry MaxIWARPPrivateData bytes as they
// were given, and one byte more is refused before anything is sent, with
// an error that names MPA and the limit.
func TestSiwPrivateDataLimit(t *testing.T) {
	ends := testutil.SiwPair(t)
	ctx := testCtx(t)
	srv := netip.MustParseAddr(ends[0].Addr)
	pattern := func(seed byte) []byte {
		b := make([]byte, MaxIWARPPrivateData)
		for i := range b {
			b[i] = seed + byte(i)
		}
		return b
	}
	req, acc := pattern(1), pattern(100)
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), &Config{PrivateData: acc}, &Config{PrivateData: req})
	if got := sc.PeerPrivateData(); !bytes.Equal(got, req) {
		t.Errorf("the server got %d bytes of request private data %x, want the %d sent", len(got), got, len(req))
	}
	if got := c.PeerPrivateData(); !bytes.Equal(got, acc) {
		t.Errorf("the client got %d bytes of accept private data %x, want the %d sent", len(got), got, len(acc))
	}

	l, err := Listen(ctx, netip.AddrPortFrom(srv, 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	long := make([]byte, MaxIWARPPrivateData+1)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), fmt.Sprintf("at most %d", MaxIWARPPrivateData)) ||
			!strings.Contains(err.Error(), "MPA") {
			t.Errorf("%s with %d bytes of private data: %v; want EINVAL naming MPA and the limit %d", what, len(long), err, MaxIWARPPrivateData)
		}
	}
	_, err = Dial(ctx, l.Addr().String(), &Config{PrivateData: long})
	refused("Dial", err)

	dialed := make(chan error, 1)
	go func() {
		c, err := Dial(ctx, l.Addr().String(), &Config{ConnectTimeout: 30 * time.Second})
		if c != nil {
			c.Close()
		}
		dialed <- err
	}()
	rc, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	refused("Accept", rc.Accept(ctx, long))
	refused("Reject", rc.Reject(long))
	rej := pattern(200)
	if err := rc.Reject(rej); err != nil {
		t.Fatal(err)
	}
	var re *RejectError
	if err := <-dialed; !errors.As(err, &re) || !bytes.Equal(re.PrivateData, rej) {
		t.Fatalf("the rejected Dial: %v; want a *RejectError with the %d bytes sent", err, len(rej))
	}
}
