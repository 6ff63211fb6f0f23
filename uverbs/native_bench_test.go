package uverbs

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/provider"
	"github.com/goverbs/rdma/uverbs/internal/rxe"
)

// BenchmarkNative is our side of make bench-native (test/nativebench): the
// same work requests as test/nativebench/harness/harness.c posts and polls through
// rdma-core's rxe provider, on rings of the same layout and slot sizes, with
// the same fake kernel (it takes every WQE after each post, and publishes
// completions before each poll). Posting sends stops short of the doorbell
// (stageSend under the send lock, as PostSend does), as the harness's
// doorbell does nothing. Each row reports ns per work request (ns/wr).
//
// With GOVERBS_WQE_DUMP=DIR it first writes each post row's WQE bytes, the
// first post on fresh rings, to DIR/ROW.bin, which test/nativebench
// compares with the harness's.
func BenchmarkNative(b *testing.B) {
	dumpDir := os.Getenv("GOVERBS_WQE_DUMP")
	for _, row := range nativeRows {
		b.Run(row.name, func(b *testing.B) {
			if dumpDir != "" && row.ring != nil {
				r := newNativeRig(b)
				r.run(b, row.op, 1)
				if err := os.WriteFile(filepath.Join(dumpDir, row.name+".bin"), r.written(row), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			r := newNativeRig(b)
			b.ReportAllocs()
			b.ResetTimer()
			r.run(b, row.op, b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*row.wrs), "ns/wr")
		})
	}
}

// nativeRig holds the QPs, CQ and work requests of the rows, as the
// harness's struct rig does.
type nativeRig struct {
	qp, ud           *QP // RC and UD, max_send_sge 1, max_inline 64, max_recv_sge 1
	sqK, udK, rqK    fakeConsumer
	sqBuf, udBuf     []byte
	rqBuf            []byte
	cq               *CQ
	cqProd           *atomic.Uint32
	write, list, inl []SendWR
	udSend           []SendWR
	recv, recvList   []RecvWR
	wcs              []WC
}

const nativeList = 32

var nativeLE = binary.LittleEndian

type nativeRow struct {
	name string
	wrs  int // work requests per call
	op   nativeOp
	ring func(*nativeRig) []byte // the ring a post row writes; nil for a poll row
}

type nativeOp int

const (
	opWrite nativeOp = iota
	opWriteList
	opSendInline
	opUDSend
	opRecv
	opRecvList
	opPollOne
	opPoll16
	opPollEmpty
)

var nativeRows = []nativeRow{
	{"write", 1, opWrite, func(r *nativeRig) []byte { return r.sqBuf }},
	{"write_list32", nativeList, opWriteList, func(r *nativeRig) []byte { return r.sqBuf }},
	{"send_inline", 1, opSendInline, func(r *nativeRig) []byte { return r.sqBuf }},
	{"ud_send", 1, opUDSend, func(r *nativeRig) []byte { return r.udBuf }},
	{"recv", 1, opRecv, func(r *nativeRig) []byte { return r.rqBuf }},
	{"recv_list32", nativeList, opRecvList, func(r *nativeRig) []byte { return r.rqBuf }},
	{"poll_one", 1, opPollOne, nil},
	{"poll_16", 16, opPoll16, nil},
	{"poll_empty", 1, opPollEmpty, nil},
}

// run makes n calls of a row, with what the fake kernel does around each,
// as the harness's measure does: the row is chosen once, outside the loop,
// and each call in it is a direct one, so that the benchmark adds neither a
// dispatch per call nor a call through a function value
// (docs/perf-history.md, "rxe post and poll: what each change bought"
// item 30).
func (r *nativeRig) run(tb testing.TB, op nativeOp, n int) {
	switch op {
	case opWrite:
		for range n {
			r.send(tb, r.qp, r.write, &r.sqK)
		}
	case opWriteList:
		for range n {
			r.send(tb, r.qp, r.list, &r.sqK)
		}
	case opSendInline:
		for range n {
			r.send(tb, r.qp, r.inl, &r.sqK)
		}
	case opUDSend:
		for range n {
			r.send(tb, r.ud, r.udSend, &r.udK)
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

// fakeConsumer is the fake kernel's side of a ring it drains: it takes
// every posted entry by moving consumer_index up to producer_index, with
// the store the harness's kernel_consume compiles to (fakeKernelStore).
type fakeConsumer struct{ prod, cons *atomic.Uint32 }

func (k *fakeConsumer) consume() { fakeKernelStore(k.cons, k.prod.Load()) }

// written returns the slots a row's first post wrote.
func (r *nativeRig) written(row nativeRow) []byte {
	buf := row.ring(r)
	slot := 1 << nativeLE.Uint32(buf[0:])
	return buf[rxe.RingHeaderSize : rxe.RingHeaderSize+row.wrs*slot]
}

func newNativeRig(tb testing.TB) *nativeRig {
	tb.Helper()
	r := &nativeRig{wcs: make([]WC, 16)}
	pd := &PD{}
	fakeLKey(pd, 7) // the lkey of the rows' SGEs
	newQP := func(typ QPType, rt rxe.QPType) (*QP, []byte, fakeConsumer) {
		lim := rxe.SendLimits{QPType: rt, MaxSGE: 1, MaxInline: 64}
		// Slot sizes as rxe_qp.c sizes them: 208 + max(16, 64) bytes, so
		// 512-byte slots.
		buf, prod, cons := fakeRing(tb, 9, 1024)
		sq, err := rxe.NewSQ(buf, lim)
		if err != nil {
			tb.Fatal(err)
		}
		qp := &QP{ctx: &Device{}, pd: pd, typ: typ, qpn: 0x11, drv: rxe.NewQPState(fakeDoorbell{}, sq, nil), lim: lim}
		qp.state.Store(uint32(QPStateRTS))
		return qp, buf, fakeConsumer{prod, cons}
	}
	r.qp, r.sqBuf, r.sqK = newQP(RC, rxe.QPTypeRC)
	r.ud, r.udBuf, r.udK = newQP(UD, rxe.QPTypeUD)
	// 40 + 16 bytes, so 64-byte receive slots.
	rqBuf, rqProd, rqCons := fakeRing(tb, 6, 1024)
	rq, err := rxe.NewRQ(rqBuf, 1)
	if err != nil {
		tb.Fatal(err)
	}
	st := r.qp.drv.(*rxe.QPState)
	st.RQ, st.HasRQ = *rq, true
	r.rqBuf, r.rqK = rqBuf, fakeConsumer{rqProd, rqCons}

	// A CQ whose every slot holds a successful RDMA WRITE completion.
	cqBuf, cqProd, _ := fakeRing(tb, 6, 1024)
	for i := range 1024 {
		cqe := cqBuf[rxe.RingHeaderSize+i*64:]
		nativeLE.PutUint64(cqe[0:], uint64(i+1)) // wr_id
		cqe[12] = byte(WCOpRDMAWrite)            // opcode
		nativeLE.PutUint32(cqe[20:], 64)         // byte_len
		nativeLE.PutUint32(cqe[28:], 0x11)       // qp_num
	}
	cq, err := rxe.NewCQ(cqBuf)
	if err != nil {
		tb.Fatal(err)
	}
	r.cq, r.cqProd = &CQ{drv: rxe.NewCQState(cq)}, cqProd
	singleGoroutine(benchSingle, "a benchmark's QP", &r.qp.sendMu, &r.qp.recvMu, &r.ud.sendMu, &r.ud.recvMu)
	singleGoroutine(benchSingle, "a benchmark's CQ", &r.cq.mu)

	buf, err := AllocBuffer(4096)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { buf.Close() })
	for i := range 64 {
		buf.Bytes()[i] = byte(i)
	}

	r.write, r.list, r.inl, r.recv, r.recvList = nativeWRs(buf)
	r.udSend = nativeUDSend(&AH{pd: pd, drv: provider.AH{Num: 1}})
	return r
}

// nativeUDSend is the UD row's work request, which both providers post:
// one signalled 64 B SEND to QPN 0x22 through ah.
func nativeUDSend(ah *AH) []SendWR {
	sge := SGE{Addr: 0x10000, Length: 64, LKey: 7}
	return []SendWR{{ID: 3, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{sge}, AH: ah, RemoteQPN: 0x22, RemoteQKey: 0x11111111}}
}

// nativeWRs are the work requests of the rows that both providers post:
// one signalled WRITE, a list of 32 WRITEs (the last signalled), an inline
// SEND out of buf, one receive and a list of 32.
func nativeWRs(buf *Buffer) (write, list, inl []SendWR, recv, recvList []RecvWR) {
	sge := SGE{Addr: 0x10000, Length: 64, LKey: 7}
	write = []SendWR{{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{sge}, RemoteAddr: 0x20000, RKey: 9}}
	list = make([]SendWR, nativeList)
	recvList = make([]RecvWR, nativeList)
	for i := range nativeList {
		s := []SGE{{Addr: 0x10000 + 64*uint64(i), Length: 64, LKey: 7}}
		list[i] = SendWR{ID: uint64(i + 1), Op: OpWrite, SGEs: s, RemoteAddr: 0x20000 + 64*uint64(i), RKey: 9}
		recvList[i] = RecvWR{ID: uint64(i + 1), SGEs: s}
	}
	list[nativeList-1].Flags = SendSignaled
	inl = []SendWR{{ID: 2, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{{Addr: buf.Addr(), Length: 64}}}}
	recv = []RecvWR{{ID: 4, SGEs: []SGE{sge}}}
	return write, list, inl, recv, recvList
}

func (r *nativeRig) send(tb testing.TB, qp *QP, wrs []SendWR, k *fakeConsumer) {
	qp.sendMu.Lock()
	err := qp.stageSend("post_send", wrs)
	qp.sendMu.Unlock()
	if err != nil {
		tb.Fatal(err)
	}
	k.consume()
}

func (r *nativeRig) postRecv(tb testing.TB, wrs []RecvWR) {
	if err := r.qp.PostRecv(wrs); err != nil {
		tb.Fatal(err)
	}
	r.rqK.consume()
}

// pollN has the fake kernel publish n completions, then polls with room for
// 16 and expects n.
func (r *nativeRig) pollN(tb testing.TB, n int) {
	if n > 0 {
		// As the harness's kernel_produce (fakeKernelStore).
		fakeKernelStore(r.cqProd, (r.cqProd.Load()+uint32(n))&1023)
	}
	got, err := r.cq.Poll(r.wcs)
	if got != n || err != nil || (n > 0 && r.wcs[0].Status != WCSuccess) {
		tb.Fatalf("polled %d (%v), want %d", got, err, n)
	}
}

// plainSends remembers the Buffer of the last inline source, but only for
// the Buffer list it was found on: once that Buffer is closed, the same
// source is refused, and a source in another Buffer is found again.
func TestInlineSourceAfterBufferClose(t *testing.T) {
	r := newNativeRig(t)
	a, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	from := func(buf *Buffer) []SendWR {
		return []SendWR{{ID: 2, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{{Addr: buf.Addr(), Length: 64}}}}
	}
	post := func(wrs []SendWR) error {
		r.qp.sendMu.Lock()
		err := r.qp.stageSend("post_send", wrs)
		r.qp.sendMu.Unlock()
		r.sqK.consume()
		return err
	}
	fromA := from(a)
	for range 2 {
		if err := post(fromA); err != nil {
			t.Fatalf("inline from an open Buffer: %v", err)
		}
	}
	a.Close()
	if err := post(fromA); !errors.Is(err, ErrInvalidWR) {
		t.Fatalf("inline from a closed Buffer: %v, want ErrInvalidWR", err)
	}
	for range 2 {
		if err := post(from(b)); err != nil {
			t.Fatalf("inline from another open Buffer: %v", err)
		}
	}
}
