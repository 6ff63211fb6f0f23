package siw

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// fakeDevice counts the doorbells (POST_SEND) a QP rings, fails them
// with dbErr, and records the states MODIFY_QP asks for.
type fakeDevice struct {
	doorbells int
	dbErr     error
	modifies  []uint8
	dbs       provider.Doorbells
}

func (d *fakeDevice) Write(op string, cmd uint32, in, out []byte) error {
	switch cmd {
	case abi.IB_USER_VERBS_CMD_POST_SEND:
		d.doorbells++
	case abi.IB_USER_VERBS_CMD_MODIFY_QP:
		m := (*abi.UverbsModifyQP)(unsafe.Pointer(&in[0]))
		if m.AttrMask == 1 {
			d.modifies = append(d.modifies, m.QPState)
		}
	}
	return nil
}

func (d *fakeDevice) Mmap(op string, off int64, n int, what string) (*sys.Mapping, error) {
	return nil, errors.New("not in this test")
}

func (d *fakeDevice) Name() string { return "siw0" }

func (d *fakeDevice) Doorbells() *provider.Doorbells { return &d.dbs }

func (d *fakeDevice) Doorbell(op string, cmd unsafe.Pointer, n uintptr) error {
	if (*provider.PostSend)(cmd).Command() == abi.IB_USER_VERBS_CMD_POST_SEND && n == provider.PostSendLen {
		d.doorbells++
	}
	return d.dbErr
}

const testQPN = 7

// testQP builds a QP and its CQ over fake rings, as CreateQP and
// CreateCQ would over the kernel's.
func testQP(t *testing.T, srq *srqState) (*qpState, *cqState, *fakeRing, *fakeRing, *fakeRing, *fakeDevice) {
	t.Helper()
	dev := &fakeDevice{}
	sq, sr := newSQ(t, 4, rcLimits)
	rq, rr := newRQ(t, 4, 2)
	cq, cr := newCQ(t, 16)
	db, err := dev.Doorbells().New(1, "siw test doorbells")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.dbs.Close)
	q := &qpState{dev: dev, db: db, qpn: testQPN, sq: sq, rq: rq, sends: make([]sendRecord, 8), sendMask: 7}
	c := &cqState{q: cq, qps: map[uint32]*qpState{}}
	c.Attach(q, srq)
	return q, c, sr, rr, cr, dev
}

func poll(t *testing.T, c *cqState, want int) []rdma.WC {
	t.Helper()
	wcs := make([]rdma.WC, 8)
	n, err := c.Poll(wcs)
	if n != want || err != nil {
		t.Fatalf("polled %d completions (%v), want %d", n, err, want)
	}
	return wcs[:n]
}

// Sends are outstanding until a completion retires them in order: an
// unsignaled success has none of its own, so the signaled completion after
// it retires it; a flush retires the request it names.
func TestOutstandingSends(t *testing.T) {
	q, c, sr, _, cr, dev := testQP(t, nil)
	buf := make([]byte, 64)
	sge := []SGE{{Addr: addrOf(buf), Length: 8, LKey: 0x55}}
	wrs := []SendWR{
		{ID: 1, Op: OpSend, SGEs: sge},
		{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: sge},
		{ID: 3, Op: OpSend, SGEs: sge},
	}
	if i, err := q.PostSend(wrs, false); err != nil {
		t.Fatal(i, err)
	}
	if dev.doorbells != 1 {
		t.Errorf("%d doorbells for a post to an idle ring, want 1", dev.doorbells)
	}
	if s, _ := q.Outstanding(); s != 3 {
		t.Fatalf("%d sends outstanding, want 3", s)
	}
	if used, _, _ := q.UsesLKey(0x55); !used {
		t.Error("sends in the ring name lkey 0x55, UsesLKey says no")
	}
	for range 3 {
		sr.take()
	}
	if used, _, _ := q.UsesLKey(0x99); !used {
		t.Error("sends the kernel took are outstanding, UsesLKey says no MR is in use")
	}
	cr.produce(cqe{id: 2, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_SEND, qpID: testQPN})
	poll(t, c, 1)
	if s, _ := q.Outstanding(); s != 1 {
		t.Fatalf("after the completion of send 2, %d sends outstanding, want 1 (send 3)", s)
	}
	cr.produce(cqe{id: 3, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_SEND, status: abi.SIW_WC_WR_FLUSH_ERR, qpID: testQPN})
	if wc := poll(t, c, 1)[0]; wc.Status != WCFlushError || wc.ID != 3 {
		t.Fatalf("flush completion %+v", wc)
	}
	if s, _ := q.Outstanding(); s != 0 {
		t.Fatalf("after the flush of send 3, %d sends outstanding, want 0", s)
	}
	if used, _, _ := q.UsesLKey(0x55); used {
		t.Error("nothing outstanding, UsesLKey says lkey 0x55 is in use")
	}
	// A completion of another QP (closed, say) is not counted.
	cr.produce(cqe{id: 9, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_SEND, qpID: testQPN + 1})
	poll(t, c, 1)
}

// After DESTROY_QP, FlushRings completes every element the kernel left
// VALID, oldest first, with its ID and opcode and a flush status; the
// sends the kernel took without a completion (an unsignaled success) are
// no longer counted, and nothing is outstanding after.
func TestFlushRings(t *testing.T) {
	q, c, sr, rr, cr, _ := testQP(t, nil)
	buf := make([]byte, 64)
	sge := []SGE{{Addr: addrOf(buf), Length: 8, LKey: 0x55}}
	if _, err := q.PostSend([]SendWR{
		{ID: 1, Op: OpSend, SGEs: sge},
		{ID: 2, Op: OpWrite, Flags: SendSignaled, SGEs: sge, RemoteAddr: 0x1000, RKey: 3},
		{ID: 3, Op: OpRead, Flags: SendSignaled, SGEs: sge, RemoteAddr: 0x1000, RKey: 3},
	}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := q.PostRecv([]RecvWR{{ID: 10}, {ID: 11}, {ID: 12}}); err != nil {
		t.Fatal(err)
	}
	sr.take() // send 1 succeeded unsignaled: no completion
	rr.take() // receive 10 completed
	cr.produce(cqe{id: 10, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_RECEIVE, qpID: testQPN})
	poll(t, c, 1)

	var send, recv []rdma.WC
	q.FlushRings(&send, &recv)
	want := []struct {
		id uint64
		op WCOpcode
	}{{2, WCOpRDMAWrite}, {3, WCOpRDMARead}}
	if len(send) != len(want) {
		t.Fatalf("%d send completions, want %d: %+v", len(send), len(want), send)
	}
	for i, w := range want {
		if g := send[i]; g.ID != w.id || g.Opcode != w.op || g.Status != WCFlushError || g.QPN != testQPN || g.VendorErr != abi.SIW_WC_WR_FLUSH_ERR {
			t.Errorf("send completion %d: %+v, want ID %d opcode %v flushed", i, g, w.id, w.op)
		}
	}
	if len(recv) != 2 || recv[0].ID != 11 || recv[1].ID != 12 || recv[0].Opcode != WCOpRecv || recv[1].Status != WCFlushError {
		t.Errorf("receive completions %+v, want 11 and 12 flushed", recv)
	}
	if s, r := q.Outstanding(); s != 0 || r != 0 {
		t.Errorf("after FlushRings %d sends and %d receives outstanding, want none", s, r)
	}
	if used, _, _ := q.UsesLKey(0x55); used {
		t.Error("after FlushRings UsesLKey says lkey 0x55 is in use")
	}
	if sr.take() != nil || rr.take() != nil {
		t.Error("FlushRings left an element VALID")
	}
}

// A signaled send the kernel took whose completion it dropped (siw_qp.c
// siw_sqe_complete refuses a full CQ) stays outstanding after FlushRings,
// so that QP.Close reports it lost; an unsignaled one taken beside it is a
// success without a completion and is forgotten, and so is one after it.
func TestFlushRingsKeepsLostSignaledSends(t *testing.T) {
	q, _, sr, _, _, _ := testQP(t, nil)
	buf := make([]byte, 64)
	sge := []SGE{{Addr: addrOf(buf), Length: 8, LKey: 0x55}}
	if _, err := q.PostSend([]SendWR{
		{ID: 1, Op: OpSend, SGEs: sge},
		{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: sge},
		{ID: 3, Op: OpSend, SGEs: sge},
		{ID: 4, Op: OpSend, Flags: SendSignaled, SGEs: sge},
	}, false); err != nil {
		t.Fatal(err)
	}
	for range 3 { // sends 1 to 3 taken; 2's completion dropped (no CQE)
		sr.take()
	}
	var send, recv []rdma.WC
	q.FlushRings(&send, &recv)
	if len(send) != 1 || send[0].ID != 4 || send[0].Status != WCFlushError {
		t.Fatalf("send completions %+v, want send 4 flushed", send)
	}
	if s, r := q.Outstanding(); s != 1 || r != 0 {
		t.Errorf("after FlushRings %d sends and %d receives outstanding, want 1 send (2, its completion lost) and no receive", s, r)
	}
}

// The ring's room and the record of sends both bound a post; a refused
// request leaves nothing posted.
func TestPostSendRefusals(t *testing.T) {
	q, _, _, _, _, _ := testQP(t, nil)
	wrs := make([]SendWR, 5)
	for i := range wrs {
		wrs[i] = SendWR{ID: uint64(i), Op: OpWrite}
	}
	if i, err := q.PostSend(wrs, false); !errors.Is(err, ErrQueueFull) || i != 4 {
		t.Fatalf("5 sends into a ring of 4: %d, %v; want ErrQueueFull at 4", i, err)
	}
	if i, err := q.PostSend([]SendWR{{ID: 1, Op: OpWrite}, {ID: 2, Op: OpSendImm}}, true); !errors.Is(err, ErrNoImmediate) || i != 1 ||
		!errors.Is(err, rdma.ErrNotSupported) || !errors.Is(err, rdma.ErrInvalidWR) {
		t.Fatalf("SEND_WITH_IMM: %d, %v; want ErrNoImmediate at 1, matching the provider errors", i, err)
	}
	if s, _ := q.Outstanding(); s != 0 {
		t.Fatalf("%d sends outstanding after refused posts, want 0", s)
	}
}

// Receives are outstanding until their completion, success or flush; an
// SRQ's are counted on the SRQ, from the completions of its QPs.
func TestOutstandingRecvs(t *testing.T) {
	q, c, _, rr, cr, _ := testQP(t, nil)
	if _, err := q.PostRecv([]RecvWR{{ID: 1}, {ID: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, r := q.Outstanding(); r != 2 {
		t.Fatalf("%d receives outstanding, want 2", r)
	}
	rr.take()
	cr.produce(cqe{id: 1, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_RECEIVE, qpID: testQPN})
	poll(t, c, 1)
	if _, r := q.Outstanding(); r != 1 {
		t.Fatalf("%d receives outstanding, want 1", r)
	}

	srqRing, _ := newRQ(t, 4, 1)
	srq := &srqState{rq: srqRing, maxWR: 4}
	q2, c2, _, _, cr2, _ := testQP(t, srq)
	q2.rq = nil
	if _, err := srq.PostRecv([]RecvWR{{ID: 5}, {ID: 6}}); err != nil {
		t.Fatal(err)
	}
	cr2.produce(cqe{id: 5, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_RECEIVE, qpID: testQPN})
	poll(t, c2, 1)
	if n, _ := srq.Posted(0); n != 1 {
		t.Fatalf("SRQ: %d receives outstanding, want 1", n)
	}
}

// Posting, the doorbell and polling allocate nothing.
func TestPostPollAllocs(t *testing.T) {
	q, c, sr, rr, cr, dev := testQP(t, nil)
	buf := make([]byte, 64)
	send := []SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{{Addr: addrOf(buf), Length: 8, LKey: 1}}}}
	recv := []RecvWR{{ID: 2, SGEs: []SGE{{Addr: addrOf(buf), Length: 64, LKey: 1}}}}
	wcs := make([]rdma.WC, 2)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := q.PostSend(send, true); err != nil {
			t.Fatal(err)
		}
		if _, err := q.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		sr.drop()
		rr.drop()
		cr.produce(cqe{id: 1, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_SEND, qpID: testQPN})
		cr.produce(cqe{id: 2, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_RECEIVE, qpID: testQPN})
		if n, _ := c.Poll(wcs); n != 2 {
			t.Fatalf("polled %d", n)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per post, doorbell and poll, want 0", allocs)
	}
	if dev.doorbells < 100 {
		t.Errorf("%d doorbells for 100 posts to an idle ring", dev.doorbells)
	}
	if s, r := q.Outstanding(); s != 0 || r != 0 {
		t.Errorf("outstanding %d sends, %d receives after every completion", s, r)
	}
}

// A READ completes when its response arrives, after a later SEND that
// completed once transmitted (siw_qp_rx.c siw_proc_rresp, siw_qp_tx.c
// siw_qp_sq_process): the SEND's completion does not retire the READ,
// whose buffer the kernel still writes; the READ's completion retires it
// and the sends before it.
func TestReadCompletesAfterLaterSend(t *testing.T) {
	q, c, sr, _, cr, _ := testQP(t, nil)
	buf := make([]byte, 64)
	sge := func(lkey uint32) []SGE { return []SGE{{Addr: addrOf(buf), Length: 8, LKey: lkey}} }
	wrs := []SendWR{
		{ID: 1, Op: OpRead, Flags: SendSignaled, SGEs: sge(0x11), RemoteAddr: 0x1000, RKey: 5},
		{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: sge(0x22)},
		{ID: 3, Op: OpSend, SGEs: sge(0x22)},
	}
	if i, err := q.PostSend(wrs, false); err != nil {
		t.Fatal(i, err)
	}
	for range 3 {
		sr.take()
	}
	cr.produce(cqe{id: 2, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_SEND, qpID: testQPN})
	poll(t, c, 1)
	if s, _ := q.Outstanding(); s != 3 {
		t.Fatalf("after the SEND's completion, before the READ's, %d sends outstanding, want 3 (the READ holds the rest)", s)
	}
	if used, _, _ := q.UsesLKey(0x11); !used {
		t.Fatal("the READ awaits its response, UsesLKey says its MR is free")
	}
	cr.produce(cqe{id: 1, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_READ, qpID: testQPN})
	poll(t, c, 1)
	if s, _ := q.Outstanding(); s != 1 {
		t.Fatalf("after the READ's completion, %d sends outstanding, want 1 (the unsignaled SEND)", s)
	}
	// A flush of a later READ retires the unsignaled SEND before it.
	if i, err := q.PostSend([]SendWR{{ID: 4, Op: OpRead, SGEs: sge(0x11), RemoteAddr: 0x1000, RKey: 5}}, false); err != nil {
		t.Fatal(i, err)
	}
	cr.produce(cqe{id: 4, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_READ, status: abi.SIW_WC_WR_FLUSH_ERR, qpID: testQPN})
	poll(t, c, 1)
	if s, _ := q.Outstanding(); s != 0 {
		t.Fatalf("after the flush of the last READ, %d sends outstanding, want 0", s)
	}
}

// A refused doorbell comes after every request was written: PostSend
// reports them all posted. On EINVAL (siw_activate_tx_from_sq refused the
// element it took, which stays VALID and would block the ring) the QP is
// moved to ERROR, which flushes everything, and the error says so.
func TestRefusedDoorbell(t *testing.T) {
	buf := make([]byte, 64)
	wrs := []SendWR{
		{ID: 1, Op: OpRead, Flags: SendSignaled, SGEs: []SGE{{Addr: addrOf(buf), Length: 8, LKey: 1}}, RemoteAddr: 0x1000, RKey: 5},
		{ID: 2, Op: OpSend, Flags: SendSignaled},
	}
	for _, c := range []struct {
		errno syscall.Errno
		moved bool
	}{{syscall.EINVAL, true}, {syscall.ENOTCONN, false}} {
		q, _, _, _, _, dev := testQP(t, nil)
		dev.dbErr = c.errno
		i, err := q.PostSend(wrs, false)
		if i != len(wrs) || !errors.Is(err, c.errno) || errors.Is(err, ErrMovedToError) != c.moved {
			t.Fatalf("doorbell refused with %v: PostSend %d, %v; want %d posted, matching %v, moved to ERROR %v", c.errno, i, err, len(wrs), c.errno, c.moved)
		}
		if s, _ := q.Outstanding(); s != len(wrs) {
			t.Errorf("%v: %d sends outstanding, want %d", c.errno, s, len(wrs))
		}
		if want := map[bool]int{true: 1, false: 0}[c.moved]; len(dev.modifies) != want || want == 1 && dev.modifies[0] != 6 {
			t.Errorf("%v: MODIFY_QP states %v, want %d move to ERROR (6)", c.errno, dev.modifies, want)
		}
		t.Log(err)
	}
}

// When the record of sends is full of unsignaled sends the kernel took,
// the ring is empty: the refusal says to signal a send at least every
// send-queue-size requests, not that the ring has no room.
func TestUnsignaledRecordFull(t *testing.T) {
	q, _, sr, _, _, _ := testQP(t, nil)
	wrs := make([]SendWR, 4)
	for i := range wrs {
		wrs[i] = SendWR{ID: uint64(i), Op: OpWrite}
	}
	for range 2 {
		if i, err := q.PostSend(wrs, false); err != nil {
			t.Fatal(i, err)
		}
		for range 4 {
			sr.take()
		}
	}
	i, err := q.PostSend(wrs[:1], false)
	if i != 0 || !errors.Is(err, ErrQueueFull) || !errors.Is(err, rdma.ErrQueueFull) ||
		!strings.Contains(err.Error(), "signal a send at least every 4 requests") || !strings.Contains(err.Error(), "siw0") {
		t.Fatalf("a ninth unsignaled send: %d, %v; want ErrQueueFull at 0 saying to signal a send every 4 requests", i, err)
	}
}

// The key the kernel leaves when it could not prepare a mapping is refused
// before any mmap, with an error that says what to do.
func TestInvalidMapKey(t *testing.T) {
	_, err := mapKey(&fakeDevice{}, "create_qp", abi.SIW_INVAL_UOBJ_KEY, 4096, "siw send ring")
	if !errors.Is(err, syscall.ENOMEM) || !strings.Contains(err.Error(), "siw0") || !strings.Contains(err.Error(), "send ring") ||
		!strings.Contains(err.Error(), "try again") {
		t.Fatalf("SIW_INVAL_UOBJ_KEY: %v; want ENOMEM naming the device and the ring and saying what to do", err)
	}
}
