package uverbs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// BenchmarkNativeMLX5 is our side of make bench-native's mlx5 rows
// (test/nativebench): the rows of BenchmarkNative through mlx5 queues,
// doorbell records and BlueFlame pages in plain memory, sized as libmlx5
// sizes them. Post rows go through an RC or UD QP (PostSend, whose
// doorbell is the BlueFlame write, and PostRecv); after each post the
// requests are retired as a poll of their completions would.
// Poll rows go through CQ.Poll on a CQ whose fake device publishes send
// completions before each poll (pollN). test/mlx5diff/harness.c runs the
// same rows through rdma-core's libmlx5 ("bench" in its sq, rq and cq
// cases).
//
// With GOVERBS_MLX5_CASES=FILE (and GOVERBS_MLX5_MS, the milliseconds per
// row) it writes those cases, with the queue shapes used here, to FILE
// instead of measuring.
func BenchmarkNativeMLX5(b *testing.B) {
	if path := os.Getenv("GOVERBS_MLX5_CASES"); path != "" {
		ms, err := strconv.Atoi(os.Getenv("GOVERBS_MLX5_MS"))
		if err != nil {
			b.Fatalf("GOVERBS_MLX5_MS: %v", err)
		}
		if err := os.WriteFile(path, []byte(nativeMLX5Cases(b, ms)), 0o644); err != nil {
			b.Fatal(err)
		}
		return
	}
	for _, row := range nativeMLX5Rows {
		b.Run(row.name, func(b *testing.B) {
			r := newNativeMLX5Rig(b)
			if row.poll >= 0 {
				r.fillWRIDs(b)
			}
			b.ReportAllocs()
			b.ResetTimer()
			r.run(b, row.op, b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*row.wrs), "ns/wr")
		})
	}
}

type nativeMLX5Row struct {
	name string
	wrs  int // work requests, or completions, per call (1 for the empty poll)
	poll int // completions published before each poll; -1 for a post row
	op   nativeOp
}

var nativeMLX5Rows = []nativeMLX5Row{
	{"write", 1, -1, opWrite},
	{"write_list32", nativeList, -1, opWriteList},
	{"send_inline", 1, -1, opSendInline},
	{"ud_send", 1, -1, opUDSend},
	{"recv", 1, -1, opRecv},
	{"recv_list32", nativeList, -1, opRecvList},
	{"poll_one", 1, 1, opPollOne},
	{"poll_16", 16, 16, opPoll16},
	{"poll_empty", 1, 0, opPollEmpty},
}

// run makes n calls of a row, as nativeRig.run does, and as the "bench"
// loops of test/mlx5diff/harness.c: the row chosen once, outside the loop,
// and direct calls in it.
func (r *nativeMLX5Rig) run(tb testing.TB, op nativeOp, n int) {
	switch op {
	case opWrite:
		for range n {
			r.send(tb, r.qp, r.write)
		}
	case opWriteList:
		for range n {
			r.send(tb, r.qp, r.list)
		}
	case opSendInline:
		for range n {
			r.send(tb, r.qp, r.inl)
		}
	case opUDSend:
		for range n {
			r.send(tb, r.ud, r.udSend)
		}
	case opRecv:
		for range n {
			r.postRecv(tb, r.recv)
		}
	case opRecvList:
		for range n {
			r.postRecv(tb, r.recvList)
		}
	case opPollOne:
		for range n {
			r.pollN(tb, 1)
		}
	case opPoll16:
		for range n {
			r.pollN(tb, 16)
		}
	case opPollEmpty:
		for range n {
			r.pollN(tb, 0)
		}
	}
}

// The device limits TestDifferential sizes its queues with (a ConnectX's:
// 512-byte descriptors, 32768 entries).
var nativeMLX5Limits = mlx5.DeviceLimits{MaxSQDescSize: 512, MaxRQDescSize: 512, MaxSendWQEBB: 1 << 15, MaxRecvWR: 1 << 15, MaxSRQRecvWR: 1 << 15}

// The poll rows' CQ: 1024 entries of 64 bytes, as the rxe rows' ring, and
// CQE version 1, which both libmlx5 and this package ask the kernel for
// (mlx5.c mlx5_init_context: max_cqe_version MLX5_CQE_VERSION_V1), so
// completions name the QP by its user index.
const (
	nativeMLX5CQEntries = 1024
	nativeMLX5CQN       = 0x7a
	nativeMLX5UIDX      = 1
	// nativeMLX5WRID is the wr_id of send queue slot 0, slot i having
	// nativeMLX5WRID+i: what harness.c's cq case gives its first QP.
	nativeMLX5WRID = 0x51000000
)

type nativeMLX5Rig struct {
	qp, ud           *QP // RC (with a receive queue) and UD
	m                *mlx5.QPState
	sqCfg, udCfg     mlx5.SQConfig
	rqCfg            mlx5.RQConfig
	write, list, inl []SendWR
	udSend           []SendWR
	recv, recvList   []RecvWR
	// The CQ of both QPs, its ring, and how many completions the fake
	// device has published.
	cq     *CQ
	cqRing []byte
	cqProd uint32
	wcs    []WC
}

// words returns n zeroed bytes aligned to 8 in the Go heap.
func words(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// newNativeMLX5QP builds the mlx5 side of a QP in the Go heap: the send
// queue (max_send_sge 1, max_inline 64, room for two lists of 32 as the
// rxe rows), with receive queue (max_recv_sge 1) unless rq is false, and a
// doorbell record and a dedicated bfreg of its own (mlx5.Context.LayBFRegs: the second
// half of the UAR page from 0x800, two halves of 256 bytes).
func newNativeMLX5QP(tb testing.TB, typ mlx5.QPType, rq bool) (*mlx5.QPState, mlx5.SQConfig, mlx5.RQConfig) {
	tb.Helper()
	sqCfg, sqBytes, err := mlx5.SQSize(&nativeMLX5Limits, typ, 2*nativeList, 1, 64)
	if err != nil {
		tb.Fatal(err)
	}
	sqCfg.QPN = 0x11
	dbrec := words(8)
	uar := words(4096)
	bf := &mlx5.BFReg{BF: mlx5.BlueFlame{Reg: uar[0x800 : 0x800+512], BufSize: 256, Dedicated: true, PreferBF: true}}
	m := &mlx5.QPState{BF: bf}
	if m.SQ, err = mlx5.NewSQ(words(sqBytes), dbrec, &bf.BF, sqCfg); err != nil {
		tb.Fatal(err)
	}
	if !rq {
		return m, sqCfg, mlx5.RQConfig{}
	}
	rqCfg, rqBytes, err := mlx5.RQSize(&nativeMLX5Limits, 2*nativeList, 1)
	if err != nil {
		tb.Fatal(err)
	}
	if m.RQ, err = mlx5.NewRQ(words(rqBytes), dbrec, rqCfg); err != nil {
		tb.Fatal(err)
	}
	return m, sqCfg, rqCfg
}

func newNativeMLX5Rig(tb testing.TB) *nativeMLX5Rig {
	tb.Helper()
	r := &nativeMLX5Rig{wcs: make([]WC, 16)}
	// The CQ's ring, written once with what the fake device publishes
	// (mlx5dv.h struct mlx5_cqe64): entry i a successful completion of an
	// RDMA WRITE (sop_drop_qpn: the WQE's opcode, then the QPN) at send
	// queue slot i (wqe_counter) of the QP with user index
	// nativeMLX5UIDX (srqn_uidx). Its owner bit is that of the lap before
	// the first, so that the ring stays empty until pollN publishes.
	r.cqRing = words(nativeMLX5CQEntries * mlx5.CQESize)
	for i := range nativeMLX5CQEntries {
		e := r.cqRing[i*mlx5.CQESize:][:mlx5.CQESize]
		be.PutUint32(e[32:], nativeMLX5UIDX)         // srqn_uidx
		be.PutUint32(e[44:], 64)                     // byte_cnt
		be.PutUint32(e[56:], 0x08<<24|0x11)          // MLX5_OPCODE_RDMA_WRITE, QPN
		be.PutUint16(e[60:], uint16(i))              // wqe_counter
		e[63] = nativeMLX5OpOwn(nativeMLX5CQEntries) // MLX5_CQE_REQ, owner 1
	}
	q, err := mlx5.NewCQ(r.cqRing, words(8), words(4096), mlx5.CQConfig{CQN: nativeMLX5CQN, Entries: nativeMLX5CQEntries, CQEVersion: 1})
	if err != nil {
		tb.Fatal(err)
	}
	r.cq = &CQ{ctx: &Device{deviceProvider: deviceProvider{drv: mlx5.NewContextState(mlx5.DeviceLimits{}, 1)}}, drv: &mlx5.CQState{Q: q}}

	pd := &PD{}
	fakeLKey(pd, 7) // the lkey of the rows' SGEs
	newQP := func(m *mlx5.QPState, sqCfg mlx5.SQConfig, typ QPType, rt rxe.QPType) *QP {
		_, _, _, inline := mlx5.QPCaps(sqCfg, mlx5.RQConfig{})
		qp := &QP{ctx: r.cq.ctx, pd: pd, typ: typ, qpn: sqCfg.QPN, drv: m, sendCQ: r.cq, recvCQ: r.cq,
			lim: rxe.SendLimits{QPType: rt, MaxSGE: sqCfg.MaxSGE, MaxInline: max(inline, 0)}}
		qp.state.Store(uint32(QPStateRTS))
		return qp
	}
	r.m, r.sqCfg, r.rqCfg = newNativeMLX5QP(tb, mlx5.QPTypeRC, true)
	r.qp = newQP(r.m, r.sqCfg, RC, rxe.QPTypeRC)
	r.m.UIDX, r.m.Key = nativeMLX5UIDX, nativeMLX5UIDX
	r.m.Reg = mlx5.QP{SQ: r.m.SQ, RQ: r.m.RQ}
	r.cq.attach(r.m, nil)
	mud, udCfg, _ := newNativeMLX5QP(tb, mlx5.QPTypeUD, false)
	r.ud, r.udCfg = newQP(mud, udCfg, UD, rxe.QPTypeUD), udCfg
	singleGoroutine(benchSingle, "a benchmark's QP", &r.qp.sendMu, &r.qp.recvMu, &r.ud.sendMu, &r.ud.recvMu)
	singleGoroutine(benchSingle, "a benchmark's CQ", &r.cq.mu)

	buf, err := AllocBuffer(4096)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { buf.Close() })
	r.write, r.list, r.inl, r.recv, r.recvList = nativeWRs(buf)
	// A RoCE v2 address vector, as an AH on a ConnectX port has, the same
	// bytes in the harness's case.
	a := mlx5.AHAttr{IsGlobal: true, DGID: [16]byte{0: 0xfe, 1: 0x80, 15: 0x22}, SGIDIndex: 1, HopLimit: 64, FlowLabel: 0x12345}
	av, err := mlx5.BuildAV(&a, mlx5.PortLink{Ethernet: true, RoCEv2: true}, [6]byte{2, 0, 0, 0, 0, 0x22}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	r.udSend = nativeUDSend(&AH{pd: pd, drv: mlx5AH(av)})
	return r
}

// nativeMLX5OpOwn is the op_own byte of the fake device's n-th completion:
// MLX5_CQE_REQ, and the owner bit that makes the entry software's while
// the consumer index is n (cq.c get_sw_cqe: !!(n & ncqe)).
func nativeMLX5OpOwn(n uint32) byte {
	return byte(n/nativeMLX5CQEntries) & 1
}

// fillWRIDs posts a WRITE into every slot of the RC send queue, slot i
// with ID nativeMLX5WRID+i, and retires them, so that the completions
// pollN publishes return those IDs.
func (r *nativeMLX5Rig) fillWRIDs(tb testing.TB) {
	tb.Helper()
	w := r.write[0]
	for i := range r.sqCfg.WQECount {
		w.ID = nativeMLX5WRID + uint64(i)
		r.send(tb, r.qp, []SendWR{w})
	}
}

func (r *nativeMLX5Rig) send(tb testing.TB, qp *QP, wrs []SendWR) {
	if err := qp.PostSend(wrs); err != nil {
		tb.Fatal(err)
	}
	qp.drv.(*mlx5.QPState).SQ.Retire()
}

func (r *nativeMLX5Rig) postRecv(tb testing.TB, wrs []RecvWR) {
	if err := r.qp.PostRecv(wrs); err != nil {
		tb.Fatal(err)
	}
	r.m.RQ.Retire()
}

// pollN has the fake device publish n completions, only writing the
// op_own byte of each entry (its contents were written once, in
// newNativeMLX5Rig), then polls with room for 16 and expects n, the last
// one a success with the ID of its send queue slot.
func (r *nativeMLX5Rig) pollN(tb testing.TB, n int) {
	for range n {
		r.cqRing[(r.cqProd&(nativeMLX5CQEntries-1))*mlx5.CQESize+63] = nativeMLX5OpOwn(r.cqProd)
		r.cqProd++
	}
	got, err := r.cq.Poll(r.wcs)
	if got != n || err != nil {
		tb.Fatalf("polled %d (%v), want %d", got, err, n)
	}
	if n > 0 {
		w := &r.wcs[n-1]
		if want := nativeMLX5WRID + uint64((r.cqProd-1)&uint32(r.sqCfg.WQECount-1)); w.ID != want || w.Status != WCSuccess {
			tb.Fatalf("completion ID %#x status %v, want %#x, success", w.ID, w.Status, want)
		}
	}
}

// nativeMLX5Cases writes the rows as cases of test/mlx5diff/harness.c:
// the queue shapes of newNativeMLX5Rig, then "bench N MS" and the work
// requests in the harness's case format (docs/mlx5.md §7), or for a poll
// row the CQ, its QP and every entry of its ring as the rig wrote them,
// then "bench N MS" with N the completions per poll. An inline SGE's
// address is an offset into the harness's arena.
func nativeMLX5Cases(tb testing.TB, ms int) string {
	r := newNativeMLX5Rig(tb)
	var b strings.Builder
	rq, bf := r.rqCfg, r.m.BF.BF
	b2i := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	for _, row := range nativeMLX5Rows {
		fmt.Fprintf(&b, "case %s\n", row.name)
		sq := r.sqCfg
		var sends []SendWR
		var recvs []RecvWR
		switch row.name {
		case "write":
			sends = r.write
		case "write_list32":
			sends = r.list
		case "send_inline":
			sends = r.inl
		case "ud_send":
			sends, sq = r.udSend, r.udCfg
		case "recv":
			recvs = r.recv
		case "recv_list32":
			recvs = r.recvList
		}
		switch {
		case row.poll >= 0:
			fmt.Fprintf(&b, "cq %d %#x %d %#x\n", nativeMLX5CQEntries, nativeMLX5CQN, 1, 0)
			fmt.Fprintf(&b, "qp %#x %#x %d %d %#x %d\n", sq.QPN, nativeMLX5UIDX, sq.WQECount, rq.WQECount, 0, -1)
			for i := range nativeMLX5CQEntries {
				fmt.Fprintf(&b, "cqe %#x %x\n", i, r.cqRing[i*mlx5.CQESize:(i+1)*mlx5.CQESize])
			}
			fmt.Fprintf(&b, "bench %d %d\n", row.poll, ms)
		case sends != nil:
			fmt.Fprintf(&b, "sq %d %#x %d %d %d %d %d %d %d %d %d %d %#x\n", sq.QPType, sq.QPN, sq.WQECount, sq.MaxPost, sq.MaxSGE, sq.MaxInline,
				b2i(sq.SignalAll), b2i(sq.Atomics), bf.BufSize, b2i(bf.Dedicated), b2i(bf.PreferBF), b2i(bf.Disabled), 0)
			fmt.Fprintf(&b, "bench %d %d\n", len(sends), ms)
			for _, w := range sends {
				av := "-"
				if w.AH != nil {
					av = fmt.Sprintf("%x", w.AH.drv.Data[:])
				}
				fmt.Fprintf(&b, "wr %#x %d %d %#x %#x %#x %#x %#x %#x %#x %s %d\n", w.ID, w.Op, w.Flags, w.Imm, w.RemoteAddr, w.RKey, w.CompareAdd, w.Swap,
					w.RemoteQPN, w.RemoteQKey, av, len(w.SGEs))
				for _, s := range w.SGEs {
					addr := s.Addr
					if w.Flags&SendInline != 0 {
						addr = 0
					}
					fmt.Fprintf(&b, "sge %#x %#x %#x\n", addr, s.Length, s.LKey)
				}
			}
		default:
			fmt.Fprintf(&b, "rq %d %d %d %d %#x\n", rq.WQECount, rq.WQEShift, rq.MaxPost, rq.MaxSGE, 0)
			fmt.Fprintf(&b, "bench %d %d\n", len(recvs), ms)
			for _, w := range recvs {
				fmt.Fprintf(&b, "rwr %#x %d\n", w.ID, len(w.SGEs))
				for _, s := range w.SGEs {
					fmt.Fprintf(&b, "sge %#x %#x %#x\n", s.Addr, s.Length, s.LKey)
				}
			}
		}
		b.WriteString("end\n")
	}
	return b.String()
}
