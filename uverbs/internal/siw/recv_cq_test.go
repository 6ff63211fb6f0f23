package siw

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

func TestEncodeRQE(t *testing.T) {
	q, r := newRQ(t, 2, 3)
	for i := range r.buf {
		r.buf[i] = 0xee // stale bytes of an earlier lap
	}
	r.word(0).Store(0)
	r.word(1).Store(0)
	sges := []SGE{{Addr: 0x1000, Length: 10, LKey: 3}, {Addr: 0x2000, Length: 20, LKey: 4}}
	if err := q.Post(&RecvWR{ID: 77, SGEs: sges}); err != nil {
		t.Fatal(err)
	}
	if err := q.Post(&RecvWR{ID: 78}); err != nil {
		t.Fatal(err)
	}
	e := r.elem(0)
	v := (*abi.SiwRQE)(unsafe.Pointer(&e[0]))
	// The kernel takes an RQE only if its flags are exactly VALID
	// (siw_qp_rx.c siw_rqe_get); the opcode is the kernel's.
	if v.ID != 77 || v.Flags != abi.SIW_WQE_VALID || v.NumSGE != 2 || v.Opcode != 0 {
		t.Errorf("RQE id %d flags %#x num_sge %d opcode %d", v.ID, v.Flags, v.NumSGE, v.Opcode)
	}
	if le.Uint64(e) != 77 || le.Uint16(e[8:]) != 1 || e[10] != 2 || le.Uint64(e[16:]) != 0x1000 || le.Uint32(e[24:]) != 10 || le.Uint32(e[28:]) != 3 ||
		le.Uint64(e[32:]) != 0x2000 || le.Uint32(e[40:]) != 20 || le.Uint32(e[44:]) != 4 {
		t.Errorf("RQE bytes % x", e[:48])
	}
	if e := r.elem(1); le.Uint64(e) != 78 || le.Uint16(e[8:]) != 1 || e[10] != 0 {
		t.Errorf("zero-SGE RQE bytes % x", e[:16])
	}
	if !q.PendingUsesLKey(4) || q.PendingUsesLKey(5) || q.Pending() != 2 {
		t.Error("PendingUsesLKey / Pending on the posted receives")
	}
	// Full, then the kernel takes one, then the counters wrap.
	if err := q.Post(&RecvWR{ID: 79}); !errors.Is(err, ErrQueueFull) || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("post on a full RQ: %v", err)
	}
	for id := uint64(79); id < 90; id++ {
		got := r.take()
		if got == nil || le.Uint64(got) != id-2 {
			t.Fatalf("kernel took %v, want id %d", got, id-2)
		}
		if err := q.Post(&RecvWR{ID: id, SGEs: sges[:1]}); err != nil {
			t.Fatal(err)
		}
	}
	if q.PendingUsesLKey(4) || !q.PendingUsesLKey(3) {
		t.Error("PendingUsesLKey after wrapping")
	}
}

func TestRecvRefusals(t *testing.T) {
	q, r := newRQ(t, 2, 2)
	for _, c := range []struct {
		sges []SGE
		want error
		text string
	}{
		{[]SGE{{}, {}, {}}, ErrTooManySGEs, "3 SGEs, max_recv_sge 2"},
		{[]SGE{{Length: 0xffffffff}, {Length: 1}}, ErrLengthOverflow, "4294967296 bytes"},
	} {
		err := q.Post(&RecvWR{SGEs: c.sges})
		if !errors.Is(err, c.want) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, syscall.EINVAL) ||
			!strings.Contains(err.Error(), "siw0") || !strings.Contains(err.Error(), c.text) {
			t.Errorf("Post(%d SGEs) = %v, want %v naming siw0 and %q", len(c.sges), err, c.want, c.text)
		}
	}
	if r.word(0).Load() != 0 || r.word(1).Load() != 0 {
		t.Error("a refused receive was published")
	}
	if _, err := NewRQ(r.buf, 2, 7, "siw0"); err == nil {
		t.Error("NewRQ accepted max_sge 7")
	}
}

func TestCQPoll(t *testing.T) {
	q, r := newCQ(t, 4)
	wcs := make([]WC, 3)
	if n := q.Poll(wcs); n != 0 || q.Ready() {
		t.Fatalf("Poll on an empty CQ = %d", n)
	}
	in := []cqe{
		{id: 1, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_SEND, status: abi.SIW_WC_SUCCESS, bytes: 100, qpID: 0x100000007},
		{id: 2, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_RECEIVE, status: abi.SIW_WC_SUCCESS, bytes: 64, qpID: 8},
		{id: 3, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_READ, status: abi.SIW_WC_WR_FLUSH_ERR, qpID: 9},
		{id: 4, flags: abi.SIW_WQE_VALID | abi.SIW_WQE_REM_INVAL, opcode: abi.SIW_OP_RECEIVE, bytes: 1, inval: 0xabcd, qpID: 9},
		{id: 5, flags: abi.SIW_WQE_VALID, opcode: abi.SIW_OP_WRITE, status: abi.SIW_WC_REM_ACCESS_ERR, qpID: 9},
		{id: 6, flags: abi.SIW_WQE_VALID, opcode: 200, status: 42, qpID: 9},
	}
	want := []WC{
		{ID: 1, Status: WCSuccess, Opcode: WCOpSend, ByteLen: 100, QPN: 7},
		{ID: 2, Status: WCSuccess, Opcode: WCOpRecv, ByteLen: 64, QPN: 8},
		{ID: 3, Status: WCFlushError, Opcode: WCOpRDMARead, VendorErr: abi.SIW_WC_WR_FLUSH_ERR, QPN: 9},
		{ID: 4, Status: WCSuccess, Opcode: WCOpRecv, ByteLen: 1, QPN: 9, Flags: WCWithInvalidate, InvalidatedRKey: 0xabcd},
		{ID: 5, Status: WCRemoteAccessError, Opcode: WCOpRDMAWrite, VendorErr: abi.SIW_WC_REM_ACCESS_ERR, QPN: 9},
		{ID: 6, Status: WCGeneralError, Opcode: WCOpUnknown, VendorErr: 42, QPN: 9},
	}
	var got []WC
	next := 0
	for len(got) < len(want) {
		// The kernel writes what fits (a CQE whose flags are still set is
		// not overwritten), then the user polls a few.
		for next < len(in) && r.produce(in[next]) {
			next++
		}
		n := q.Poll(wcs[:2])
		if n == 0 {
			t.Fatal("Poll found nothing on a CQ the kernel wrote to")
		}
		got = append(got, wcs[:n]...)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("completion %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for i := uint32(0); i < 4; i++ {
		if r.word(i).Load() != 0 {
			t.Errorf("CQE %d still has flags after Poll", i)
		}
	}
	if q.Poll(wcs) != 0 {
		t.Error("Poll found a completion twice")
	}
}

func TestCQArm(t *testing.T) {
	r := newFakeRing(t, 2, litCQE, 8)
	ctrl := (*uint32)(unsafe.Pointer(&r.buf[2*litCQE]))
	*ctrl = 0xdead // whatever the page held: NewCQ disarms, as libsiw does
	q, err := NewCQ(r.buf, 2)
	if err != nil {
		t.Fatal(err)
	}
	if *ctrl != abi.SIW_NOTIFY_NOT || q.Armed() != 0 {
		t.Fatalf("control word %#x after NewCQ", *ctrl)
	}
	q.Arm(false)
	if *ctrl != abi.SIW_NOTIFY_SOLICITED|abi.SIW_NOTIFY_NEXT_COMPLETION {
		t.Errorf("Arm(false) wrote %#x", *ctrl)
	}
	q.Arm(true)
	if *ctrl != abi.SIW_NOTIFY_SOLICITED || q.Armed() != abi.SIW_NOTIFY_SOLICITED {
		t.Errorf("Arm(true) wrote %#x", *ctrl)
	}
	if r.word(0).Load() != 0 || r.word(1).Load() != 0 {
		t.Error("arming touched the CQEs")
	}
	if _, err := NewCQ(r.buf[:2*litCQE+7], 2); err == nil {
		t.Error("NewCQ accepted a mapping without room for the control word")
	}
}

func TestDecodeCQEMatchesGenerated(t *testing.T) {
	b := make([]byte, litCQE)
	c := (*abi.SiwCQE)(unsafe.Pointer(&b[0]))
	*c = abi.SiwCQE{ID: 0x1122334455667788, Flags: abi.SIW_WQE_VALID, Opcode: abi.SIW_OP_SEND_REMOTE_INV, Status: abi.SIW_WC_LOC_LEN_ERR, Bytes: 5, BaseQP: 0xffff_0000_0000_0031}
	var wc WC
	DecodeCQE(b, &wc)
	if wc != (WC{ID: 0x1122334455667788, Status: WCLocalLengthError, Opcode: WCOpSend, VendorErr: abi.SIW_WC_LOC_LEN_ERR, ByteLen: 5, QPN: 0x31}) {
		t.Errorf("DecodeCQE = %+v", wc)
	}
}
