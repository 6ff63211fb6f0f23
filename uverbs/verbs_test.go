package uverbs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// Tests that need no RDMA device.

func TestSGELayout(t *testing.T) {
	// []SGE is reinterpreted as []rxe.SGE and handed to the kernel's
	// layout (struct rxe_sge / ibv_sge: addr@0, length@8, lkey@12).
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"size", unsafe.Sizeof(SGE{}), 16},
		{"Addr", unsafe.Offsetof(SGE{}.Addr), 0},
		{"Length", unsafe.Offsetof(SGE{}.Length), 8},
		{"LKey", unsafe.Offsetof(SGE{}.LKey), 12},
		{"rxe size", unsafe.Sizeof(rxe.SGE{}), 16},
		{"rxe Length", unsafe.Offsetof(rxe.SGE{}.Length), 8},
		{"rxe LKey", unsafe.Offsetof(rxe.SGE{}.LKey), 12},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestWCStatusNames(t *testing.T) {
	cases := []struct {
		s         WCStatus
		str, name string
	}{
		{WCSuccess, "success", "IBV_WC_SUCCESS"},
		{WCLocalLengthError, "local length error", "IBV_WC_LOC_LEN_ERR"},
		{WCLocalProtectionError, "local protection error", "IBV_WC_LOC_PROT_ERR"},
		{WCFlushError, "Work Request Flushed Error", "IBV_WC_WR_FLUSH_ERR"},
		{WCRemoteInvalidRequestError, "remote invalid request error", "IBV_WC_REM_INV_REQ_ERR"},
		{WCRemoteAccessError, "remote access error", "IBV_WC_REM_ACCESS_ERR"},
		{WCRetryExceededError, "transport retry counter exceeded", "IBV_WC_RETRY_EXC_ERR"},
		{WCRNRRetryExceededError, "RNR retry counter exceeded", "IBV_WC_RNR_RETRY_EXC_ERR"},
		{WCRemoteInvalidRDRequestError, "remote invalid RD request", "IBV_WC_REM_INV_RD_REQ_ERR"},
		{WCRemoteAbortError, "aborted error", "IBV_WC_REM_ABORT_ERR"},
		{WCGeneralError, "general error", "IBV_WC_GENERAL_ERR"},
		{WCTMRendezvousIncomplete, "TM software rendezvous", "IBV_WC_TM_RNDV_INCOMPLETE"},
		{99, "unknown", "IBV_WC_STATUS_99"},
	}
	for _, c := range cases {
		if got := c.s.String(); got != c.str {
			t.Errorf("%d.String() = %q, want %q", c.s, got, c.str)
		}
		if got := c.s.Name(); got != c.name {
			t.Errorf("%d.Name() = %q, want %q", c.s, got, c.name)
		}
		if got := fmt.Sprintf("%#v", c.s); got != c.name {
			t.Errorf("%%#v of %d = %q, want %q", c.s, got, c.name)
		}
	}
	// Every status of the kernel's enum ib_wc_status has a text.
	for s := WCSuccess; s <= WCTMRendezvousIncomplete; s++ {
		if s.String() == "unknown" || s.String() == "" {
			t.Errorf("status %d has no text", s)
		}
	}
}

func TestWCStatusErr(t *testing.T) {
	if WCSuccess.Err() != nil {
		t.Fatal("WCSuccess.Err() is not nil")
	}
	err := WCFlushError.Err()
	if !errors.Is(err, ErrFlushed) {
		t.Errorf("WCFlushError.Err() = %v does not match ErrFlushed", err)
	}
	if errors.Is(WCRemoteAccessError.Err(), ErrFlushed) {
		t.Error("WCRemoteAccessError matches ErrFlushed")
	}
	var we WCError
	if !errors.As(WCRemoteAccessError.Err(), &we) || we.Status != WCRemoteAccessError {
		t.Errorf("errors.As WCError: %+v", we)
	}
	if s := WCRemoteAccessError.Err().Error(); !strings.Contains(s, "remote access error") || !strings.Contains(s, "IBV_WC_REM_ACCESS_ERR") {
		t.Errorf("message %q", s)
	}
	var sink error
	if n := testing.AllocsPerRun(100, func() { sink = WCRemoteAccessError.Err() }); n != 0 {
		t.Errorf("WCStatus.Err allocates %v times", n)
	}
	_ = sink
}

func TestWCFromRXE(t *testing.T) {
	w := rxe.WC{ID: 7, Status: 5, Opcode: 129, VendorErr: 1, ByteLen: 64, ImmData: 0xabcd, InvalidatedRKey: 3,
		QPNum: 0x11, SrcQP: 0x12, Flags: rxe.WCGRH | rxe.WCWithImm, PKeyIndex: 2, SLID: 9, SL: 1, DLIDPathBits: 4, PortNum: 1}
	var wcs [1]WC
	rxe.WCs(wcs[:])[0] = w
	wc := wcs[0]
	want := WC{ID: 7, Status: WCFlushError, Opcode: WCOpRecvRDMAWithImm, VendorErr: 1, ByteLen: 64, Imm: 0xabcd,
		InvalidatedRKey: 3, QPN: 0x11, SrcQP: 0x12, Flags: WCGRH | WCWithImm, PKeyIndex: 2, SLID: 9, SL: 1, DLIDPathBits: 4, Port: 1}
	if wc != want {
		t.Errorf("rxe.WCs:\n got %+v\nwant %+v", wc, want)
	}
	if !wc.Opcode.IsRecv() || WCOpRDMARead.IsRecv() {
		t.Error("IsRecv")
	}
	if s := (WCGRH | WCWithImm).String(); s != "GRH|WITH_IMM" {
		t.Errorf("flags %q", s)
	}
	if s := WCOpRecvRDMAWithImm.String(); s != "RECV_RDMA_WITH_IMM" {
		t.Errorf("opcode %q", s)
	}
}

func TestModifyQPEncoding(t *testing.T) {
	gid := GID{0: 0xfe, 1: 0x80, 15: 1}
	a := QPAttr{
		State: QPStateRTR, CurState: QPStateInit, PathMTU: MTU1024, QKey: 0x11111111, RQPSN: 0x123, SQPSN: 0x456,
		DestQPN: 0x789, Access: AccessRemoteRead | AccessRemoteWrite, PKeyIndex: 1, Port: 1,
		AH:          AHAttr{DGID: gid, FlowLabel: 5, SGIDIndex: 3, HopLimit: 64, TrafficClass: 7, SL: 2, Port: 1},
		MaxRDAtomic: 4, MaxDestRDAtomic: 8, MinRNRTimer: 12, Timeout: 14, RetryCount: 7, RNRRetry: 6,
	}
	mask := QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN | QPAttrMaxDestRDAtomic | QPAttrMinRNRTimer
	var cmd abi.UverbsModifyQP
	a.encode(&cmd, mask)
	b := bytesOf(&cmd)
	if len(b) != 112 {
		t.Fatalf("ib_uverbs_modify_qp is %d bytes, want 112", len(b))
	}
	le32 := func(off int) uint32 { return *(*uint32)(unsafe.Pointer(&b[off])) }
	// Offsets from docs/abi.md §3.14 and §7 (ib_uverbs_modify_qp, ib_uverbs_qp_dest).
	checks := []struct {
		what      string
		got, want uint32
	}{
		{"dgid[0]", uint32(b[0]), 0xfe},
		{"dgid[15]", uint32(b[15]), 1},
		{"flow_label", le32(16), 5},
		{"sgid_index", uint32(b[24]), 3},
		{"hop_limit", uint32(b[25]), 64},
		{"traffic_class", uint32(b[26]), 7},
		{"sl", uint32(b[27]), 2},
		{"is_global", uint32(b[30]), 1},
		{"port_num(dest)", uint32(b[31]), 1},
		{"attr_mask", le32(68), uint32(mask)},
		{"qkey", le32(72), 0x11111111},
		{"rq_psn", le32(76), 0x123},
		{"sq_psn", le32(80), 0x456},
		{"dest_qp_num", le32(84), 0x789},
		{"qp_access_flags", le32(88), 6},
		{"qp_state", uint32(b[96]), 2},
		{"cur_qp_state", uint32(b[97]), 1},
		{"path_mtu", uint32(b[98]), 3},
		{"max_rd_atomic", uint32(b[101]), 4},
		{"max_dest_rd_atomic", uint32(b[102]), 8},
		{"min_rnr_timer", uint32(b[103]), 12},
		{"port_num", uint32(b[104]), 1},
		{"timeout", uint32(b[105]), 14},
		{"retry_cnt", uint32(b[106]), 7},
		{"rnr_retry", uint32(b[107]), 6},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.what, c.got, c.want)
		}
	}
	// A zero DGID means no GRH.
	var none abi.UverbsModifyQP
	(&QPAttr{State: QPStateInit}).encode(&none, QPAttrState)
	if none.Dest.IsGlobal != 0 {
		t.Error("is_global set without a DGID")
	}
	if s := mask.String(); s != "STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN" {
		t.Errorf("mask string %q", s)
	}
}

func TestAHAttrEncoding(t *testing.T) {
	a := AHAttr{DGID: GID{15: 9}, FlowLabel: 1, SGIDIndex: 2, HopLimit: 3, TrafficClass: 4, SL: 5, Port: 1, DLID: 6, SrcPathBits: 7, StaticRate: 8}
	r := a.toAHAttr()
	b := bytesOf(&r)
	if len(b) != 32 {
		t.Fatalf("ib_uverbs_ah_attr is %d bytes", len(b))
	}
	// docs/abi.md §3.14: grh{dgid@0, flow_label@16, sgid_index@20,
	// hop_limit@21, traffic_class@22}, dlid@24, sl@26, src_path_bits@27,
	// static_rate@28, is_global@29, port_num@30.
	want := map[int]byte{15: 9, 16: 1, 20: 2, 21: 3, 22: 4, 24: 6, 26: 5, 27: 7, 28: 8, 29: 1, 30: 1}
	for off, v := range want {
		if b[off] != v {
			t.Errorf("byte %d = %d, want %d", off, b[off], v)
		}
	}
	d := a.toDest()
	if back := ahFromDest(&d); back != a {
		t.Errorf("qp_dest round trip: %+v, want %+v", back, a)
	}
}

func TestQPNamesAndStrings(t *testing.T) {
	if QPStateError.String() != "ERR" || QPStateRTS.String() != "RTS" {
		t.Error("QPState names")
	}
	if RC.String() != "RC" || UD.String() != "UD" || uint8(UC) != 3 {
		t.Error("QPType")
	}
	if OpAtomicFetchAdd.String() != "atomic-fetch-and-add" || OpWriteImm.String() != "rdma-write-with-imm" {
		t.Error("WROpcode strings")
	}
	if s := (AccessLocalWrite | AccessRemoteRead | 1<<30).String(); s != "LOCAL_WRITE|REMOTE_READ|0x40000000" {
		t.Errorf("Access string %q", s)
	}
	if EventSRQLimitReached.Name() != "IBV_EVENT_SRQ_LIMIT_REACHED" || EventQPLastWQEReached.Name() != "IBV_EVENT_QP_LAST_WQE_REACHED" {
		t.Error("event names")
	}
}

func TestBuffer(t *testing.T) {
	b, err := AllocBuffer(5000)
	if err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	if len(p) != 5000 || b.Len() != 5000 {
		t.Fatalf("len %d", len(p))
	}
	if b.Addr()%4096 != 0 {
		t.Errorf("address %#x not page aligned", b.Addr())
	}
	p[0], p[4999] = 1, 2
	// A registration over part of it keeps it open.
	got := bufferOf(b.Addr()+100, 200)
	if got != b {
		t.Fatalf("bufferOf = %p, want %p", got, b)
	}
	if bufferOf(b.Addr()+4990, 20) != nil {
		t.Error("range past the end matched")
	}
	err = b.Close()
	if !errors.Is(err, ErrBusy) || !errors.Is(err, unix.EBUSY) {
		t.Errorf("Close while registered: %v", err)
	}
	b.unregister()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if b.Bytes() != nil || b.Addr() != 0 {
		t.Error("closed buffer still has memory")
	}
	var nilBuf *Buffer
	if nilBuf.Close() != nil || nilBuf.Bytes() != nil {
		t.Error("nil buffer")
	}
	if _, err := AllocBuffer(0); err == nil {
		t.Error("AllocBuffer(0) succeeded")
	}
}

func TestMemlockErrorMessage(t *testing.T) {
	e := &MemlockError{Size: 1 << 20, Cur: 65536, Max: 65536, Err: unix.ENOMEM}
	s := e.Error()
	for _, want := range []string{"RLIMIT_MEMLOCK", "65536 bytes", "1048576 bytes", "CAP_IPC_LOCK", "ulimit -l"} {
		if !strings.Contains(s, want) {
			t.Errorf("message %q lacks %q", s, want)
		}
	}
	if !errors.Is(e, unix.ENOMEM) {
		t.Error("does not unwrap to ENOMEM")
	}
	op := &OpError{Op: "reg_mr", Err: unix.EPERM}
	var me *MemlockError
	if !errors.As(explainRegMR(op, 4096), &me) || me.Size != 4096 || me.Err != unix.EPERM {
		t.Errorf("explainRegMR(EPERM) = %v", explainRegMR(op, 4096))
	}
	if err := explainRegMR(&OpError{Op: "reg_mr", Err: unix.EINVAL}, 1); errors.As(err, &me) {
		t.Error("EINVAL explained as a memlock error")
	}
}

func TestChildrenRefuse(t *testing.T) {
	var ch children
	if err := ch.hold("op", "PD"); err != nil {
		t.Fatal(err)
	}
	a, b := new(int), new(int)
	ch.adopt(a, kindMR)
	if err := ch.hold("op", "PD"); err != nil {
		t.Fatal(err)
	}
	ch.adopt(b, kindQP)
	_, err := ch.beginClose("dealloc_pd", "PD", false)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "1 QP, 1 MR") {
		t.Fatalf("beginClose = %v", err)
	}
	ch.drop(a)
	ch.drop(b)
	if already, err := ch.beginClose("dealloc_pd", "PD", false); already || err != nil {
		t.Fatalf("beginClose after drops: %v %v", already, err)
	}
	if already, _ := ch.beginClose("dealloc_pd", "PD", false); !already {
		t.Error("second beginClose not reported")
	}
	if err := ch.hold("create_qp", "PD"); !errors.Is(err, ErrClosed) {
		t.Errorf("hold on a closed parent: %v", err)
	}
}

func TestNilObjects(t *testing.T) {
	var (
		pd  *PD
		mr  *MR
		cq  *CQ
		ch  *CompChannel
		qp  *QP
		srq *SRQ
		ah  *AH
	)
	for _, err := range []error{pd.Close(), mr.Close(), cq.Close(), ch.Close(), qp.Close(), srq.Close(), ah.Close()} {
		if err != nil {
			t.Errorf("Close on nil: %v", err)
		}
	}
	if _, err := pd.RegMR(make([]byte, 1), 0); err == nil {
		t.Error("RegMR on a nil PD succeeded")
	}
	if _, err := pd.CreateQP(QPInit{Type: RC}); err == nil {
		t.Error("CreateQP on a nil PD succeeded")
	}
}

// An address vector's GID index is an int like Device.QueryGID's, refused
// outside the byte the kernel carries instead of being truncated.
func TestAHAttrGIDIndexRange(t *testing.T) {
	for _, idx := range []int{0, 1, MaxSGIDIndex} {
		if err := (&AHAttr{SGIDIndex: idx}).check(); err != nil {
			t.Errorf("SGIDIndex %d: %v", idx, err)
		}
	}
	for _, idx := range []int{-1, MaxSGIDIndex + 1, 1 << 20} {
		if err := (&AHAttr{SGIDIndex: idx}).check(); !errors.Is(err, unix.EINVAL) {
			t.Errorf("SGIDIndex %d: %v, want EINVAL", idx, err)
		}
	}
}
