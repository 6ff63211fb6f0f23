package uverbs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// mrUsers returns how many QPs and SRQs the MR counts among its users.
func mrUsers(mr *MR) int {
	mr.pd.usersMu.Lock()
	defer mr.pd.usersMu.Unlock()
	return len(mr.users)
}

// MR.Close finds the outstanding work of a QP that is neither the first
// nor the last of the PD's, and only that QP is among the MR's users; once
// the QP is closed it is among no MR's users and the MR closes.
func TestMRCloseRefusedByOneQPAmongMany(t *testing.T) {
	eachLabDevice(t, testMRCloseRefusedByOneQPAmongMany)
}

func testMRCloseRefusedByOneQPAmongMany(t *testing.T, e *verbsEnv) {
	_, shared := e.memory(8192)
	_, mine := e.memory(4096)
	cq := e.cq(256, nil)
	qps := make([]*QP, 7)
	for i := range qps {
		qps[i] = e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
		if err := qps[i].ToInit(InitAttr{Port: 1}); err != nil {
			t.Fatal(err)
		}
		if err := qps[i].PostRecv([]RecvWR{{ID: uint64(i), SGEs: []SGE{shared.SGE(64*i, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	mid := qps[3]
	if err := mid.PostRecv([]RecvWR{{ID: 100, SGEs: []SGE{mine.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if n := mrUsers(mine); n != 1 {
		t.Fatalf("the MR one QP posted on has %d users, want 1", n)
	}
	if n := mrUsers(shared); n != len(qps) {
		t.Fatalf("the MR every QP posted on has %d users, want %d", n, len(qps))
	}
	err := mine.Close()
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("QP %#x has 0 send and 2 receive work requests outstanding", mid.QPN())) {
		t.Fatalf("closing the MR of the middle QP's receive: %v, want ErrBusy naming QP %#x", err, mid.QPN())
	}
	for _, qp := range qps {
		if qp != mid && strings.Contains(err.Error(), fmt.Sprintf("QP %#x ", qp.QPN())) {
			t.Errorf("MR.Close names QP %#x, which has no work naming the MR: %v", qp.QPN(), err)
		}
	}
	// A refused Close leaves the MR usable: the next receive naming it
	// is still seen.
	if err := mid.PostRecv([]RecvWR{{ID: 101, SGEs: []SGE{mine.SGE(64, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := mine.Close(); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "3 receive work requests outstanding") {
		t.Fatalf("closing the MR again: %v, want ErrBusy naming the 3 receives", err)
	}
	if err := mid.Close(); err != nil { // drains its receives
		t.Fatal(err)
	}
	if n, m := mrUsers(mine), mrUsers(shared); n != 0 || m != len(qps)-1 {
		t.Fatalf("after QP.Close the MRs have %d and %d users, want 0 and %d", n, m, len(qps)-1)
	}
	mid.pd.usersMu.Lock()
	left := len(mid.mrs)
	mid.pd.usersMu.Unlock()
	if left != 0 {
		t.Fatalf("a closed QP still lists %d MRs", left)
	}
	if err := mine.Close(); err != nil {
		t.Fatalf("closing the MR after its QP was closed: %v", err)
	}
	if err := shared.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("closing the MR the other QPs' receives name: %v, want ErrBusy", err)
	}
}

// An lkey the kernel gives a new MR after the old one closed is tracked
// anew: a QP that posted with the old MR and posts with the new one is
// among the new MR's users, and its Close refuses.
func TestMRCloseTracksLKeyOfNewMR(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr1 := e.memory(8192)
	_, src := e.memory(4096)
	cq := e.cq(64, nil)
	a, b := e.rcPair(cq, defaultCap)
	if err := b.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{mr1.SGE(0, 256)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{src.SGE(0, 100)}}}); err != nil {
		t.Fatal(err)
	}
	pollN(t, cq, 2) // the receive is consumed: nothing names mr1 now
	lkey1 := mr1.LKey()
	if err := mr1.Close(); err != nil {
		t.Fatalf("closing an MR whose receive completed: %v", err)
	}
	if b.recvKeys.has(lkey1) {
		t.Fatalf("the closed MR's lkey %#x is still cached on the QP that used it", lkey1)
	}
	mr2, err := e.pd.RegMR(buf.Bytes(), allAccess)
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "MR", mr2.Close)
	t.Logf("lkey %#x, then %#x", lkey1, mr2.LKey())
	if err := b.PostRecv([]RecvWR{{ID: 3, SGEs: []SGE{mr2.SGE(0, 256)}}}); err != nil {
		t.Fatal(err)
	}
	err = mr2.Close()
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("QP %#x has 0 send and 1 receive work requests outstanding", b.QPN())) {
		t.Fatalf("closing the new MR under a receive naming it: %v, want ErrBusy naming QP %#x", err, b.QPN())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mr2.Close(); err != nil {
		t.Fatalf("closing the new MR after its QP was closed: %v", err)
	}
}
