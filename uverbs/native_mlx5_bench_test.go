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
// (test/nativebench): the post rows of BenchmarkNative through an mlx5 QP
// (PostSend's staging under the send lock, PostRecv), on a send and
// receive queue, doorbell record and BlueFlame page in plain memory, sized
// as libmlx5 sizes them. After each post the requests are retired as a
// poll of their completions would. test/mlx5diff/harness.c runs the same
// posts through rdma-core's libmlx5 ("bench" in its sq and rq cases).
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
			b.ReportAllocs()
			for b.Loop() {
				row.post(b, r)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*row.wrs), "ns/wr")
		})
	}
}

type nativeMLX5Row struct {
	name string
	wrs  int
	post func(testing.TB, *nativeMLX5Rig)
}

var nativeMLX5Rows = []nativeMLX5Row{
	{"write", 1, func(tb testing.TB, r *nativeMLX5Rig) { r.send(tb, r.write) }},
	{"write_list32", nativeList, func(tb testing.TB, r *nativeMLX5Rig) { r.send(tb, r.list) }},
	{"send_inline", 1, func(tb testing.TB, r *nativeMLX5Rig) { r.send(tb, r.inl) }},
	{"recv", 1, func(tb testing.TB, r *nativeMLX5Rig) { r.postRecv(tb, r.recv) }},
	{"recv_list32", nativeList, func(tb testing.TB, r *nativeMLX5Rig) { r.postRecv(tb, r.recvList) }},
}

// The device limits TestDifferential sizes its queues with (a ConnectX's:
// 512-byte descriptors, 32768 entries).
var nativeMLX5Limits = mlx5.DeviceLimits{MaxSQDescSize: 512, MaxRQDescSize: 512, MaxSendWQEBB: 1 << 15, MaxRecvWR: 1 << 15, MaxSRQRecvWR: 1 << 15}

type nativeMLX5Rig struct {
	qp               *QP
	m                *mlx5QP
	sqCfg            mlx5.SQConfig
	rqCfg            mlx5.RQConfig
	write, list, inl []SendWR
	recv, recvList   []RecvWR
}

// words returns n zeroed bytes aligned to 8 in the Go heap.
func words(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

func newNativeMLX5Rig(tb testing.TB) *nativeMLX5Rig {
	tb.Helper()
	// As the rxe rows: max_send_sge 1, max_inline 64, max_recv_sge 1, and
	// room for a list of 32.
	sqCfg, sqBytes, err := mlx5.SQSize(&nativeMLX5Limits, mlx5.QPTypeRC, 2*nativeList, 1, 64)
	if err != nil {
		tb.Fatal(err)
	}
	rqCfg, rqBytes, err := mlx5.RQSize(&nativeMLX5Limits, 2*nativeList, 1)
	if err != nil {
		tb.Fatal(err)
	}
	sqCfg.QPN = 0x11
	dbrec := words(8)
	uar := words(4096)
	// A dedicated bfreg, as uverbs sets one up (mlx5.go: the second half of
	// the page from 0x800, two halves of 256 bytes).
	bf := &mlx5BFReg{bf: mlx5.BlueFlame{Reg: uar[0x800 : 0x800+512], BufSize: 256, Dedicated: true, PreferBF: true}}
	m := &mlx5QP{bf: bf}
	if m.sq, err = mlx5.NewSQ(words(sqBytes), dbrec, &bf.bf, sqCfg); err != nil {
		tb.Fatal(err)
	}
	if m.rq, err = mlx5.NewRQ(words(rqBytes), dbrec, rqCfg); err != nil {
		tb.Fatal(err)
	}
	_, _, _, inline := mlx5.QPCaps(sqCfg, rqCfg)
	cq := &CQ{}
	qp := &QP{pd: &PD{}, typ: RC, qpn: sqCfg.QPN, mx: m, sendCQ: cq, recvCQ: cq,
		lim: rxe.SendLimits{QPType: rxe.QPTypeRC, MaxSGE: sqCfg.MaxSGE, MaxInline: max(inline, 0)}}
	qp.state.Store(uint32(QPStateRTS))

	buf, err := AllocBuffer(4096)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { buf.Close() })
	r := &nativeMLX5Rig{qp: qp, m: m, sqCfg: sqCfg, rqCfg: rqCfg}
	r.write, r.list, r.inl, r.recv, r.recvList = nativeWRs(buf)
	return r
}

func (r *nativeMLX5Rig) send(tb testing.TB, wrs []SendWR) {
	r.qp.sendMu.Lock()
	err := r.qp.stageSend("post_send", wrs) // rings the doorbell on mlx5
	r.qp.sendMu.Unlock()
	if err != nil {
		tb.Fatal(err)
	}
	r.m.sq.Retire()
}

func (r *nativeMLX5Rig) postRecv(tb testing.TB, wrs []RecvWR) {
	if err := r.qp.PostRecv(wrs); err != nil {
		tb.Fatal(err)
	}
	r.m.rq.Retire()
}

// nativeMLX5Cases writes the rows as cases of test/mlx5diff/harness.c:
// the queue shapes of newNativeMLX5Rig, then "bench N MS" and the work
// requests in the harness's case format (docs/mlx5.md §7). An inline
// SGE's address is an offset into the harness's arena.
func nativeMLX5Cases(tb testing.TB, ms int) string {
	r := newNativeMLX5Rig(tb)
	var b strings.Builder
	sq, rq, bf := r.sqCfg, r.rqCfg, r.m.bf.bf
	b2i := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	for _, row := range nativeMLX5Rows {
		fmt.Fprintf(&b, "case %s\n", row.name)
		var sends []SendWR
		var recvs []RecvWR
		switch row.name {
		case "write":
			sends = r.write
		case "write_list32":
			sends = r.list
		case "send_inline":
			sends = r.inl
		case "recv":
			recvs = r.recv
		case "recv_list32":
			recvs = r.recvList
		}
		if sends != nil {
			fmt.Fprintf(&b, "sq %d %#x %d %d %d %d %d %d %d %d %d %d %#x\n", sq.QPType, sq.QPN, sq.WQECount, sq.MaxPost, sq.MaxSGE, sq.MaxInline,
				b2i(sq.SignalAll), b2i(sq.Atomics), bf.BufSize, b2i(bf.Dedicated), b2i(bf.PreferBF), b2i(bf.Disabled), 0)
			fmt.Fprintf(&b, "bench %d %d\n", len(sends), ms)
			for _, w := range sends {
				fmt.Fprintf(&b, "wr %#x %d %d %#x %#x %#x %#x %#x %#x %#x - %d\n", w.ID, w.Op, w.Flags, w.Imm, w.RemoteAddr, w.RKey, w.CompareAdd, w.Swap,
					w.RemoteQPN, w.RemoteQKey, len(w.SGEs))
				for _, s := range w.SGEs {
					addr := s.Addr
					if w.Flags&SendInline != 0 {
						addr = 0
					}
					fmt.Fprintf(&b, "sge %#x %#x %#x\n", addr, s.Length, s.LKey)
				}
			}
		} else {
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
