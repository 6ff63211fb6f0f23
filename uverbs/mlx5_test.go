package uverbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/mmio"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The mlx5 seam on the host, without a ConnectX: the commands' driver data
// field by field against docs/mlx5.md §8 and §10, and the data path
// through QP.PostSend, PostRecv, SRQ.PostRecv, CQ.Poll and ReqNotify on a
// Device whose context, rings and UAR page are plain memory.

var be = binary.BigEndian

func TestMLX5CreateCommands(t *testing.T) {
	page := os.Getpagesize()
	q, err := mlx5.NewQueue(3*64+5, "test queue")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Unmap()
	if q.RingAddr()%uint64(page) != 0 || q.DBRecAddr()%uint64(page) != 0 || q.DBRecAddr() <= q.RingAddr() {
		t.Fatalf("ring at %#x, doorbell record at %#x: both must be page-aligned, the record after the ring", q.RingAddr(), q.DBRecAddr())
	}
	le := binary.LittleEndian

	// CREATE_CQ: the driver data follows the 32-byte core command.
	cq := struct {
		core abi.UverbsCreateCQ
		drv  abi.Mlx5CreateCQ
	}{abi.UverbsCreateCQ{CQE: 7}, mlx5.CreateCQCmd(q.RingAddr(), q.DBRecAddr())}
	b := bytesOf(&cq)
	if len(b) != 32+32 {
		t.Fatalf("CREATE_CQ command is %d bytes, want 64", len(b))
	}
	d := b[32:]
	if le.Uint64(d[0:]) != q.RingAddr() || le.Uint64(d[8:]) != q.DBRecAddr() || le.Uint32(d[16:]) != 64 || !zero(d[20:]) {
		t.Errorf("mlx5_ib_create_cq: % x", d)
	}

	// CREATE_QP: after the 56-byte core command; no flags, no bfreg index.
	sq := mlx5.SQConfig{WQECount: 16}
	rq := mlx5.RQConfig{WQECount: 8, WQEShift: 5}
	qp := struct {
		core abi.UverbsCreateQP
		drv  abi.Mlx5CreateQP
	}{abi.UverbsCreateQP{}, mlx5.CreateQPCmd(q.RingAddr(), q.DBRecAddr(), sq, rq, 0x1234)}
	b = bytesOf(&qp)
	if len(b) != 56+56 {
		t.Fatalf("CREATE_QP command is %d bytes, want 112", len(b))
	}
	d = b[56:]
	// mlx5_ib_create_qp: buf_addr 0, db_addr 8, sq_wqe_count 16,
	// rq_wqe_count 20, rq_wqe_shift 24, flags 28, uidx 32, bfreg_index 36,
	// sq_buf_addr 40, ece_options 48.
	if le.Uint64(d[0:]) != q.RingAddr() || le.Uint64(d[8:]) != q.DBRecAddr() ||
		le.Uint32(d[16:]) != 16 || le.Uint32(d[20:]) != 8 || le.Uint32(d[24:]) != 5 ||
		le.Uint32(d[28:]) != 0 || le.Uint32(d[32:]) != 0x1234 || !zero(d[36:]) {
		t.Errorf("mlx5_ib_create_qp: % x", d)
	}

	// CREATE_SRQ: after the 32-byte core command; buf_addr 0, db_addr 8,
	// flags 16, uidx 24.
	srq := struct {
		core abi.UverbsCreateSRQ
		drv  abi.Mlx5CreateSRQ
	}{abi.UverbsCreateSRQ{}, mlx5.CreateSRQCmd(q.RingAddr(), q.DBRecAddr())}
	b = bytesOf(&srq)
	if len(b) != 32+32 {
		t.Fatalf("CREATE_SRQ command is %d bytes, want 64", len(b))
	}
	d = b[32:]
	if le.Uint64(d[0:]) != q.RingAddr() || le.Uint64(d[8:]) != q.DBRecAddr() || !zero(d[16:]) {
		t.Errorf("mlx5_ib_create_srq: % x", d)
	}
}

func zero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// fakeMLX5 is a Device with an mlx5 context over a plain-memory UAR page.
type fakeMLX5 struct {
	c   *Device
	uar []byte
	pd  *PD
}

func newFakeMLX5(tb testing.TB) *fakeMLX5 { return newFakeMLX5V(tb, 1) }

// newFakeMLX5V is newFakeMLX5 with CQE version v.
func newFakeMLX5V(tb testing.TB, v int) *fakeMLX5 {
	tb.Helper()
	m, err := sys.MmapAnon(4096, "fake uar")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Unmap() })
	mc := mlx5.NewContextState(mlx5.DeviceLimits{MaxSQDescSize: 512, MaxRQDescSize: 512, MaxSendWQEBB: 1 << 16, MaxRecvWR: 1 << 15, MaxSRQRecvWR: 1 << 15}, v)
	// One UAR: bfreg 1 is low-latency (unlocked), 2 and 3 are shared.
	if err := mc.LayBFRegs([][]byte{m.Bytes()}, 1, 512, 1, func() sync.Locker { return new(ringLock) }); err != nil {
		tb.Fatal(err)
	}
	c := &Device{dev: DeviceInfo{Name: "mlx5_fake", DriverID: DriverMLX5}, deviceProvider: deviceProvider{drv: mc}}
	c.devAttr.Store(&DeviceAttr{AtomicCap: AtomicHCA})
	return &fakeMLX5{c: c, uar: m.Bytes(), pd: &PD{ctx: c}}
}

func (f *fakeMLX5) cq(tb testing.TB, depth int, cqn uint32) *CQ {
	tb.Helper()
	entries, err := mlx5.CQEntries(depth)
	if err != nil {
		tb.Fatal(err)
	}
	mem, err := mlx5.NewQueue(entries*mlx5.CQESize, "fake cq")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(mem.Unmap)
	mlx5.InitCQRing(mem.Ring)
	m, err := mlx5.AttachCQ(f.c.drv.(*mlx5.Context), mem, entries, cqn)
	if err != nil {
		tb.Fatal(err)
	}
	cq := &CQ{ctx: f.c, ch: &CompChannel{}, drv: m}
	cq.depth.Store(int32(m.Depth()))
	return cq
}

func (f *fakeMLX5) qp(tb testing.TB, init QPInit, qpn uint32, bfreg int) *QP {
	tb.Helper()
	mc := f.c.drv.(*mlx5.Context)
	sq, sqBytes, err := mlx5.SQSize(&mc.Lim, mlx5.QPType(init.Type), init.Cap.MaxSendWR, init.Cap.MaxSendSGE, init.Cap.MaxInline)
	if err != nil {
		tb.Fatal(err)
	}
	var rq mlx5.RQConfig
	rqBytes := 0
	if init.SRQ == nil {
		if rq, rqBytes, err = mlx5.RQSize(&mc.Lim, init.Cap.MaxRecvWR, init.Cap.MaxRecvSGE); err != nil {
			tb.Fatal(err)
		}
	}
	mem, err := mlx5.NewQueue(rqBytes+sqBytes, "fake qp")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(mem.Unmap)
	uidx, err := mc.AllocUIDX()
	if err != nil {
		tb.Fatal(err)
	}
	qp := &QP{ctx: f.c, pd: f.pd, typ: init.Type, sendCQ: init.SendCQ, recvCQ: init.RecvCQ, srq: init.SRQ, qpn: qpn}
	atomics := false
	if a := f.c.deviceLimits(); a != nil {
		atomics = a.AtomicCap != AtomicNone
	}
	m, err := mlx5.AttachQP(mc, mem, uidx, bfreg, qpn, sq, rq, init.SignalAll, atomics)
	if err != nil {
		tb.Fatal(err)
	}
	qp.attachProvider(m, &init)
	qp.state.Store(uint32(QPStateRTS))
	return qp
}

func (f *fakeMLX5) srq(tb testing.TB, maxWR, maxSGE int) *SRQ {
	tb.Helper()
	mc := f.c.drv.(*mlx5.Context)
	cfg, n, err := mlx5.SRQSize(&mc.Lim, maxWR, maxSGE)
	if err != nil {
		tb.Fatal(err)
	}
	mem, err := mlx5.NewQueue(n, "fake srq")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(mem.Unmap)
	q, err := mlx5.NewSRQ(mem.Ring, mem.DBRec[:4], cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &SRQ{ctx: f.c, pd: f.pd, srqn: 0x55, drv: mlx5.NewSRQState(f.c.drv.(*mlx5.Context), q, mem, 0x55)}
}

// putCQE writes completion n of a CQ as the device would: opcode and owner
// bit (the wrap parity of n) in op_own, the user index in srqn_uidx, the
// WQE opcode and QPN in sop_drop_qpn, byte_cnt and wqe_counter
// (docs/mlx5.md §5).
func putCQE(cq *CQ, n int, opcode, wqeOpcode uint8, qpn, uidx uint32, counter uint16, byteCnt uint32) {
	ring := cq.drv.(*mlx5.CQState).Mem.Ring
	entries := len(ring) / 64
	e := ring[(n&(entries-1))*64:][:64]
	clear(e)
	be.PutUint32(e[32:], uidx)
	be.PutUint32(e[44:], byteCnt)
	be.PutUint32(e[56:], uint32(wqeOpcode)<<24|qpn)
	be.PutUint16(e[60:], counter)
	e[63] = opcode<<4 | uint8(n/entries)&1
}

func TestMLX5DataPath(t *testing.T) {
	f := newFakeMLX5(t)
	cq := f.cq(t, 15, 0x77)
	if cq.Depth() != 15 {
		t.Errorf("CQ depth %d, want 15 (16 entries less one)", cq.Depth())
	}
	qp := f.qp(t, QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}, 0x123, 1)
	m := qp.drv.(*mlx5.QPState)
	if c := qp.Cap(); c.MaxSendWR != m.SQ.Config().MaxPost || c.MaxRecvWR != 4 || c.MaxRecvSGE != 1 {
		t.Errorf("Cap %+v does not report the queues' max_post and max_gs", c)
	}

	// A signalled SEND: control segment, one data segment, doorbell
	// record word 1, and the WQE through BlueFlame (docs/mlx5.md §3, §4).
	sge := SGE{Addr: 0x1000, Length: 100, LKey: 0xabcd}
	if err := qp.PostSend([]SendWR{{ID: 7, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{sge}}}); err != nil {
		t.Fatal(err)
	}
	w := m.SQRing
	if got := be.Uint32(w[0:]); got != 0x0a {
		t.Errorf("opmod_idx_opcode %#x, want SEND at index 0", got)
	}
	if got := be.Uint32(w[4:]); got != 0x123<<8|2 {
		t.Errorf("qpn_ds %#x, want QPN 0x123, 2 segments", got)
	}
	if w[11] != 0x08 {
		t.Errorf("fm_ce_se %#x, want 0x08 (signalled)", w[11])
	}
	if be.Uint32(w[16:]) != 100 || be.Uint32(w[20:]) != 0xabcd || be.Uint64(w[24:]) != 0x1000 {
		t.Errorf("data segment % x", w[16:32])
	}
	if got := be.Uint32(m.Mem.DBRec[4:]); got != 1 {
		t.Errorf("send doorbell record %d, want 1", got)
	}
	reg := f.c.drv.(*mlx5.Context).BFRegs[1].BF.Reg
	if string(reg[:64]) != string(w[:64]) {
		t.Errorf("BlueFlame register holds % x, want the WQE", reg[:64])
	}

	// Receive, then a SEND completion and a receive completion.
	if err := qp.PostRecv([]RecvWR{{ID: 9, SGEs: []SGE{{Addr: 0x2000, Length: 256, LKey: 0x11}}}}); err != nil {
		t.Fatal(err)
	}
	if be.Uint32(m.RQRing[0:]) != 256 || be.Uint32(m.RQRing[4:]) != 0x11 || be.Uint32(m.Mem.DBRec[0:]) != 1 {
		t.Errorf("receive WQE % x, doorbell record %d", m.RQRing[:16], be.Uint32(m.Mem.DBRec[0:]))
	}
	putCQE(cq, 0, 0, 0x0a, 0x123, m.UIDX, 0, 0) // REQ, SEND
	putCQE(cq, 1, 2, 0, 0x123, m.UIDX, 0, 42)   // RESP_SEND
	wcs := make([]WC, 4)
	for i := range wcs {
		wcs[i] = WC{SrcQP: 0xdead, SLID: 3, Port: 9} // left from an earlier poll
	}
	n, err := cq.Poll(wcs)
	if err != nil || n != 2 {
		t.Fatalf("Poll: %d, %v; want 2 completions", n, err)
	}
	for _, wc := range wcs[:2] {
		if wc.SrcQP != 0 || wc.SLID != 0 || wc.Port != 0 {
			t.Errorf("completion %+v keeps fields it does not fill from before the poll", wc)
		}
	}
	if wcs[0].ID != 7 || wcs[0].Status != WCSuccess || wcs[0].Opcode != WCOpSend || wcs[0].QPN != 0x123 {
		t.Errorf("send completion %+v", wcs[0])
	}
	if wcs[1].ID != 9 || wcs[1].Status != WCSuccess || wcs[1].Opcode != WCOpRecv || wcs[1].ByteLen != 42 {
		t.Errorf("receive completion %+v", wcs[1])
	}
	if got := be.Uint32(cq.drv.(*mlx5.CQState).Mem.DBRec[0:]); got != 2 {
		t.Errorf("consumer index in the CQ doorbell record %d, want 2", got)
	}
	if s, r := qp.pendingNow(); s != 0 || r != 0 {
		t.Errorf("%d sends and %d receives outstanding after their completions", s, r)
	}
	// A posted receive keeps its MR's key in use; a completed one does not.
	if err := qp.PostRecv([]RecvWR{{ID: 10, SGEs: []SGE{{Addr: 0x2000, Length: 256, LKey: 0x12}}}}); err != nil {
		t.Fatal(err)
	}
	if used, s, r := qp.usesLKey(0x12); !used || s != 0 || r != 1 {
		t.Errorf("lkey 0x12: used %v with %d sends and %d receives outstanding, want true, 0, 1", used, s, r)
	}
	if used, _, _ := qp.usesLKey(0x11); used {
		t.Error("the completed receive's lkey 0x11 is reported in use")
	}

	// Arm: doorbell record word 1, then the CQ doorbell at UAR + 0x20
	// (docs/mlx5.md §5).
	if err := cq.ReqNotify(true); err != nil {
		t.Fatal(err)
	}
	word := uint32(1<<24 | 2)
	if got := be.Uint32(cq.drv.(*mlx5.CQState).Mem.DBRec[4:]); got != word {
		t.Errorf("arm word %#x, want %#x", got, word)
	}
	if got := be.Uint64(f.uar[0x20:]); got != uint64(word)<<32|0x77 {
		t.Errorf("CQ doorbell %#x", got)
	}

	// The same refusals as on rxe, before anything is written.
	err = qp.PostSend([]SendWR{{ID: 1, Op: OpSend, SGEs: []SGE{sge, sge}}})
	if !errors.Is(err, ErrTooManySGEs) {
		t.Errorf("two SGEs on a one-SGE QP: %v, want ErrTooManySGEs", err)
	}
	// And what only mlx5 refuses: IBV_SEND_IP_CSUM, which rxe takes.
	// Its errors match this package's and libmlx5's errno.
	err = qp.PostSend([]SendWR{{ID: 1, Op: OpSend, Flags: 16}})
	if !errors.Is(err, ErrBadSendFlags) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, unix.EINVAL) || errors.Is(err, ErrTooManySGEs) {
		t.Errorf("a SEND with the IP checksum flag: %v, want ErrBadSendFlags, ErrInvalidWR and EINVAL", err)
	}
	full := make([]SendWR, m.SQ.Config().MaxPost+1)
	for i := range full {
		full[i] = SendWR{ID: uint64(i), Op: OpSend}
	}
	var pe *PostError
	if err := qp.PostSend(full); !errors.Is(err, ErrQueueFull) || !errors.As(err, &pe) || pe.Index != len(full)-1 {
		t.Errorf("%d sends on a %d-entry queue: %v, want ErrQueueFull at index %d", len(full), len(full)-1, err, len(full)-1)
	}
	rfull := make([]RecvWR, 5)
	if err := qp.PostRecv(rfull); !errors.Is(err, ErrQueueFull) || !errors.As(err, &pe) || pe.Index != 3 {
		t.Errorf("5 receives on a 4-entry queue holding one: %v, want ErrQueueFull at index 3", err)
	}
	if got := be.Uint32(m.Mem.DBRec[4:]); got != 1 {
		t.Errorf("refused posts moved the send doorbell record to %d", got)
	}
}

func TestMLX5SRQ(t *testing.T) {
	for _, v := range []int{0, 1} {
		f := newFakeMLX5V(t, v)
		cq := f.cq(t, 7, 0x78)
		srq := f.srq(t, 4, 1)
		qp := f.qp(t, QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 2, MaxSendSGE: 1}}, 0x200, 2)
		if err := qp.PostRecv([]RecvWR{{ID: 1}}); err == nil {
			t.Error("PostRecv on a QP with an SRQ was accepted")
		}
		if err := srq.PostRecv([]RecvWR{{ID: 31, SGEs: []SGE{{Addr: 0x3000, Length: 64, LKey: 5}}}, {ID: 32}}); err != nil {
			t.Fatal(err)
		}
		if got := be.Uint32(srq.drv.(*mlx5.SRQState).Mem.DBRec[0:]); got != 2 {
			t.Errorf("SRQ doorbell record %d, want 2", got)
		}
		// libmlx5 reports max_wr = the free list's tail, roundup_pow2(4+1)
		// − 1 (verbs.c mlx5_create_srq).
		if srq.MaxWR() != 7 || srq.MaxSGE() != 1 {
			t.Errorf("SRQ max_wr %d, max_sge %d", srq.MaxWR(), srq.MaxSGE())
		}
		// The second entry completes first. CQE version 0 names the SRQ by
		// SRQN; version 1 names the QP by its user index, whose SRQ gives
		// the receive (docs/mlx5.md §5).
		name := srq.srqn
		if v == 1 {
			name = qp.drv.(*mlx5.QPState).UIDX
		}
		putCQE(cq, 0, 2, 0, 0x200, name, 1, 8)
		wcs := make([]WC, 2)
		n, err := cq.Poll(wcs)
		if err != nil || n != 1 || wcs[0].ID != 32 || wcs[0].ByteLen != 8 || wcs[0].QPN != 0x200 {
			t.Fatalf("CQE version %d: Poll: %d, %v, %+v; want the SRQ's request 32 on QP 0x200", v, n, err, wcs[0])
		}
		if !cq.drv.(*mlx5.CQState).SRQs {
			t.Error("the CQ of a QP with an SRQ does not take the SRQ lock")
		}
		// Request 31 is still posted and names lkey 5 (MR.Close asks).
		if used, n := srq.usesLKey(5); !used || n != 1 {
			t.Errorf("SRQ: lkey 5 used %v by %d posted receives, want true and 1", used, n)
		}
		if used, _ := srq.usesLKey(6); used {
			t.Error("SRQ: lkey 6 reported in use")
		}
		// Six of the seven entries are free: a list of seven is refused
		// at its seventh, before anything is posted.
		var pe *PostError
		if err := srq.PostRecv(make([]RecvWR, 7)); !errors.Is(err, ErrQueueFull) || !errors.As(err, &pe) || pe.Index != 6 {
			t.Errorf("seven receives on an SRQ with room for six: %v, want ErrQueueFull at index 6", err)
		}
		if got := be.Uint32(srq.drv.(*mlx5.SRQState).Mem.DBRec[0:]); got != 2 {
			t.Errorf("SRQ doorbell record %d after a refused list, want 2", got)
		}
	}
}

func TestMLX5HotPathAllocs(t *testing.T) {
	f := newFakeMLX5(t)
	cq := f.cq(t, 63, 0x79)
	qp := f.qp(t, QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}}, 0x300, 3)
	wr := []SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x1000, Length: 8, LKey: 1}}, RemoteAddr: 0x9000, RKey: 2}}
	rwr := []RecvWR{{ID: 2, SGEs: []SGE{{Addr: 0x2000, Length: 8, LKey: 1}}}}
	wcs := make([]WC, 4)
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		if err := qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		if err := qp.PostRecv(rwr); err != nil {
			t.Fatal(err)
		}
		putCQE(cq, 2*i, 0, 0x08, 0x300, qp.drv.(*mlx5.QPState).UIDX, uint16(i), 0)
		putCQE(cq, 2*i+1, 2, 0, 0x300, qp.drv.(*mlx5.QPState).UIDX, uint16(i), 8)
		i++
		if n, err := cq.Poll(wcs); n != 2 || err != nil {
			t.Fatalf("Poll: %d, %v", n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("PostSend, PostRecv and Poll on mlx5 allocate %.1f times per round", allocs)
	}
}

func TestMLX5UDSend(t *testing.T) {
	f := newFakeMLX5(t)
	cq := f.cq(t, 7, 0x7a)
	qp := f.qp(t, QPInit{Type: UD, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 2, MaxRecvWR: 2, MaxSendSGE: 1, MaxRecvSGE: 1}}, 0x400, 2)
	a := mlx5.AHAttr{DLID: 0x21, SL: 3}
	av, err := mlx5.BuildAV(&a, mlx5.PortLink{}, [6]byte{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ah := &AH{pd: f.pd, drv: mlx5AH(av)}
	sge := SGE{Addr: 0x5000, Length: 10, LKey: 0x33}
	if err := qp.PostSend([]SendWR{{ID: 1, Op: OpSend, SGEs: []SGE{sge}, AH: ah, RemoteQPN: 0x99, RemoteQKey: 0x11111111}}); err != nil {
		t.Fatal(err)
	}
	// Control segment, the AH's address vector with the Q_Key at 0 and
	// the remote QPN | 0x80000000 at 8, then the data segment
	// (docs/mlx5.md §3).
	w := qp.drv.(*mlx5.QPState).SQRing
	if got := be.Uint32(w[4:]); got != 0x400<<8|5 {
		t.Errorf("qpn_ds %#x, want QPN 0x400, 5 segments", got)
	}
	d := w[16:64]
	if be.Uint32(d[0:]) != 0x11111111 || be.Uint32(d[8:]) != 0x80000099 || string(d[12:]) != string(av[12:]) {
		t.Errorf("datagram segment % x, address vector % x", d, av[:])
	}
	if be.Uint32(w[64:]) != 10 || be.Uint32(w[68:]) != 0x33 || be.Uint64(w[72:]) != 0x5000 {
		t.Errorf("data segment % x", w[64:80])
	}
	// A UD send without an AH is refused before anything is written.
	if err := qp.PostSend([]SendWR{{ID: 2, Op: OpSend, SGEs: []SGE{sge}}}); !errors.Is(err, ErrUDAddress) {
		t.Errorf("UD send without an AH: %v, want ErrUDAddress", err)
	}
}

// A QP created with no receive queue (MaxRecvWR 0, no SRQ) refuses
// receives with ErrQueueFull, as libmlx5 and the rxe path do, instead of
// touching a queue it does not have.
func TestMLX5NoReceiveQueue(t *testing.T) {
	f := newFakeMLX5(t)
	cq := f.cq(t, 15, 0x78)
	qp := f.qp(t, QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxSendSGE: 1}}, 0x124, 1)
	err := qp.PostRecv([]RecvWR{{ID: 9, SGEs: []SGE{{Addr: 0x1000, Length: 64, LKey: 1}}}})
	var pe *PostError
	if !errors.As(err, &pe) || !errors.Is(err, ErrQueueFull) || pe.ID != 9 {
		t.Fatalf("PostRecv on a QP without a receive queue: %v, want a *PostError for ID 9 matching ErrQueueFull", err)
	}
}

// Posts and polls of one CQ run side by side without the CQ's lock
// (mlx5.SQ): three QPs post from their own goroutines, one on a bfreg of
// its own and two sharing one, while a fake device answers each doorbell
// with completions and polls them. The race detector does not see the
// fake device's reads of the doorbell records (mapped memory), so it
// checks what orders a post and a poll in Go: head stored after the IDs
// and loaded before one is read, tail stored after the ID is read and
// loaded before the slot is reused, and the shared bfreg's lock. Every
// request comes back once, in order.
func TestMLX5PostBesidePoll(t *testing.T) {
	f := newFakeMLX5(t)
	if f.c.drv.(*mlx5.Context).BFRegs[1].BF.Lock != nil || f.c.drv.(*mlx5.Context).BFRegs[2].BF.Lock == nil {
		t.Fatal("the fake's bfreg 1 should be its QP's own and bfreg 2 shared")
	}
	cq := f.cq(t, 255, 0x7b)
	// Small queues, polled one completion at a time, so that posts wait
	// for room and reuse a slot as soon as a poll frees it: UD, whose
	// send takes both WQEBBs of a two-WQEBB ring, so every send reuses
	// the ID slot the last poll read.
	init := QPInit{Type: UD, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}
	qps := []*QP{f.qp(t, init, 0x501, 1), f.qp(t, init, 0x502, 2), f.qp(t, init, 0x503, 2)}
	const n = 3000
	var wg sync.WaitGroup
	for _, qp := range qps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sge := []SGE{{Addr: 0x1000, Length: 8, LKey: 1}}
			for s, r := uint64(0), uint64(0); s < n || r < n; runtime.Gosched() {
				var err error
				if s < n {
					if err = qp.PostSend([]SendWR{{ID: s, Op: OpSend, Flags: SendSignaled, SGEs: sge, AH: &AH{pd: f.pd, drv: provider.AH{Num: mlx5.AHNum}}, RemoteQPN: 1, RemoteQKey: 2}}); err == nil {
						s++
					}
				}
				if r < n && (err == nil || errors.Is(err, ErrQueueFull)) {
					if err = qp.PostRecv([]RecvWR{{ID: r, SGEs: sge}}); err == nil {
						r++
					}
				}
				if err != nil && !errors.Is(err, ErrQueueFull) {
					t.Error(err)
					return
				}
			}
		}()
	}
	// The device: each doorbell record's counters say how many requests
	// the QP has posted (two WQEBBs per UD send); it completes them, a REQ for
	// a send and a RESP_SEND for a receive, then the CQ is polled.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	type seen struct{ sent, recvd, sendWC, recvWC uint32 }
	st := make([]seen, len(qps))
	cqe := 0
	wcs := make([]WC, 1)
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true // one more round picks up the last doorbells
		default:
		}
		for k, qp := range qps {
			m, s := qp.drv.(*mlx5.QPState), &st[k]
			recvDB := bits.ReverseBytes32(mmio.LoadAcquire32(mmio.U32(m.Mem.DBRec, 0)))
			sendDB := bits.ReverseBytes32(mmio.LoadAcquire32(mmio.U32(m.Mem.DBRec, 4)))
			for ; s.sent&0xffff != sendDB; s.sent += 2 {
				putCQE(cq, cqe, 0, 0x0a, qp.qpn, m.UIDX, uint16(s.sent), 0)
				cqe++
			}
			for ; s.recvd&0xffff != recvDB; s.recvd++ {
				putCQE(cq, cqe, 2, 0, qp.qpn, m.UIDX, 0, 8)
				cqe++
			}
		}
		for {
			got, err := cq.Poll(wcs)
			if err != nil {
				t.Fatal(err)
			}
			for _, wc := range wcs[:got] {
				k := int(wc.QPN - 0x501)
				want := &st[k].sendWC
				if wc.Opcode == WCOpRecv {
					want = &st[k].recvWC
				}
				if wc.Status != WCSuccess || wc.ID != uint64(*want) {
					t.Fatalf("QP %#x: completion %+v, want ID %d", wc.QPN, wc, *want)
				}
				*want++
			}
			if got < len(wcs) {
				break
			}
		}
		runtime.Gosched()
	}
	for k, qp := range qps {
		if s := st[k]; s.sendWC != n || s.recvWC != n {
			t.Errorf("QP %#x: %d sends and %d receives completed, want %d each", qp.qpn, s.sendWC, s.recvWC, n)
		}
		if s, r := qp.outstanding(); s != 0 || r != 0 {
			t.Errorf("QP %#x: %d sends and %d receives outstanding at the end", qp.qpn, s, r)
		}
	}
}

// Send lists go to the mlx5 encoder and completions come from its decoder
// as they are (sendWRs, mlx5.SendWRs, mlx5.WCs), so the opcodes, flags and statuses
// must have the provider's values, and an AH must read as its address
// vector.
func TestMLX5SharedValues(t *testing.T) {
	ops := map[WROpcode]mlx5.SendOpcode{
		OpWrite: mlx5.OpRDMAWrite, OpWriteImm: mlx5.OpRDMAWriteWithImm, OpSend: mlx5.OpSend, OpSendImm: mlx5.OpSendWithImm,
		OpRead: mlx5.OpRDMARead, OpAtomicCmpSwap: mlx5.OpAtomicCmpAndSwp, OpAtomicFetchAdd: mlx5.OpAtomicFetchAndAdd, OpSendInv: mlx5.OpSendWithInv,
	}
	for op, want := range ops {
		if mlx5.SendOpcode(op) != want {
			t.Errorf("%v is %d, the encoder's %d", op, op, want)
		}
	}
	flags := map[SendFlags]mlx5.SendFlags{SendFence: mlx5.SendFence, SendSignaled: mlx5.SendSignaled, SendSolicited: mlx5.SendSolicited, SendInline: mlx5.SendInline}
	for f, want := range flags {
		if mlx5.SendFlags(f) != want {
			t.Errorf("send flag %#x is the encoder's %#x", f, want)
		}
	}
	// The completion values the decoder writes into a WC.
	wcOps := map[WCOpcode]uint32{WCOpSend: mlx5.WCOpSend, WCOpRDMAWrite: mlx5.WCOpRDMAWrite, WCOpRDMARead: mlx5.WCOpRDMARead,
		WCOpCompSwap: mlx5.WCOpCompSwap, WCOpFetchAdd: mlx5.WCOpFetchAdd, WCOpRecv: mlx5.WCOpRecv, WCOpRecvRDMAWithImm: mlx5.WCOpRecvRDMAImm}
	for op, want := range wcOps {
		if uint32(op) != want {
			t.Errorf("%v is %d, the decoder's %d", op, op, want)
		}
	}
	wcFlags := map[WCFlags]uint32{WCGRH: mlx5.WCFlagGRH, WCWithImm: mlx5.WCFlagWithImm, WCWithInvalidate: mlx5.WCFlagWithInv}
	for f, want := range wcFlags {
		if uint32(f) != want {
			t.Errorf("completion flag %v is %#x, the decoder's %#x", f, uint32(f), want)
		}
	}
	statuses := map[WCStatus]uint32{WCSuccess: mlx5.WCSuccess, WCLocalLengthError: mlx5.WCLocLenErr, WCLocalQPOpError: mlx5.WCLocQPOpErr,
		WCLocalProtectionError: mlx5.WCLocProtErr, WCFlushError: mlx5.WCWRFlushErr, WCMWBindError: mlx5.WCMWBindErr,
		WCBadResponseError: mlx5.WCBadRespErr, WCLocalAccessError: mlx5.WCLocAccessErr, WCRemoteInvalidRequestError: mlx5.WCRemInvReqErr,
		WCRemoteAccessError: mlx5.WCRemAccessErr, WCRemoteOpError: mlx5.WCRemOpErr, WCRetryExceededError: mlx5.WCRetryExcErr,
		WCRNRRetryExceededError: mlx5.WCRNRRetryExcErr, WCRemoteAbortError: mlx5.WCRemAbortErr, WCGeneralError: mlx5.WCGeneralErr}
	for st, want := range statuses {
		if uint32(st) != want {
			t.Errorf("%v is %d, the decoder's %d", st, uint32(st), want)
		}
	}

	ah := &AH{}
	ah.drv.Data[0], ah.drv.Data[47] = 1, 2
	w := []SendWR{{ID: 3, Op: OpSendImm, Flags: SendSignaled, SGEs: []SGE{{Addr: 4, Length: 5, LKey: 6}}, Imm: 7, RemoteAddr: 8, RKey: 9, CompareAdd: 10, Swap: 11, AH: ah, RemoteQPN: 12, RemoteQKey: 13}}
	got := mlx5.SendWRs(sendWRs(w))[0]
	want := mlx5.SendWR{ID: 3, Opcode: mlx5.OpSendWithImm, Flags: mlx5.SendSignaled, SGEs: []mlx5.SGE{{Addr: 4, Length: 5, LKey: 6}}, ImmData: 7, RemoteAddr: 8, RKey: 9, CompareAdd: 10, Swap: 11, AV: (*mlx5.AddressVector)(ah.drv.Data[:]), RemoteQPN: 12, RemoteQKey: 13}
	if !reflect.DeepEqual(got, want) || got.AV != (*mlx5.AddressVector)(ah.drv.Data[:]) {
		t.Errorf("the encoder reads %+v, want %+v", got, want)
	}
}

// Every refusal of the mlx5 encoder reaches the caller as this package's
// error of the same check, with libmlx5's errno; a full queue stays
// ErrQueueFull and no ErrInvalidWR.
func TestMLX5PostErrors(t *testing.T) {
	for _, tc := range []struct {
		err, want error
		errno     unix.Errno
	}{
		{mlx5.ErrBadOpcode, ErrOpcodeNotSupported, unix.EINVAL},
		{mlx5.ErrAtomicsDisabled, ErrOpcodeNotSupported, unix.EOPNOTSUPP},
		{mlx5.ErrBadSendFlags, ErrBadSendFlags, unix.EINVAL},
		{mlx5.ErrTooManySGEs, ErrTooManySGEs, unix.ENOMEM},
		{mlx5.ErrTooManyRecvSGEs, ErrTooManySGEs, unix.EINVAL},
		{mlx5.ErrInlineTooLong, ErrInlineTooLong, unix.ENOMEM},
		{mlx5.ErrInlineNotAllowed, ErrInlineNotAllowed, unix.EINVAL},
		{mlx5.ErrUDAddress, ErrUDAddress, unix.EINVAL},
	} {
		err := providerPostError("post_send", 1, 7, 2, 16, fmt.Errorf("%w: detail", tc.err))
		var pe *PostError
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, tc.errno) || !errors.As(err, &pe) || pe.Index != 1 || pe.ID != 7 {
			t.Errorf("%v: %v, want %v, ErrInvalidWR and %v at index 1, ID 7", tc.err, err, tc.want, tc.errno)
		}
		if errors.Is(err, ErrQueueFull) {
			t.Errorf("%v matches ErrQueueFull", tc.err)
		}
	}
	// A refusal the list does not name is still an ErrInvalidWR.
	if err := providerPostError("post_send", 0, 1, 1, 3, fmt.Errorf("%w: a later check", mlx5.ErrInvalidWR)); !errors.Is(err, ErrInvalidWR) {
		t.Errorf("an unnamed mlx5 refusal: %v, want ErrInvalidWR", err)
	}
	err := providerPostError("post_send", 3, 9, 5, 3, mlx5.ErrQueueFull)
	if !errors.Is(err, ErrQueueFull) || errors.Is(err, ErrInvalidWR) || !errors.Is(err, unix.ENOMEM) {
		t.Errorf("a full queue: %v, want ErrQueueFull and ENOMEM, not ErrInvalidWR", err)
	}
}

// TestMLX5PostFastPaths: PostSend and PostRecv write the common mlx5 list
// themselves, so they must keep every check of the path they shortcut: a
// closed QP, a QP not yet in RTS, a request plainSends does not pass (here
// inline data from memory that is no Buffer or MR, which would be copied),
// and for receives a list, whose every entry is checked (a second receive
// whose SGE lengths overflow 32 bits) and written.
func TestMLX5PostFastPaths(t *testing.T) {
	f := newFakeMLX5(t)
	cq := f.cq(t, 15, 0x77)
	qp := f.qp(t, QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 2, MaxInline: 64}}, 0x123, 1)
	m := qp.drv.(*mlx5.QPState)
	ring := slices.Clone(m.SQRing)
	untouched := func(what string) {
		t.Helper()
		if !bytes.Equal(m.SQRing, ring) || m.SQ.Outstanding() != 0 {
			t.Errorf("%s: the send ring was written", what)
		}
	}
	write := []SendWR{{ID: 1, Op: OpWrite, SGEs: []SGE{{Addr: 0x1000, Length: 8, LKey: 5}}, RemoteAddr: 0x2000, RKey: 6}}

	qp.state.Store(uint32(QPStateRTR))
	if err := qp.PostSend(write); !errors.Is(err, ErrQPState) {
		t.Errorf("PostSend in RTR: %v, want ErrQPState", err)
	}
	untouched("PostSend in RTR")
	qp.state.Store(uint32(QPStateRTS))

	qp.closed = true
	if err := qp.PostSend(write); !errors.Is(err, ErrClosed) {
		t.Errorf("PostSend on a closed QP: %v, want ErrClosed", err)
	}
	untouched("PostSend on a closed QP")
	qp.closed = false

	heap := make([]byte, 64)
	inl := []SendWR{{ID: 2, Op: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: uint64(uintptr(unsafe.Pointer(&heap[0]))), Length: 64}}}}
	if err := qp.PostSend(inl); !errors.Is(err, ErrInvalidWR) {
		t.Errorf("inline data from no Buffer or MR: %v, want ErrInvalidWR", err)
	}
	untouched("inline data from no Buffer or MR")

	if err := qp.PostSend(write); err != nil {
		t.Fatalf("a plain WRITE: %v", err)
	}
	if m.SQ.Outstanding() != 1 {
		t.Errorf("a plain WRITE left %d requests outstanding, want 1", m.SQ.Outstanding())
	}

	// Receives: a list whose second entry overflows is refused whole.
	one := []SGE{{Addr: 0x3000, Length: 16, LKey: 7}}
	bad := []RecvWR{{ID: 1, SGEs: one}, {ID: 2, SGEs: []SGE{{Addr: 0x4000, Length: 0xffffffff, LKey: 7}, {Addr: 0x5000, Length: 2, LKey: 7}}}}
	if err := qp.PostRecv(bad); !errors.Is(err, ErrInvalidWR) {
		t.Errorf("a receive list with an overflowing second entry: %v, want ErrInvalidWR", err)
	}
	if n := m.RQ.Outstanding(); n != 0 {
		t.Errorf("a refused receive list posted %d receives", n)
	}
	if err := qp.PostRecv([]RecvWR{{ID: 3, SGEs: one}, {ID: 4, SGEs: one}, {ID: 5, SGEs: one}}); err != nil {
		t.Fatal(err)
	}
	if n := m.RQ.Outstanding(); n != 3 {
		t.Errorf("a list of three receives posted %d", n)
	}
}

// mlx5AH is the provider.AH mlx5's CreateAH returns for av.
func mlx5AH(av mlx5.AddressVector) provider.AH {
	ah := provider.AH{Num: mlx5.AHNum}
	*(*mlx5.AddressVector)(ah.Data[:]) = av
	return ah
}
