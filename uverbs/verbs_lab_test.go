package uverbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// Verbs tests on the lab's rxe device on lo. Two QPs of one Device talk to
// each other through GID ::ffff:127.0.0.1 with QPNs exchanged in memory.

const allAccess = AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic

type verbsEnv struct {
	t      testing.TB
	ctx    *Device
	pd     *PD
	gidIdx int
	gid    GID
	iwarp  bool // the device is iWARP (siw): no QP connects out of band
}

// newVerbsEnv opens the loopback device and allocates a PD. Everything is
// closed at the end of the test, in order, with errors reported.
func newVerbsEnv(t testing.TB) *verbsEnv {
	t.Helper()
	return newVerbsEnvOn(t, testutil.LabDevice{Kind: "rxe", Name: testutil.LoopbackDevice(t)})
}

// eachLabDevice runs f as a subtest named by the device kind, with a
// verbsEnv on each kind of device the lab has (testutil.LabDevices): a test
// that needs no connection made out of band runs on rxe and siw. The
// tests that do not apply to siw are listed, with the reason, in
// docs/testing.md ("What does not apply to siw").
func eachLabDevice(t *testing.T, f func(t *testing.T, e *verbsEnv)) {
	t.Helper()
	for _, d := range testutil.LabDevices(t) {
		t.Run(d.Kind, func(t *testing.T) { f(t, newVerbsEnvOn(t, d)) })
	}
}

// eachLabDeviceName is eachLabDevice for tests that open the device
// themselves: f gets its name.
func eachLabDeviceName(t *testing.T, f func(t *testing.T, name string)) {
	t.Helper()
	for _, d := range testutil.LabDevices(t) {
		t.Run(d.Kind, func(t *testing.T) { f(t, d.Name) })
	}
}

// newVerbsEnvOn opens device d and allocates a PD. On rxe the QPs talk to
// each other through GID ::ffff:127.0.0.1; an iWARP device connects only
// through the RDMA CM, so its environment has no GID for that.
func newVerbsEnvOn(t testing.TB, d testutil.LabDevice) *verbsEnv {
	t.Helper()
	c, err := Open(d.Name)
	if err != nil {
		t.Fatalf("Open(%q): %v", d.Name, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	if d.IWARP {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		closeLater(t, "PD", pd.Close)
		return &verbsEnv{t: t, ctx: c, pd: pd, iwarp: true}
	}
	lo := netip.MustParseAddr("127.0.0.1")
	idx, err := c.GIDIndexForIP(1, lo)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "PD", pd.Close)
	return &verbsEnv{t: t, ctx: c, pd: pd, gidIdx: idx, gid: GIDFromIP(lo)}
}

func closeLater(t testing.TB, what string, f func() error) {
	t.Cleanup(func() {
		if err := f(); err != nil {
			t.Errorf("closing %s: %v", what, err)
		}
	})
}

// memory returns a registered off-heap buffer.
func (e *verbsEnv) memory(size int) (*Buffer, *MR) {
	e.t.Helper()
	b, err := AllocBuffer(size)
	if err != nil {
		e.t.Fatal(err)
	}
	closeLater(e.t, "buffer", b.Close)
	mr, err := e.pd.RegMR(b.Bytes(), allAccess)
	if err != nil {
		e.t.Fatal(err)
	}
	closeLater(e.t, "MR", mr.Close)
	return b, mr
}

// channel returns a completion channel, closed at the end of the test.
func (e *verbsEnv) channel() *CompChannel {
	e.t.Helper()
	ch, err := e.ctx.NewCompChannel()
	if err != nil {
		e.t.Fatal(err)
	}
	closeLater(e.t, "completion channel", ch.Close)
	return ch
}

func (e *verbsEnv) cq(depth int, ch *CompChannel) *CQ {
	e.t.Helper()
	cq, err := e.ctx.CreateCQ(CQInit{Depth: depth, Channel: ch})
	if err != nil {
		e.t.Fatal(err)
	}
	closeLater(e.t, "CQ", cq.Close)
	return cq
}

func (e *verbsEnv) qp(init QPInit) *QP {
	e.t.Helper()
	qp, err := e.pd.CreateQP(init)
	if err != nil {
		e.t.Fatal(err)
	}
	closeLater(e.t, "QP", qp.Close)
	return qp
}

var defaultCap = QPCap{MaxSendWR: 32, MaxRecvWR: 32, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInline: 64}

// connect moves two RC or UC QPs to RTS, each addressed to the other.
func (e *verbsEnv) connect(a, b *QP) {
	e.t.Helper()
	for _, p := range [][2]*QP{{a, b}, {b, a}} {
		q, peer := p[0], p[1]
		if err := q.ToInit(InitAttr{Port: 1, Access: AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic}); err != nil {
			e.t.Fatal(err)
		}
		if err := q.ToRTR(RTRAttr{DestQPN: peer.QPN(), RQPSN: 100, MinRNRTimer: 12,
			AH: AHAttr{DGID: e.gid, SGIDIndex: e.gidIdx, HopLimit: 1}}); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, q := range []*QP{a, b} {
		if err := q.ToRTS(RTSAttr{SQPSN: 100, Timeout: 14, RetryCount: 7, RNRRetry: 7}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// rcPair creates two connected RC QPs on cq.
func (e *verbsEnv) rcPair(cq *CQ, cp QPCap) (*QP, *QP) {
	e.t.Helper()
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	e.connect(a, b)
	return a, b
}

// pollN polls cq until n completions arrived (or fails after a generous
// timeout) and returns them.
func pollN(t testing.TB, cq *CQ, n int) []WC {
	t.Helper()
	out := make([]WC, 0, n)
	wcs := make([]WC, 16)
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		k, err := cq.Poll(wcs[:min(len(wcs), n-len(out))])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, wcs[:k]...)
		if k == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("got %d of %d completions: %+v", len(out), n, out)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	return out
}

// byID indexes completions by work-request ID, failing on duplicates.
func byID(t *testing.T, wcs []WC) map[uint64]WC {
	t.Helper()
	m := map[uint64]WC{}
	for _, wc := range wcs {
		if _, dup := m[wc.ID]; dup {
			t.Fatalf("two completions with ID %d: %+v", wc.ID, wcs)
		}
		m[wc.ID] = wc
	}
	return m
}

func expectWC(t *testing.T, wc WC, ok bool, op WCOpcode, qpn uint32, byteLen uint32) {
	t.Helper()
	if !ok {
		t.Fatalf("missing completion (want %v on QP %#x)", op, qpn)
	}
	if wc.Status != WCSuccess || wc.Opcode != op || wc.QPN != qpn || wc.ByteLen != byteLen {
		t.Fatalf("completion %+v: want status success, opcode %v, QPN %#x, byte_len %d (status %v)", wc, op, qpn, byteLen, wc.Status)
	}
}

func fillPattern(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

func TestVerbsRCSendRecv(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(16384)
	cq := e.cq(64, nil)
	a, b := e.rcPair(cq, defaultCap)
	if a.State() != QPStateRTS {
		t.Fatalf("state %v", a.State())
	}
	if c := a.Cap(); c.MaxSendWR < 32 || c.MaxRecvWR < 32 || c.MaxSendSGE < 4 || c.MaxInline < 64 {
		t.Fatalf("caps %+v below those asked for", c)
	}
	mem := buf.Bytes()
	src := mem[:4096]
	dst := mem[8192:]
	fillPattern(src, 1)

	// SEND from two SGEs into a receive with two SGEs.
	if err := b.PostRecv([]RecvWR{{ID: 10, SGEs: []SGE{mr.SGE(8192, 100), mr.SGE(8192+1000, 200)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 150), mr.SGE(1000, 50)}}}); err != nil {
		t.Fatal(err)
	}
	got := byID(t, pollN(t, cq, 2))
	expectWC(t, got[1], true, WCOpSend, a.QPN(), 200)
	wc, ok := got[10]
	expectWC(t, wc, ok, WCOpRecv, b.QPN(), 200)
	if wc.Flags&WCWithImm != 0 {
		t.Errorf("receive flags %v", wc.Flags)
	}
	want := append(append([]byte{}, src[:150]...), src[1000:1050]...)
	recvd := append(append([]byte{}, dst[:100]...), dst[1000:1100]...)
	if !bytes.Equal(recvd, want) {
		t.Fatalf("received bytes differ from the sent ones")
	}

	// SEND WITH IMM, and an inline SEND from an unregistered Buffer.
	if err := b.PostRecv([]RecvWR{{ID: 11, SGEs: []SGE{mr.SGE(8192, 256)}}, {ID: 12, SGEs: []SGE{mr.SGE(8192+512, 256)}}}); err != nil {
		t.Fatal(err)
	}
	// Go heap memory is neither a Buffer nor registered: inline data from
	// it is refused (the copy could not be known to be safe), and nothing
	// of the call is posted.
	heap := []byte("inline payload, copied at post time")
	err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{{Addr: addrOf(heap), Length: uint32(len(heap))}}}})
	var pe *PostError
	if !errors.Is(err, ErrInvalidWR) || !errors.As(err, &pe) || pe.Index != 0 || !strings.Contains(err.Error(), "inline data must come from a Buffer or a registered MR") {
		t.Fatalf("inline SEND from Go heap memory: %v, want a PostError matching ErrInvalidWR", err)
	}
	if s, _ := a.outstanding(); s != 0 {
		t.Fatalf("a refused inline send left %d requests in the ring", s)
	}
	ib, err := AllocBuffer(len(heap))
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "inline buffer", ib.Close)
	inline := ib.Bytes()
	copy(inline, heap)
	inlineSGE := SGE{Addr: ib.Addr(), Length: uint32(len(inline))}
	if err := a.PostSend([]SendWR{
		{ID: 2, Op: OpSendImm, Flags: SendSignaled, Imm: 0xdeadbeef, SGEs: []SGE{mr.SGE(0, 64)}},
		{ID: 3, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{inlineSGE}},
	}); err != nil {
		t.Fatal(err)
	}
	copy(inline, "overwritten after PostSend returned") // the WQE holds its own copy
	got = byID(t, pollN(t, cq, 4))
	expectWC(t, got[2], true, WCOpSend, a.QPN(), 64)
	expectWC(t, got[3], true, WCOpSend, a.QPN(), 35)
	wc, ok = got[11]
	expectWC(t, wc, ok, WCOpRecv, b.QPN(), 64)
	if wc.Flags&WCWithImm == 0 || wc.Imm != 0xdeadbeef {
		t.Errorf("SEND WITH IMM received imm %#x flags %v, want 0xdeadbeef with WITH_IMM", wc.Imm, wc.Flags)
	}
	if !bytes.Equal(dst[:64], src[:64]) {
		t.Error("SEND WITH IMM payload differs")
	}
	expectWC(t, got[12], true, WCOpRecv, b.QPN(), 35)
	if string(dst[512:512+35]) != "inline payload, copied at post time" {
		t.Errorf("inline payload %q", dst[512:512+35])
	}
}

func TestVerbsRCRDMAAndAtomics(t *testing.T) {
	e := newVerbsEnv(t)
	abuf, amr := e.memory(8192)
	bbuf, bmr := e.memory(8192)
	cq := e.cq(64, nil)
	a, b := e.rcPair(cq, defaultCap)
	// Separate regions for each side: a writes/reads b's memory by rkey.
	am, bm := abuf.Bytes(), bbuf.Bytes()
	fillPattern(am[:1024], 3)

	// RDMA WRITE: a -> b, no receive consumed.
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{amr.SGE(0, 512), amr.SGE(512, 512)},
		RemoteAddr: bmr.Addr() + 100, RKey: bmr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	expectWC(t, pollN(t, cq, 1)[0], true, WCOpRDMAWrite, a.QPN(), 1024)
	if !bytes.Equal(bm[100:1124], am[:1024]) {
		t.Fatal("RDMA WRITE data differs")
	}

	// RDMA WRITE WITH IMM consumes a receive at b and reports the length.
	if err := b.PostRecv([]RecvWR{{ID: 20}}); err != nil {
		t.Fatal(err)
	}
	fillPattern(am[1024:1024+300], 9)
	if err := a.PostSend([]SendWR{{ID: 2, Op: OpWriteImm, Flags: SendSignaled, Imm: 0x01020304, SGEs: []SGE{amr.SGE(1024, 300)},
		RemoteAddr: bmr.Addr() + 4096, RKey: bmr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	got := byID(t, pollN(t, cq, 2))
	expectWC(t, got[2], true, WCOpRDMAWrite, a.QPN(), 300)
	wc, ok := got[20]
	expectWC(t, wc, ok, WCOpRecvRDMAWithImm, b.QPN(), 300)
	if wc.Imm != 0x01020304 || wc.Flags&WCWithImm == 0 {
		t.Errorf("imm %#x flags %v", wc.Imm, wc.Flags)
	}
	if !bytes.Equal(bm[4096:4096+300], am[1024:1024+300]) {
		t.Fatal("RDMA WRITE WITH IMM data differs")
	}

	// RDMA READ: a reads b's memory into its own.
	fillPattern(bm[6000:6000+777], 42)
	if err := a.PostSend([]SendWR{{ID: 3, Op: OpRead, Flags: SendSignaled, SGEs: []SGE{amr.SGE(2048, 777)},
		RemoteAddr: bmr.Addr() + 6000, RKey: bmr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	expectWC(t, pollN(t, cq, 1)[0], true, WCOpRDMARead, a.QPN(), 777)
	if !bytes.Equal(am[2048:2048+777], bm[6000:6000+777]) {
		t.Fatal("RDMA READ data differs")
	}

	// Atomics on an 8-byte aligned word of b; the original value lands in a.
	word := bm[7000:7008]
	binary.LittleEndian.PutUint64(word, 1000)
	if err := a.PostSend([]SendWR{{ID: 4, Op: OpAtomicFetchAdd, Flags: SendSignaled, SGEs: []SGE{amr.SGE(4096, 8)},
		RemoteAddr: bmr.Addr() + 7000, RKey: bmr.RKey(), CompareAdd: 234}}); err != nil {
		t.Fatal(err)
	}
	expectWC(t, pollN(t, cq, 1)[0], true, WCOpFetchAdd, a.QPN(), 8)
	if orig, now := binary.LittleEndian.Uint64(am[4096:]), binary.LittleEndian.Uint64(word); orig != 1000 || now != 1234 {
		t.Fatalf("fetch-and-add: original %d (want 1000), now %d (want 1234)", orig, now)
	}
	// Compare-and-swap: one that matches, then one that does not.
	if err := a.PostSend([]SendWR{
		{ID: 5, Op: OpAtomicCmpSwap, Flags: SendSignaled, SGEs: []SGE{amr.SGE(4104, 8)}, RemoteAddr: bmr.Addr() + 7000, RKey: bmr.RKey(), CompareAdd: 1234, Swap: 77},
		{ID: 6, Op: OpAtomicCmpSwap, Flags: SendSignaled | SendFence, SGEs: []SGE{amr.SGE(4112, 8)}, RemoteAddr: bmr.Addr() + 7000, RKey: bmr.RKey(), CompareAdd: 1234, Swap: 99},
	}); err != nil {
		t.Fatal(err)
	}
	got = byID(t, pollN(t, cq, 2))
	expectWC(t, got[5], true, WCOpCompSwap, a.QPN(), 8)
	expectWC(t, got[6], true, WCOpCompSwap, a.QPN(), 8)
	if o1, o2, now := binary.LittleEndian.Uint64(am[4104:]), binary.LittleEndian.Uint64(am[4112:]), binary.LittleEndian.Uint64(word); o1 != 1234 || o2 != 77 || now != 77 {
		t.Fatalf("compare-and-swap: originals %d, %d (want 1234, 77), now %d (want 77)", o1, o2, now)
	}
}

func TestVerbsUD(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(8192)
	cq := e.cq(64, nil)
	cp := QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 2}
	a := e.qp(QPInit{Type: UD, SendCQ: cq, RecvCQ: cq, Cap: cp})
	b := e.qp(QPInit{Type: UD, SendCQ: cq, RecvCQ: cq, Cap: cp})
	const qkey = 0x11111111
	for _, q := range []*QP{a, b} {
		if err := q.ToInit(InitAttr{Port: 1, QKey: qkey}); err != nil {
			t.Fatal(err)
		}
		if err := q.ToRTR(RTRAttr{}); err != nil {
			t.Fatal(err)
		}
		if err := q.ToRTS(RTSAttr{SQPSN: 7}); err != nil {
			t.Fatal(err)
		}
	}
	attr, err := b.Query(QPAttrAll)
	if err != nil {
		t.Fatal(err)
	}
	if attr.State != QPStateRTS || attr.QKey != qkey || attr.SQPSN != 7 || attr.Port != 1 {
		t.Fatalf("UD QP attributes %+v", attr)
	}
	ah, err := e.pd.CreateAHForIP(1, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "AH", ah.Close)
	// rxe numbers its AHs from 5.16; before, UD WQEs carry the address
	// vector instead (docs/kernel-behaviour.md §5).
	if legacy := ah.drv.Num == rxe.LegacyAHNum; legacy == kernelAtLeast(t, 5, 16) {
		t.Errorf("AH number %#x: the address vector in each WQE is for kernels before 5.16 only", ah.drv.Num)
	}
	if ah.Attr().SGIDIndex != e.gidIdx || ah.Attr().DGID != e.gid {
		t.Errorf("AH attributes %+v: want SGID index %d, DGID %v", ah.Attr(), e.gidIdx, e.gid)
	}
	mem := buf.Bytes()
	fillPattern(mem[:100], 5)
	// The GRH area and the payload land in two SGEs.
	if err := b.PostRecv([]RecvWR{{ID: 9, SGEs: []SGE{mr.SGE(4096, 40), mr.SGE(4096+40, 1024)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 8, Op: OpSendImm, Imm: 77, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 100)},
		AH: ah, RemoteQPN: b.QPN(), RemoteQKey: qkey}}); err != nil {
		t.Fatal(err)
	}
	got := byID(t, pollN(t, cq, 2))
	expectWC(t, got[8], true, WCOpSend, a.QPN(), 100)
	wc, ok := got[9]
	expectWC(t, wc, ok, WCOpRecv, b.QPN(), 140)
	if wc.SrcQP != a.QPN() || wc.Flags&WCGRH == 0 || wc.Imm != 77 {
		t.Errorf("UD receive: src QP %#x (want %#x), flags %v, imm %d", wc.SrcQP, a.QPN(), wc.Flags, wc.Imm)
	}
	grh := mem[4096 : 4096+40]
	// IPv4 RoCE v2: 20 zero bytes, then the IPv4 header (version 4, IHL 5)
	// from 127.0.0.1 to 127.0.0.1.
	if !bytes.Equal(grh[:20], make([]byte, 20)) || grh[20] != 0x45 ||
		!net.IP(grh[32:36]).Equal(net.IPv4(127, 0, 0, 1)) || !net.IP(grh[36:40]).Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("GRH area % x", grh)
	}
	if !bytes.Equal(mem[4096+40:4096+140], mem[:100]) {
		t.Error("UD payload differs")
	}

	// Misuse of the UD address is refused before posting.
	err = a.PostSend([]SendWR{{ID: 1, Op: OpSend, SGEs: []SGE{mr.SGE(0, 1)}, RemoteQPN: b.QPN()}})
	if !errors.Is(err, ErrUDAddress) {
		t.Errorf("UD send without an AH: %v", err)
	}
	err = a.PostSend([]SendWR{{ID: 1, Op: OpWrite, SGEs: []SGE{mr.SGE(0, 1)}, AH: ah, RemoteQPN: b.QPN()}})
	if !errors.Is(err, ErrOpcodeNotSupported) {
		t.Errorf("RDMA WRITE on UD: %v", err)
	}
}

func TestVerbsCompChannel(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	ch := e.channel()
	cq := e.cq(16, ch)
	other := e.cq(16, nil)
	if err := other.ReqNotify(false); err == nil {
		t.Error("ReqNotify on a CQ without a channel succeeded")
	}
	a, b := e.rcPair(cq, defaultCap)

	// Nothing is queued yet: a Wait ends with its context, for a deadline
	// and for a cancellation while it is parked.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if _, err := ch.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a deadline: %v", err)
	}
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := ch.Wait(ctx); done <- err }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end Wait")
	}

	// Arm, post, wait: the event names the CQ.
	for round := range 4 {
		if err := cq.ReqNotify(false); err != nil {
			t.Fatal(err)
		}
		if err := b.PostRecv([]RecvWR{{ID: uint64(100 + round), SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
			t.Fatal(err)
		}
		if err := a.PostSend([]SendWR{{ID: uint64(round), Op: OpSend, SGEs: []SGE{mr.SGE(1024, 64)}}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		got, err := ch.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: Wait: %v", round, err)
		}
		if got != cq {
			t.Fatalf("round %d: Wait returned %p, want the CQ %p", round, got, cq)
		}
		wc := pollN(t, cq, 1)[0]
		expectWC(t, wc, true, WCOpRecv, b.QPN(), 64)
	}

	// Solicited-only: an unsolicited send does not notify, a solicited one
	// does.
	if err := cq.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	if err := b.PostRecv([]RecvWR{{ID: 200, SGEs: []SGE{mr.SGE(0, 64)}}, {ID: 201, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 50, Op: OpSend, SGEs: []SGE{mr.SGE(1024, 8)}}}); err != nil {
		t.Fatal(err)
	}
	pollN(t, cq, 1)
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	if got, err := ch.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unsolicited receive notified a solicited-only CQ: %v %v", got, err)
	}
	cancel()
	if err := a.PostSend([]SendWR{{ID: 51, Op: OpSend, Flags: SendSolicited, SGEs: []SGE{mr.SGE(1024, 8)}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got, err := ch.Wait(ctx); err != nil || got != cq {
		t.Fatalf("solicited receive: Wait = %v, %v", got, err)
	}
	pollN(t, cq, 1)

	// After all those Waits the channel's file is still non-blocking
	// (FD's doc).
	if fl, err := unix.FcntlInt(uintptr(ch.FD()), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
		t.Fatalf("channel file flags %#x, %v: want O_NONBLOCK set", fl, err)
	}

	// The channel refuses to close under its CQ.
	if err := ch.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("closing a channel with a CQ: %v", err)
	}
}

// The event-driven round trip (post, poll, Wait, re-arm) allocates
// nothing, under a context that cannot end and under one cancellable
// context kept from Wait to Wait.
func TestCompChannelWaitAllocs(t *testing.T) {
	w := newWakeupEnv(t)
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), cctx} {
		w.ctx = ctx
		if allocs := testing.AllocsPerRun(50, func() { w.roundTrip(t) }); allocs != 0 {
			t.Errorf("context %v: %v allocations per round trip, want 0", ctx, allocs)
		}
	}
}

// Waits park in the netpoller: many channels waited on at once hold no
// thread in read(2) of a completion event (the kernel shows each thread's
// current system call and its arguments in /proc/self/task/*/syscall), and
// all of them end with their context.
func TestCompChannelWaitsPark(t *testing.T) { eachLabDevice(t, testCompChannelWaitsPark) }

func testCompChannelWaitsPark(t *testing.T, e *verbsEnv) {
	const n = 72
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, n)
	for range n {
		ch := e.channel()
		go func() { _, err := ch.Wait(ctx); done <- err }()
	}
	deadline := time.Now().Add(20 * time.Second)
	for waitingIn("(*CompChannel).Wait(") < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d Waits parked", waitingIn("(*CompChannel).Wait("), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
		f := strings.Fields(string(b))
		if err == nil && len(f) > 3 && f[0] == strconv.Itoa(unix.SYS_READ) && f[3] == "0x8" {
			t.Fatalf("thread %s is blocked in a read of 8 bytes (%s): a Wait holds a thread", task.Name(), b)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("a Wait returned %v with no event", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	for range n {
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Wait: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("cancel did not end every Wait")
		}
	}
}

func TestVerbsSRQ(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(65536)
	cq := e.cq(128, nil)
	srq, err := e.pd.CreateSRQ(SRQInit{MaxWR: 16, MaxSGE: 2})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "SRQ", srq.Close)
	if srq.MaxWR() < 16 || srq.MaxSGE() < 2 {
		t.Fatalf("SRQ holds %d WRs of %d SGEs", srq.MaxWR(), srq.MaxSGE())
	}
	a1 := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	a2 := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	b1 := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 8}})
	b2 := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 8}})
	e.connect(a1, b1)
	e.connect(a2, b2)
	if b1.Cap().MaxRecvWR != 0 {
		t.Errorf("an SRQ QP reports a receive queue: %+v", b1.Cap())
	}
	if err := b1.PostRecv([]RecvWR{{ID: 1}}); err == nil {
		t.Error("PostRecv on an SRQ QP succeeded")
	}
	mem := buf.Bytes()
	var recvs []RecvWR
	for i := range 4 {
		recvs = append(recvs, RecvWR{ID: uint64(100 + i), SGEs: []SGE{mr.SGE(8192+i*1024, 512), mr.SGE(8192+i*1024+512, 512)}})
	}
	if err := srq.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	fillPattern(mem[:2048], 11)
	if err := a1.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 700)}}}); err != nil {
		t.Fatal(err)
	}
	if err := a2.PostSend([]SendWR{{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(1000, 300)}}}); err != nil {
		t.Fatal(err)
	}
	wcs := pollN(t, cq, 4)
	seen := map[uint32]WC{}
	for _, wc := range wcs {
		if wc.Status != WCSuccess {
			t.Fatalf("completion %+v", wc)
		}
		if wc.Opcode == WCOpRecv {
			seen[wc.QPN] = wc
		}
	}
	if seen[b1.QPN()].ByteLen != 700 || seen[b2.QPN()].ByteLen != 300 {
		t.Fatalf("SRQ receives: %+v", wcs)
	}
	// Each receive used the SRQ buffers named by its ID.
	for qpn, src := range map[uint32][]byte{b1.QPN(): mem[:700], b2.QPN(): mem[1000:1300]} {
		i := int(seen[qpn].ID - 100)
		if got := mem[8192+i*1024 : 8192+i*1024+len(src)]; !bytes.Equal(got, src) {
			t.Errorf("QP %#x: received data differs", qpn)
		}
	}

	// The limit event: 2 receives left, limit 3, one more arrival.
	if err := srq.SetLimit(3); err != nil {
		t.Fatal(err)
	}
	if a, err := srq.Query(); err != nil || a.Limit != 3 || a.MaxWR < 16 {
		t.Fatalf("Query = %+v, %v", a, err)
	}
	if err := a1.PostSend([]SendWR{{ID: 3, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 10)}}}); err != nil {
		t.Fatal(err)
	}
	pollN(t, cq, 2)
	ev := awaitEvent(t, e.ctx, EventSRQLimitReached)
	if ev.SRQ() != srq || ev.QP() != nil || ev.CQ() != nil {
		t.Errorf("limit event %v names SRQ %p, want %p", ev, ev.SRQ(), srq)
	}
	if a, err := srq.Query(); err != nil || a.Limit != 0 {
		t.Errorf("after the event the limit is %+v, %v; want 0 (disarmed)", a, err)
	}

	// Resize keeps the posted receive, which a last send then uses.
	if err := srq.Resize(100); err != nil {
		t.Fatal(err)
	}
	if srq.MaxWR() < 100 {
		t.Errorf("after Resize(100) MaxWR %d", srq.MaxWR())
	}
	if err := a2.PostSend([]SendWR{{ID: 4, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 20)}}}); err != nil {
		t.Fatal(err)
	}
	got := pollN(t, cq, 2)
	for _, wc := range got {
		if wc.Status != WCSuccess {
			t.Fatalf("after resize: %+v", wc)
		}
	}

	// Destroy order: the SRQ refuses while QPs use it.
	if err := srq.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("closing an SRQ in use: %v", err)
	}

	// From 6.12, rxe reports the last WQE of an SRQ QP that goes to the
	// error state (kernel: sw/rxe/rxe_resp.c flush_recv_queue); the event
	// names the QP.
	if kernelAtLeast(t, 6, 12) {
		if err := b2.ToError(); err != nil {
			t.Fatal(err)
		}
		if ev := awaitEvent(t, e.ctx, EventQPLastWQEReached); ev.QP() != b2 {
			t.Errorf("%v names QP %p, want %p", ev, ev.QP(), b2)
		}
	}
}

// kernelAtLeast reports whether the running kernel is at least major.minor.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var ma, mi int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi)
	return ma > major || (ma == major && mi >= minor)
}

// awaitEvent reads async events until one of type typ arrives.
func awaitEvent(t *testing.T, c *Device, typ EventType) AsyncEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ev, err := c.NextEvent(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ.Name(), err)
		}
		if ev.Type == typ {
			return ev
		}
		t.Logf("other async event: %v", ev)
	}
}

func TestVerbsCQResize(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(4096)
	scq := e.cq(8, nil)
	rcq := e.cq(64, nil)
	depth := scq.Depth()
	if depth < 8 {
		t.Fatalf("Depth %d < 8", depth)
	}
	a := e.qp(QPInit{Type: RC, SendCQ: scq, RecvCQ: rcq, Cap: defaultCap})
	b := e.qp(QPInit{Type: RC, SendCQ: scq, RecvCQ: rcq, Cap: defaultCap})
	e.connect(a, b)
	for i := range 3 {
		if err := b.PostRecv([]RecvWR{{ID: uint64(10 + i), SGEs: []SGE{mr.SGE(2048, 64)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PostSend([]SendWR{
		{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}},
		{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}},
		{ID: 3, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}},
	}); err != nil {
		t.Fatal(err)
	}
	// Wait for the receives, so the sends have completed too (RC acks
	// precede the sender's completion only loosely: poll below with a
	// timeout anyway).
	pollN(t, rcq, 3)
	if err := scq.Resize(200); err != nil {
		t.Fatal(err)
	}
	if scq.Depth() < 200 {
		t.Fatalf("Depth after Resize(200) = %d", scq.Depth())
	}
	got := byID(t, pollN(t, scq, 3))
	for id := uint64(1); id <= 3; id++ {
		expectWC(t, got[id], true, WCOpSend, a.QPN(), 8)
	}
	// Shrinking below what it holds is the kernel's EINVAL; an empty CQ
	// can shrink.
	if err := scq.Resize(16); err != nil {
		t.Fatal(err)
	}
	if scq.Depth() < 16 || scq.Depth() >= 200 {
		t.Errorf("Depth after Resize(16) = %d", scq.Depth())
	}
}

func TestVerbsUseAfterClose(t *testing.T) { eachLabDeviceName(t, testVerbsUseAfterClose) }

func testVerbsUseAfterClose(t *testing.T, name string) {
	c, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.NewCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQInit{Depth: 8, Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.CreateSRQ(SRQInit{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.ToInit(InitAttr{}); err != nil {
		t.Fatal(err)
	}
	if err := qp.PostRecv([]RecvWR{{ID: 1, SGEs: []SGE{mr.SGE(0, 8)}}}); err != nil {
		t.Fatal(err)
	}
	// A waiter on the channel is woken by Device.Close.
	waitDone := make(chan error, 1)
	go func() { _, err := ch.Wait(context.Background()); waitDone <- err }()

	// Device.Close closes every child in order (the QP drained first).
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waitDone:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Wait after Device.Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Device.Close did not wake a Wait")
	}
	closed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", what, err)
		}
	}
	wcs := make([]WC, 4)
	_, err = cq.Poll(wcs)
	closed("CQ.Poll", err)
	closed("CQ.ReqNotify", cq.ReqNotify(false))
	_, err = cq.PollWait(context.Background(), wcs)
	closed("CQ.PollWait", err)
	closed("CQ.Resize", cq.Resize(16))
	closed("QP.PostSend", qp.PostSend([]SendWR{{Op: OpSend}}))
	closed("QP.PostRecv", qp.PostRecv([]RecvWR{{ID: 1}}))
	closed("QP.Modify", qp.ToError())
	_, err = qp.Query(0)
	closed("QP.Query", err)
	closed("SRQ.PostRecv", srq.PostRecv([]RecvWR{{ID: 1}}))
	closed("SRQ.SetLimit", srq.SetLimit(1))
	_, err = srq.Query()
	closed("SRQ.Query", err)
	_, err = pd.RegMR(buf.Bytes(), AccessLocalWrite)
	closed("PD.RegMR", err)
	_, err = pd.CreateSRQ(SRQInit{MaxWR: 1})
	closed("PD.CreateSRQ", err)
	_, err = c.AllocPD()
	closed("Device.AllocPD", err)
	_, err = c.CreateCQ(CQInit{Depth: 1})
	closed("Device.CreateCQ", err)
	_, err = ch.Wait(context.Background())
	closed("CompChannel.Wait", err)
	for what, f := range map[string]func() error{"QP": qp.Close, "SRQ": srq.Close, "MR": mr.Close, "CQ": cq.Close, "channel": ch.Close, "PD": pd.Close, "Device": c.Close} {
		if err := f(); err != nil {
			t.Errorf("%s.Close after Device.Close: %v", what, err)
		}
	}
	if mr.Bytes() != nil {
		t.Error("a closed MR still returns its memory")
	}
	// The MR no longer pins the buffer.
	if err := buf.Close(); err != nil {
		t.Errorf("Buffer.Close after Device.Close: %v", err)
	}
}

// QP.Close drains: flushed work comes back through the CQ, and completions
// of another QP on the same CQ are kept.
func TestVerbsQPCloseDrains(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(8192)
	cq := e.cq(64, nil)
	a, b := e.rcPair(cq, defaultCap)
	c, d := e.rcPair(cq, defaultCap)

	// A completed, unpolled send of another pair.
	if err := d.PostRecv([]RecvWR{{ID: 500, SGEs: []SGE{mr.SGE(4096, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PostSend([]SendWR{{ID: 400, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, _ := c.outstanding()
		_, r := d.outstanding()
		if s+r == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other pair's send did not complete")
		}
		time.Sleep(time.Millisecond)
	}

	// Receives outstanding on b, then b closes.
	var recvs []RecvWR
	for i := range 5 {
		recvs = append(recvs, RecvWR{ID: uint64(10 + i), SGEs: []SGE{mr.SGE(2048, 64)}})
	}
	if err := b.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	// Bounded by the caller's context, which the drain does not reach.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.CloseContext(ctx); err != nil {
		t.Fatal(err)
	}
	// Sends on a after it went to ERR are flushed by the kernel too.
	if err := a.ToError(); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{
		{ID: 20, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 8)}},
		{ID: 21, Op: OpSend, SGEs: []SGE{mr.SGE(0, 8)}}, // unsignaled: flushed work completes anyway
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got := byID(t, pollN(t, cq, 9))
	for _, id := range []uint64{10, 11, 12, 13, 14} {
		if wc := got[id]; wc.Status != WCFlushError || wc.QPN != b.QPN() {
			t.Errorf("receive %d: %+v", id, wc)
		}
	}
	for _, id := range []uint64{20, 21} {
		if wc := got[id]; wc.Status != WCFlushError || wc.QPN != a.QPN() {
			t.Errorf("send %d: %+v", id, wc)
		}
	}
	expectWC(t, got[400], true, WCOpSend, c.QPN(), 64)
	expectWC(t, got[500], true, WCOpRecv, d.QPN(), 64)
	wcs := make([]WC, 4)
	if n, err := cq.Poll(wcs); n != 0 || err != nil {
		t.Errorf("extra completions: %v %v", wcs[:n], err)
	}
}

func TestVerbsPostValidation(t *testing.T) {
	e := newVerbsEnv(t)
	_, mr := e.memory(8192)
	cq := e.cq(64, nil)
	cp := QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInline: 32}
	a := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	b := e.qp(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: cp})
	one := []SGE{mr.SGE(0, 8)}

	// Posting in the wrong state.
	if err := a.PostRecv([]RecvWR{{ID: 1, SGEs: one}}); !errors.Is(err, ErrQPState) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("PostRecv in RESET: %v", err)
	}
	if err := a.ToInit(InitAttr{Access: AccessRemoteWrite}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{{ID: 1, Op: OpSend, SGEs: one}}); !errors.Is(err, ErrQPState) {
		t.Errorf("PostSend in INIT: %v", err)
	}
	if err := a.ToRTS(RTSAttr{}); err == nil {
		t.Error("INIT -> RTS accepted")
	} else if a.State() != QPStateInit {
		t.Errorf("state %v after a refused transition", a.State())
	}
	if err := b.ToInit(InitAttr{Access: AccessRemoteWrite}); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]*QP{{a, b}, {b, a}} {
		if err := p[0].ToRTR(RTRAttr{DestQPN: p[1].QPN(), AH: AHAttr{DGID: e.gid, SGIDIndex: e.gidIdx}}); err != nil {
			t.Fatal(err)
		}
		if err := p[0].ToRTS(RTSAttr{Timeout: 14, RetryCount: 7, RNRRetry: 7}); err != nil {
			t.Fatal(err)
		}
	}

	capa := a.Cap()
	three := []SGE{mr.SGE(0, 8), mr.SGE(8, 8), mr.SGE(16, 8)}
	tooMany := make([]SGE, capa.MaxSendSGE+1)
	for i := range tooMany {
		tooMany[i] = mr.SGE(i*8, 8)
	}
	cases := []struct {
		name string
		wrs  []SendWR
		want error
		idx  int
	}{
		{"too many SGEs", []SendWR{{ID: 1, Op: OpSend, SGEs: tooMany}}, ErrTooManySGEs, 0},
		{"inline too long", []SendWR{{ID: 1, Op: OpSend, Flags: SendInline, SGEs: []SGE{mr.SGE(0, capa.MaxInline+1)}}}, ErrInlineTooLong, 0},
		{"inline length sum wraps in 32 bits", []SendWR{{ID: 1, Op: OpSend, Flags: SendInline,
			SGEs: []SGE{{Addr: mr.Addr(), Length: 1 << 31, LKey: mr.LKey()}, {Addr: mr.Addr(), Length: 1 << 31, LKey: mr.LKey()}}}}, ErrInvalidWR, 0},
		{"atomic misaligned", []SendWR{{ID: 1, Op: OpAtomicFetchAdd, SGEs: []SGE{mr.SGE(0, 8)}, RemoteAddr: mr.Addr() + 4, RKey: mr.RKey()}}, ErrAtomicAlignment, 0},
		{"atomic too short", []SendWR{{ID: 1, Op: OpAtomicCmpSwap, SGEs: []SGE{mr.SGE(0, 4)}, RemoteAddr: mr.Addr(), RKey: mr.RKey()}}, ErrAtomicLength, 0},
		{"inline from address 0", []SendWR{{ID: 1, Op: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: 0, Length: 4}}}}, ErrInvalidWR, 0},
		{"inline read", []SendWR{{ID: 1, Op: OpRead, Flags: SendInline, SGEs: one, RemoteAddr: mr.Addr(), RKey: mr.RKey()}}, ErrInlineNotAllowed, 0},
		{"third of a batch invalid", []SendWR{{ID: 1, Op: OpSend, SGEs: one}, {ID: 2, Op: OpSend, SGEs: one}, {ID: 3, Op: OpSend, SGEs: three}}, ErrTooManySGEs, 2},
		{"more than the queue holds", make([]SendWR, capa.MaxSendWR+1), ErrQueueFull, capa.MaxSendWR},
	}
	for i := range cases[len(cases)-1].wrs {
		cases[len(cases)-1].wrs[i] = SendWR{ID: uint64(i), Op: OpWrite, SGEs: one, RemoteAddr: mr.Addr(), RKey: mr.RKey()}
	}
	for _, c := range cases {
		err := a.PostSend(c.wrs)
		var pe *PostError
		if !errors.Is(err, c.want) || !errors.As(err, &pe) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if pe.Index != c.idx || pe.Op != "post_send" {
			t.Errorf("%s: index %d op %q, want %d", c.name, pe.Index, pe.Op, c.idx)
		}
		if s, r := a.outstanding(); s != 0 || r != 0 {
			t.Fatalf("%s: %d send and %d receive requests were written to the rings", c.name, s, r)
		}
	}
	if err := b.PostRecv(make([]RecvWR, b.Cap().MaxRecvWR+1)); !errors.Is(err, ErrQueueFull) || !errors.Is(err, unix.ENOMEM) {
		t.Errorf("PostRecv over capacity: %v", err)
	}
	if err := b.PostRecv([]RecvWR{{ID: 1, SGEs: three}}); !errors.Is(err, ErrTooManySGEs) {
		t.Errorf("PostRecv with too many SGEs: %v", err)
	}
	if _, r := b.outstanding(); r != 0 {
		t.Fatalf("%d refused receives were written", r)
	}
	// A full queue's worth in one call is fine, and completes.
	full := make([]SendWR, capa.MaxSendWR)
	for i := range full {
		full[i] = SendWR{ID: uint64(100 + i), Op: OpWrite, Flags: SendSignaled, SGEs: one, RemoteAddr: mr.Addr() + 4096, RKey: mr.RKey()}
	}
	if err := a.PostSend(full); err != nil {
		t.Fatal(err)
	}
	for _, wc := range pollN(t, cq, len(full)) {
		if wc.Status != WCSuccess {
			t.Fatalf("%+v", wc)
		}
	}
}

// The hot path allocates nothing: post a receive and a send, poll both.
// Post, poll and arm allocate nothing, with the ring locks taken and with
// them elided (SingleGoroutine).
func TestVerbsHotPathAllocs(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("SingleGoroutine=%v", single), func(t *testing.T) { verbsHotPathAllocs(t, single) })
	}
}

func verbsHotPathAllocs(t *testing.T, single bool) {
	e := newVerbsEnv(t)
	_, mr := e.memory(8192)
	ch := e.channel()
	cq, err := e.ctx.CreateCQ(CQInit{Depth: 64, Channel: ch, SingleGoroutine: single})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "CQ", cq.Close)
	init := QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap, SingleGoroutine: single}
	a, b := e.qp(init), e.qp(init)
	e.connect(a, b)
	recv := []RecvWR{{ID: 1, SGEs: []SGE{mr.SGE(4096, 256)}}}
	send := []SendWR{{ID: 2, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 128), mr.SGE(128, 128)}}}
	write := []SendWR{{ID: 3, Op: OpWrite, Flags: SendSignaled | SendInline, SGEs: []SGE{mr.SGE(0, 32)}, RemoteAddr: mr.Addr() + 2048, RKey: mr.RKey()}}
	wcs := make([]WC, 8)
	var failed error
	round := func() {
		if failed != nil {
			return // a lost completion must not make every round wait
		}
		if err := b.PostRecv(recv); err != nil {
			failed = err
			return
		}
		if err := a.PostSend(send); err != nil {
			failed = err
			return
		}
		if err := a.PostSend(write); err != nil {
			failed = err
			return
		}
		deadline := time.Now().Add(20 * time.Second)
		for got := 0; got < 3; {
			if time.Now().After(deadline) {
				failed = fmt.Errorf("only %d of 3 completions within 20s", got)
				return
			}
			n, err := cq.Poll(wcs)
			if err != nil {
				failed = err
				return
			}
			for _, wc := range wcs[:n] {
				if wc.Status != WCSuccess {
					failed = wc.Status.Err()
				}
			}
			got += n
		}
		if err := cq.ReqNotify(false); err != nil {
			failed = err
		}
	}
	round() // warm up
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("post + poll allocates %v times per round", n)
	}
	if failed != nil {
		t.Fatal(failed)
	}
}

func TestVerbsUC(t *testing.T) {
	e := newVerbsEnv(t)
	buf, mr := e.memory(8192)
	cq := e.cq(64, nil)
	a := e.qp(QPInit{Type: UC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	b := e.qp(QPInit{Type: UC, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
	e.connect(a, b)
	for _, q := range []*QP{a, b} {
		attr, err := q.Query(QPAttrAll)
		if err != nil {
			t.Fatal(err)
		}
		if attr.State != QPStateRTS || attr.DestQPN == 0 || attr.AH.DGID != e.gid || attr.PathMTU == 0 {
			t.Fatalf("UC QP %#x attributes %+v", q.QPN(), attr)
		}
	}
	mem := buf.Bytes()
	fillPattern(mem[:512], 21)
	if err := b.PostRecv([]RecvWR{{ID: 7, SGEs: []SGE{mr.SGE(4096, 512)}}, {ID: 8}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{
		{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{mr.SGE(0, 256)}},
		{ID: 2, Op: OpWriteImm, Imm: 99, Flags: SendSignaled, SGEs: []SGE{mr.SGE(256, 256)}, RemoteAddr: mr.Addr() + 6000, RKey: mr.RKey()},
	}); err != nil {
		t.Fatal(err)
	}
	got := byID(t, pollN(t, cq, 4))
	expectWC(t, got[1], true, WCOpSend, a.QPN(), 256)
	expectWC(t, got[2], true, WCOpRDMAWrite, a.QPN(), 256)
	expectWC(t, got[7], true, WCOpRecv, b.QPN(), 256)
	wc, ok := got[8]
	expectWC(t, wc, ok, WCOpRecvRDMAWithImm, b.QPN(), 256)
	if wc.Imm != 99 {
		t.Errorf("imm %d", wc.Imm)
	}
	if !bytes.Equal(mem[4096:4096+256], mem[:256]) || !bytes.Equal(mem[6000:6256], mem[256:512]) {
		t.Error("UC data differs")
	}
	err := a.PostSend([]SendWR{{ID: 3, Op: OpRead, SGEs: []SGE{mr.SGE(0, 8)}, RemoteAddr: mr.Addr(), RKey: mr.RKey()}})
	if !errors.Is(err, ErrOpcodeNotSupported) {
		t.Errorf("RDMA READ on UC: %v", err)
	}
}

// Posting and polling from several goroutines while the Device closes:
// every call either works or returns ErrClosed; nothing touches a ring after
// it is unmapped (that would crash the test binary).
func TestVerbsConcurrentPostPollClose(t *testing.T) {
	testutil.RequireRDMA(t)
	c, err := Open(testutil.LoopbackDevice(t))
	if err != nil {
		t.Fatal(err)
	}
	e := &verbsEnv{t: t, ctx: c}
	idx, err := c.GIDIndexForIP(1, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	e.gidIdx, e.gid = idx, GIDFromIP(netip.MustParseAddr("127.0.0.1"))
	if e.pd, err = c.AllocPD(); err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(CQInit{Depth: 1024})
	if err != nil {
		t.Fatal(err)
	}
	mk := func() *QP {
		qp, err := e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return qp
	}
	a, b := mk(), mk()
	e.connect(a, b)
	buf, err := AllocBuffer(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := e.pd.RegMR(buf.Bytes(), allAccess)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	errs := make(chan error, 8)
	worker := func(f func() error) {
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if err := f(); err != nil {
				if errors.Is(err, ErrClosed) {
					errs <- nil
				} else {
					errs <- err
				}
				return
			}
		}
	}
	wcs := make([]WC, 32)
	for i := range 3 {
		wr := []SendWR{{ID: uint64(i), Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{mr.SGE(i*64, 64)}, RemoteAddr: mr.Addr() + 32768, RKey: mr.RKey()}}
		go worker(func() error {
			err := a.PostSend(wr)
			if errors.Is(err, ErrQueueFull) {
				return nil
			}
			return err
		})
	}
	go worker(func() error {
		_, err := cq.Poll(wcs)
		return err
	})
	go worker(func() error { return b.PostRecv(nil) })
	time.Sleep(300 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	for range 5 {
		if err := <-errs; err != nil {
			t.Errorf("worker: %v", err)
		}
	}
	if err := buf.Close(); err != nil {
		t.Error(err)
	}
}
