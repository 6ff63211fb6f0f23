package rdmacm

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// TestSendWithInvalidate: a SEND with Invalidate naming the peer's MR, on
// each lab pair, and what each driver does with the key
// (docs/kernel-behaviour.md §7). The peer's MR is a
// user MR (REG_MR), the only kind a process registers.
//
//   - rxe refuses to invalidate a user MR (rxe_mr.c rxe_invalidate_mr takes
//     only IB_MR_TYPE_MEM_REG, a kernel consumer's fast-registration MR):
//     the responder completes the receive with IBV_WC_REM_INV_REQ_ERR and
//     moves its QP to ERROR (rxe_resp.c RESPST_ERR_INVALIDATE_RKEY), while
//     the sender's SEND completes with success.
//   - siw invalidates it (siw_qp_rx.c siw_rdmap_complete,
//     siw_invalidate_stag: any memory of the QP's PD): the receive completes
//     with success, and the key reaches the MR no more; a WRITE with it
//     ends the connection.
//
// Neither tells a process's CQ which key it invalidated: rxe because it
// failed, siw because siw_qp.c siw_rqe_complete writes SIW_WQE_REM_INVAL
// and inval_stag only into a kernel consumer's CQE. WCWithInvalidate and
// InvalidatedRKey reach kernel consumers (nvme-rdma) alone.
func TestSendWithInvalidate(t *testing.T) { eachLabPair(t, testSendWithInvalidate) }

func testSendWithInvalidate(t *testing.T) {
	ctx := testCtx(t)
	srv, _ := labAddrs(t)
	sc, c := connectPair(t, ctx, netip.AddrPortFrom(srv, 0).String(), nil, nil)
	cli, ser := newEndpoint(t, c, 4096), newEndpoint(t, sc, 4096)
	defer cli.close()
	defer ser.close()
	key := ser.mr.RKey()

	wait := func(conn *Conn, what string) uverbs.WC {
		t.Helper()
		wc, err := waitWC(ctx, conn)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return wc
	}
	// writeThenSend WRITEs 13 bytes at offset at of the server's MR with
	// key, then SENDs 8 bytes behind it into a receive of the server's
	// (placed in order: the receive's completion says whether the WRITE
	// was placed), and returns the server's receive completion.
	writeThenSend := func(at int, text string, id uint64) uverbs.WC {
		t.Helper()
		copy(cli.buf.Bytes()[100:], text)
		if err := sc.QP().PostRecv([]uverbs.RecvWR{{ID: id, SGEs: []uverbs.SGE{ser.mr.SGE(2048, 64)}}}); err != nil {
			t.Fatal(err)
		}
		if err := c.QP().PostSend([]uverbs.SendWR{
			{ID: id + 1, Op: uverbs.OpWrite, SGEs: []uverbs.SGE{cli.mr.SGE(100, len(text))}, RemoteAddr: ser.mr.Addr() + uint64(at), RKey: key},
			{ID: id + 2, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{cli.mr.SGE(0, 8)}},
		}); err != nil {
			t.Fatal(err)
		}
		return wait(sc, "the server's receive behind the WRITE")
	}

	// The key reaches the MR before.
	if wc := writeThenSend(200, "written first", 10); wc.Status != uverbs.WCSuccess || string(ser.buf.Bytes()[200:213]) != "written first" {
		t.Fatalf("a WRITE with the key before the SEND with Invalidate: the receive behind it %+v, placed %q", wc, ser.buf.Bytes()[200:213])
	}
	if wc := wait(c, "the SEND behind the WRITE"); wc.Status != uverbs.WCSuccess {
		t.Fatalf("the SEND behind the WRITE: %+v", wc)
	}

	if err := sc.QP().PostRecv([]uverbs.RecvWR{{ID: 1, SGEs: []uverbs.SGE{ser.mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	copy(cli.buf.Bytes(), "invalidate, please")
	if err := c.QP().PostSend([]uverbs.SendWR{{ID: 2, Op: uverbs.OpSendInv, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{cli.mr.SGE(0, 18)}, InvalidateRKey: key}}); err != nil {
		t.Fatal(err)
	}
	rwc := wait(sc, "the receive of the SEND with Invalidate")
	swc := wait(c, "the SEND with Invalidate")
	t.Logf("key %#x: receive %v (%+v), send %v", key, rwc.Status, rwc, swc.Status)
	if swc.ID != 2 || swc.Status != uverbs.WCSuccess || swc.Opcode != uverbs.WCOpSend {
		t.Fatalf("the SEND with Invalidate completed %+v, want success", swc)
	}
	if rwc.ID != 1 || rwc.Flags&uverbs.WCWithInvalidate != 0 || rwc.InvalidatedRKey != 0 {
		t.Fatalf("the receive completed %+v; no driver reports the key invalidated to a process's CQ", rwc)
	}
	// state is the QP's state as the kernel reports it, once it is ERR
	// or after 20 s: the driver may complete the receive before its QP
	// is seen in ERR (siw flushes while it moves the QP).
	state := func(q *uverbs.QP) uverbs.QPState {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			a, err := q.Query(uverbs.QPAttrState)
			if err != nil {
				t.Fatal(err)
			}
			if a.State == uverbs.QPStateError || time.Now().After(deadline) {
				return a.State
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	if !labIWARP(t) {
		// rxe: a user MR is not remotely invalidatable.
		if rwc.Status != uverbs.WCRemoteInvalidRequestError {
			t.Fatalf("rxe: the receive completed %v, want %v (rxe_invalidate_mr refuses a user MR)", rwc.Status, uverbs.WCRemoteInvalidRequestError)
		}
		if s := state(sc.QP()); s != uverbs.QPStateError {
			t.Fatalf("rxe: the receiver's QP is in %v, want ERR", s)
		}
		return
	}

	// siw: delivered, and the key invalidated.
	if rwc.Status != uverbs.WCSuccess || rwc.ByteLen != 18 || string(ser.buf.Bytes()[:18]) != "invalidate, please" {
		t.Fatalf("siw: the receive completed %+v with %q, want the 18 bytes", rwc, ser.buf.Bytes()[:18])
	}
	wc := writeThenSend(300, "written after", 20)
	if wc.ID != 20 || wc.Status != uverbs.WCFlushError || !bytes.Equal(ser.buf.Bytes()[300:313], make([]byte, 13)) {
		t.Fatalf("siw: a WRITE with the invalidated key: the receive behind it %+v (want flushed), placed %q (want nothing)", wc, ser.buf.Bytes()[300:313])
	}
	if s := state(sc.QP()); s != uverbs.QPStateError {
		t.Fatalf("siw: the receiver's QP is in %v after a WRITE with the invalidated key, want ERR", s)
	}
}
