package mlx5

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var testLimits = DeviceLimits{MaxSQDescSize: 512, MaxRQDescSize: 512, MaxSendWQEBB: 1 << 15, MaxRecvWR: 1 << 15, MaxSRQRecvWR: 1 << 15}

type testQP struct {
	sq     *SQ
	rq     *RQ
	cq     *CQ
	cqRing []byte
	uar    []byte
	dbrec  []byte
}

func newTestQP(t *testing.T, qt QPType) *testQP { return newTestQPWith(t, qt, 2, true) }

// newTestQPWith is newTestQP with max_send_sge maxSGE and atomics on or off.
func newTestQPWith(t *testing.T, qt QPType, maxSGE int, atomics bool) *testQP {
	t.Helper()
	sqCfg, sqBytes, err := SQSize(&testLimits, qt, 16, maxSGE, 64)
	if err != nil {
		t.Fatal(err)
	}
	sqCfg.QPN, sqCfg.Atomics = 0x42, atomics
	rqCfg, rqBytes, err := RQSize(&testLimits, 16, 2)
	if err != nil {
		t.Fatal(err)
	}
	buf := aligned(rqBytes + sqBytes)
	q := &testQP{dbrec: aligned(8), uar: aligned(4096)}
	if q.rq, err = NewRQ(buf[:rqBytes], q.dbrec, rqCfg); err != nil {
		t.Fatal(err)
	}
	bf := &BlueFlame{Reg: q.uar[BFRegOffset:], BufSize: 256, Dedicated: true}
	if q.sq, err = NewSQ(buf[rqBytes:], q.dbrec, bf, sqCfg); err != nil {
		t.Fatal(err)
	}
	q.cqRing = aligned(16 * CQESize)
	for i := range 16 {
		q.cqRing[i*CQESize+cqeOpOwn] = cqeInvalid << 4
	}
	if q.cq, err = NewCQ(q.cqRing, aligned(8), q.uar, CQConfig{CQN: 7, Entries: 16}); err != nil {
		t.Fatal(err)
	}
	q.cq.RegisterQP(0x42, &QP{SQ: q.sq, RQ: q.rq})
	return q
}

// complete writes the CQE the device would write for the send with WQE
// counter ctr at the CQ's next slot.
func (q *testQP) complete(ctr uint16, wqeOpcode uint8) {
	n := q.cq.consIndex
	for i := uint32(0); ; i++ {
		slot := (n + i) & 15
		c := q.cqRing[slot*CQESize : (slot+1)*CQESize]
		if c[cqeOpOwn]>>4 != cqeInvalid && c[cqeOpOwn]&1 == uint8((n+i)>>4&1) {
			continue
		}
		clear(c)
		be.PutUint32(c[cqeSopDropQPN:], uint32(wqeOpcode)<<24|0x42)
		be.PutUint16(c[cqeWQECounter:], ctr)
		c[cqeOpOwn] = cqeReq<<4 | uint8((n+i)>>4&1)
		return
	}
}

func TestPostPollAllocateNothing(t *testing.T) {
	q := newTestQP(t, QPTypeRC)
	buf := make([]byte, 64)
	sges := []SGE{{Addr: uintptrOf(buf), Length: 64, LKey: 1}}
	wrs := []SendWR{{ID: 1, Opcode: OpSend, Flags: SendSignaled | SendInline, SGEs: sges}}
	rwrs := []RecvWR{{ID: 2, SGEs: sges}}
	wcs := make([]WC, 4)
	allocs := testing.AllocsPerRun(200, func() {
		ctr := uint16(q.sq.curPost)
		if _, err := q.sq.Post(wrs); err != nil {
			t.Fatal(err)
		}
		if _, err := q.rq.Post(rwrs); err != nil {
			t.Fatal(err)
		}
		q.rq.Retire()
		q.complete(ctr, opcodeSend)
		if n, err := q.cq.Poll(wcs); err != nil || n != 1 || wcs[0].ID != 1 {
			t.Fatalf("poll: %d %v %+v", n, err, wcs[0])
		}
	})
	if allocs != 0 {
		t.Fatalf("post and poll allocate %v times per round", allocs)
	}
}

func TestSendRefusals(t *testing.T) {
	q := newTestQP(t, QPTypeUC)
	ud := newTestQP(t, QPTypeUD)
	big := make([]byte, 200)
	for _, tc := range []struct {
		name  string
		sq    *SQ
		wr    SendWR
		want  error
		errno syscall.Errno
	}{
		{"atomic on UC", q.sq, SendWR{Opcode: OpAtomicFetchAndAdd}, ErrBadOpcode, syscall.EINVAL},
		{"read on UD", ud.sq, SendWR{Opcode: OpRDMARead, AV: &AddressVector{}}, ErrBadOpcode, syscall.EINVAL},
		{"unknown opcode", q.sq, SendWR{Opcode: 12}, ErrBadOpcode, syscall.EINVAL},
		{"unknown flag", q.sq, SendWR{Opcode: OpSend, Flags: 16}, ErrBadSendFlags, syscall.EINVAL},
		{"too many SGEs", q.sq, SendWR{Opcode: OpSend, SGEs: make([]SGE, 3)}, ErrTooManySGEs, syscall.ENOMEM},
		{"inline too long", q.sq, SendWR{Opcode: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: uintptrOf(big), Length: 200}}}, ErrInlineTooLong, syscall.ENOMEM},
		{"UD without AV", ud.sq, SendWR{Opcode: OpSend}, ErrUDAddress, syscall.EINVAL},
		{"AV on UC", q.sq, SendWR{Opcode: OpSend, AV: &AddressVector{}}, ErrUDAddress, syscall.EINVAL},
	} {
		before := string(q.sq.ring) + string(ud.sq.ring) + string(q.dbrec) + string(q.uar)
		bad, err := tc.sq.Post([]SendWR{{Opcode: OpSend, AV: tc.wr.AV}, tc.wr})
		if tc.name == "UD without AV" || tc.name == "AV on UC" {
			bad, err = tc.sq.Post([]SendWR{tc.wr})
			bad++
		}
		if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, tc.errno) || bad != 1 {
			t.Errorf("%s: Post = %d, %v; want index 1, %v (%v)", tc.name, bad, err, tc.want, tc.errno)
		}
		if after := string(q.sq.ring) + string(ud.sq.ring) + string(q.dbrec) + string(q.uar); after != before {
			t.Errorf("%s: a refused post wrote to the ring, doorbell record or UAR", tc.name)
		}
	}
	// A full queue is ENOMEM, and not an invalid request.
	wrs := make([]SendWR, q.sq.cfg.MaxPost+1)
	for i := range wrs {
		wrs[i].Opcode = OpSend
	}
	bad, err := q.sq.Post(wrs)
	if !errors.Is(err, ErrQueueFull) || !errors.Is(err, syscall.ENOMEM) || errors.Is(err, ErrInvalidWR) || bad != q.sq.cfg.MaxPost {
		t.Errorf("overfull post = %d, %v", bad, err)
	}
}

func TestSizingRefusals(t *testing.T) {
	if _, _, err := SQSize(&testLimits, QPTypeRC, 4, 30, 0); err == nil {
		t.Error("SQSize accepted 30 SGEs in a 512-byte WQE")
	}
	if _, _, err := SQSize(&testLimits, QPTypeRC, 4, 1, 400); err == nil {
		t.Error("SQSize accepted 400 inline bytes in a 512-byte WQE")
	}
	if _, _, err := RQSize(&testLimits, 1<<16, 1); err == nil {
		t.Error("RQSize accepted more work requests than the device")
	}
	// 64 fixed + 16 for the SGE: a 128-byte WQE, two WQEBBs each.
	cfg, n, err := SQSize(&testLimits, QPTypeUD, 8, 1, 0)
	if err != nil || cfg.WQECount != 16 || cfg.MaxPost != 8 || cfg.MaxInline != 60 || n != 1024 {
		t.Errorf("SQSize(UD, 8 WRs, 1 SGE) = %+v, %d, %v", cfg, n, err)
	}
}

func uintptrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// A CQ remembers the QP of its last completion; a QP registered again
// under the same key (a user index or QPN used again after a destroy)
// replaces it, and an unregistered key completes nothing.
func TestCQForgetsTheLastQP(t *testing.T) {
	q := newTestQP(t, QPTypeRC)
	wcs := make([]WC, 1)
	post := func(sq *SQ, id uint64) uint16 {
		t.Helper()
		ctr := uint16(sq.curPost)
		if _, err := sq.Post([]SendWR{{ID: id, Opcode: OpSend, Flags: SendSignaled}}); err != nil {
			t.Fatal(err)
		}
		return ctr
	}
	q.complete(post(q.sq, 1), opcodeSend)
	if n, err := q.cq.Poll(wcs); n != 1 || err != nil || wcs[0].ID != 1 {
		t.Fatalf("poll: %d %v %+v", n, err, wcs[0])
	}
	other := newTestQP(t, QPTypeRC)
	q.cq.Unregister(0x42)
	q.cq.RegisterQP(0x42, &QP{SQ: other.sq})
	q.complete(post(other.sq, 2), opcodeSend)
	if n, err := q.cq.Poll(wcs); n != 1 || err != nil || wcs[0].ID != 2 {
		t.Fatalf("poll after the key was registered again: %d %v %+v, want the new QP's ID 2", n, err, wcs[0])
	}
	q.cq.Unregister(0x42)
	q.complete(0, opcodeSend)
	if n, err := q.cq.Poll(wcs); n != 0 || !errors.Is(err, ErrPoll) {
		t.Fatalf("poll of an unregistered QP's completion: %d %v, want ErrPoll", n, err)
	}
}

// TestPlainSend checks that every request SQ.plain lets past (with an
// opcode the QP type allows, which Post checks first), Validate accepts,
// over every opcode, flag set, SGE count and length and address vector,
// and that the common requests are plain.
func TestPlainSend(t *testing.T) {
	plain := 0
	for _, typ := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		for cfgs := range 3 * 3 * 2 {
			maxSGE, maxInline, atomics := cfgs%3, []int{-inlSegHdr, 0, 64}[cfgs/3%3], cfgs >= 9
			q := &SQ{cfg: SQConfig{QPType: typ, MaxSGE: maxSGE, MaxInline: maxInline, Atomics: atomics}}
			for op := SendOpcode(0); int(op) <= len(deviceOpcode); op++ {
				if !opcodeAllowed(typ, op) {
					continue
				}
				for flags := SendFlags(0); flags <= 2*sendFlagsKnown+1; flags++ {
					for nsge := 0; nsge <= 3; nsge++ {
						for _, length := range []uint32{0, 64, 65, 1<<32 - 1} {
							for _, av := range []*AddressVector{nil, {}} {
								wr := SendWR{Opcode: op, Flags: flags, SGEs: make([]SGE, nsge), AV: av}
								for i := range wr.SGEs {
									wr.SGEs[i] = SGE{Addr: 0x1000, Length: length, LKey: 7}
								}
								if !q.plain(&wr) {
									continue
								}
								plain++
								if err := q.Validate(&wr); err != nil {
									t.Errorf("%+v: plain passed %+v, which Validate refuses: %v", q.cfg, wr, err)
								}
							}
						}
					}
				}
			}
		}
	}
	rc := &SQ{cfg: SQConfig{QPType: QPTypeRC, MaxSGE: 1, MaxInline: 64}}
	ud := &SQ{cfg: SQConfig{QPType: QPTypeUD, MaxSGE: 1, MaxInline: 64}}
	one := []SGE{{Addr: 0x1000, Length: 64, LKey: 7}}
	for _, c := range []struct {
		q  *SQ
		wr SendWR
	}{
		{rc, SendWR{Opcode: OpRDMAWrite, Flags: SendSignaled, SGEs: one}},
		{rc, SendWR{Opcode: OpRDMARead, Flags: SendSignaled | SendFence, SGEs: one}},
		{rc, SendWR{Opcode: OpSend, Flags: SendSignaled | SendInline, SGEs: one}},
		{ud, SendWR{Opcode: OpSend, Flags: SendSignaled, SGEs: one, AV: &AddressVector{}}},
	} {
		if !c.q.plain(&c.wr) {
			t.Errorf("%+v on a %v QP is not plain", c.wr, c.q.cfg.QPType)
		}
	}
	t.Logf("%d plain requests checked", plain)
}

// TestNewRQRefusesHugeMaxSGE: a max_gs whose segments would not fit an
// entry is refused, even where max_gs*16 overflows (RQ.Post writes through
// pointers and trusts the check).
func TestNewRQRefusesHugeMaxSGE(t *testing.T) {
	ring, dbrec := make([]byte, 64), make([]byte, 8)
	for _, maxSGE := range []int{4, 5, 1 << 59, 1<<59 + 1, 1 << 60, 1<<63 - 1} {
		// An RQ entry holds 4 segments, an SRQ entry 3 after its next
		// segment.
		if _, err := NewRQ(ring, dbrec, RQConfig{WQECount: 1, WQEShift: 6, MaxPost: 1, MaxSGE: maxSGE}); err == nil && maxSGE > 4 {
			t.Errorf("NewRQ accepted max_gs %d for 64-byte entries", maxSGE)
		}
		if _, err := NewSRQ(make([]byte, 128), dbrec[:4], SRQConfig{WQECount: 2, WQEShift: 6, MaxSGE: maxSGE, Tail: 1}); err == nil {
			t.Errorf("NewSRQ accepted max_gs %d for 64-byte entries", maxSGE)
		}
	}
	if _, err := NewRQ(ring, dbrec, RQConfig{WQECount: 1, WQEShift: 6, MaxPost: 1, MaxSGE: 4}); err != nil {
		t.Errorf("NewRQ refused max_gs 4 for 64-byte entries: %v", err)
	}
	if _, err := NewSRQ(make([]byte, 128), dbrec[:4], SRQConfig{WQECount: 2, WQEShift: 6, MaxSGE: 3, Tail: 1}); err != nil {
		t.Errorf("NewSRQ refused max_gs 3 for 64-byte entries: %v", err)
	}
}

// lockCounter is a sync.Locker that counts, and checks pairing.
type lockCounter struct {
	t              *testing.T
	locks, unlocks int
}

func (l *lockCounter) Lock() {
	if l.locks != l.unlocks {
		l.t.Error("BlueFlame lock taken twice")
	}
	l.locks++
}

func (l *lockCounter) Unlock() {
	l.unlocks++
	if l.locks != l.unlocks {
		l.t.Error("BlueFlame lock released while not held")
	}
}

// TestSharedBlueFlame rings the doorbell through a shared register (the
// context's bfreg, with its lock), with inline sends and PreferBF, which
// would use BlueFlame on a dedicated one: the lock is held once around each
// doorbell, the record counts the WQEBBs, and the doorbell is the control
// segment's first 8 bytes at the register's start every time, and nothing
// more of the WQE: the shared bfreg has no halves (BufSize 0, as libmlx5's
// bfreg 0 has buf_size 0, mlx5.c mlx5_init_context; qp.c post_send_db
// writes to bf->reg + bf->offset and flips offset by buf_size).
func TestSharedBlueFlame(t *testing.T) {
	q := newTestQP(t, QPTypeRC)
	l := &lockCounter{t: t}
	q.sq.bf.Dedicated, q.sq.bf.PreferBF, q.sq.bf.Lock, q.sq.bf.BufSize = false, true, l, 0
	src := make([]byte, 64)
	for i := range src {
		src[i] = byte(i + 1)
	}
	zero := make([]byte, 56)
	for i := range 3 {
		reg := q.sq.bf.Reg
		clear(reg)
		ctrl := int(q.sq.curPost) & (q.sq.cfg.WQECount - 1) * SendWQEBB
		wr := SendWR{ID: uint64(i), Opcode: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{{Addr: uintptrOf(src), Length: 64}}}
		if _, err := q.sq.Post([]SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		if l.locks != i+1 || l.unlocks != i+1 {
			t.Fatalf("post %d: lock taken %d and released %d times", i, l.locks, l.unlocks)
		}
		if got, want := be.Uint32(q.dbrec[4*sndDBR:]), q.sq.curPost&0xffff; got != want {
			t.Errorf("post %d: send doorbell record %d, want %d", i, got, want)
		}
		if string(reg[:8]) != string(q.sq.ring[ctrl:ctrl+8]) || string(reg[8:64]) != string(zero) || string(reg[256:320]) != string(zero[:8])+string(zero) {
			t.Errorf("post %d: the register holds % x, want the control segment's first 8 bytes % x at its start and nothing more", i, reg[:64], q.sq.ring[ctrl:ctrl+8])
		}
		if q.sq.bf.offset != 0 {
			t.Errorf("post %d: the doorbell offset moved to %d on the shared bfreg", i, q.sq.bf.offset)
		}
		q.sq.Retire()
	}
}

// TestEncodeBlock: encodeBlocks (RC and UC) and encodeUD write the bytes
// encode writes, and leave the rest of the ring as encode does, for every
// request Post gives them: each opcode the QP type allows but the atomics,
// every flag set but inline with SGEs, 0-2 SGEs of lengths 0 and not,
// immediate data, signal-all, UD's address vector, and WQEs in every slot
// of the ring (a UD WQE in the last wraps) and around the 16-bit counter's
// wrap; and lists of such requests through encodeBlocks, past the end of
// the ring.
func TestEncodeBlock(t *testing.T) {
	var av AddressVector
	for i := range av {
		av[i] = byte(0xc0 + i)
	}
	checked := 0
	for _, typ := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		fast := func(q *SQ, wr *SendWR, i uint32) (int, int) { return q.encodeBlocks(unsafe.Slice(wr, 1), i) }
		if typ == QPTypeUD {
			fast = (*SQ).encodeUD
		}
		for _, signalAll := range []bool{false, true} {
			cfg := SQConfig{QPType: typ, QPN: 0xabcde, WQECount: 4, MaxPost: 4, MaxSGE: 2, MaxInline: 64, SignalAll: signalAll}
			a := &SQ{cfg: cfg, ring: make([]byte, 4*SendWQEBB), wrid: make([]uint64, 4), wqeHead: make([]uint32, 4)}
			b := &SQ{cfg: cfg, ring: make([]byte, 4*SendWQEBB), wrid: make([]uint64, 4), wqeHead: make([]uint32, 4)}
			for op := SendOpcode(0); op <= OpRDMARead; op++ {
				if !opcodeAllowed(typ, op) {
					continue
				}
				for flags := SendFlags(0); flags <= sendFlagsKnown; flags++ {
					for nsge := 0; nsge <= maxBlockSGEs; nsge++ {
						if flags&SendInline != 0 && nsge > 0 {
							continue // encode's inline path
						}
						for zero := range 1 << nsge {
							for _, cur := range []uint32{0, 1, 2, 3, 0xfffe, 0xffff, 0x12345} {
								wr := SendWR{ID: uint64(cur) ^ 0x5555, Opcode: op, Flags: flags, ImmData: 0x01020304, RemoteAddr: 0x1122334455667788, RKey: 0x99aabbcc}
								if typ == QPTypeUD {
									wr.AV, wr.RemoteQPN, wr.RemoteQKey = &av, 0x56789a, 0x11223344
								}
								for i := range nsge {
									s := SGE{Addr: 0xa0a1a2a3a4a5a6a7 + uint64(i), Length: 0x100 + uint32(i), LKey: 0xb0b1b2b3 + uint32(i)}
									if zero&(1<<i) != 0 {
										s.Length = 0
									}
									wr.SGEs = append(wr.SGEs, s)
								}
								sameEncoding(t, a, b, fast, &wr, cur)
								checked++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d requests encoded both ways", checked)
	for _, typ := range []QPType{QPTypeRC, QPTypeUC} {
		cfg := SQConfig{QPType: typ, QPN: 0x123, WQECount: 8, MaxPost: 8, MaxSGE: 2, MaxInline: 64}
		a := &SQ{cfg: cfg, ring: make([]byte, 8*SendWQEBB), wrid: make([]uint64, 8), wqeHead: make([]uint32, 8)}
		b := &SQ{cfg: cfg, ring: make([]byte, 8*SendWQEBB), wrid: make([]uint64, 8), wqeHead: make([]uint32, 8)}
		a.curPost, b.curPost = 0xfffb, 0xfffb
		for n := 1; n <= 7; n++ {
			var wrs []SendWR
			for i := range n {
				op := []SendOpcode{OpRDMAWrite, OpRDMAWriteWithImm, OpSend, OpSendWithImm, OpRDMARead}[(i+n)%5]
				if !opcodeAllowed(typ, op) {
					op = OpSend
				}
				wr := SendWR{ID: uint64(100*n + i), Opcode: op, Flags: SendFlags(i+n) & (SendFence | SendSignaled | SendSolicited), ImmData: uint32(i), RemoteAddr: uint64(0x1000 * i), RKey: uint32(n)}
				for k := range (i + n) % 3 {
					wr.SGEs = append(wr.SGEs, SGE{Addr: uint64(0x50 + k), Length: uint32(k * i), LKey: uint32(7 + k)})
				}
				wrs = append(wrs, wr)
			}
			var ca, sa int
			for i := range wrs {
				ca, sa = a.encode(&wrs[i], 40+uint32(i))
			}
			cb, sb := b.encodeBlocks(wrs, 40)
			if ca != cb || sa != sb || a.curPost != b.curPost || !bytes.Equal(a.ring, b.ring) || !slices.Equal(a.wrid, b.wrid) || !slices.Equal(a.wqeHead, b.wqeHead) {
				t.Fatalf("%v, a list of %d: encodeBlocks gave ctrl %d, size %d, cur_post %#x, ring\n% x\nencode gave ctrl %d, size %d, cur_post %#x, ring\n% x", typ, n, cb, sb, b.curPost, b.ring, ca, sa, a.curPost, a.ring)
			}
		}
	}
}

// encodeBlocks stops before the first request it does not take (inline
// data, an atomic, more SGEs than fit one WQEBB), so that postList hands
// the rest to the other encoders; cur_post counts what it wrote.
func TestEncodeBlocksStops(t *testing.T) {
	sge := []SGE{{Addr: 0x50, Length: 8, LKey: 7}}
	write := SendWR{Opcode: OpRDMAWrite, SGEs: sge, RemoteAddr: 0x1000, RKey: 1}
	for _, other := range []SendWR{
		{Opcode: OpSend, Flags: SendInline, SGEs: sge},
		{Opcode: OpAtomicFetchAndAdd, SGEs: sge, RemoteAddr: 0x1000, RKey: 1},
		{Opcode: OpSend, SGEs: make([]SGE, maxBlockSGEs+1)},
	} {
		cfg := SQConfig{QPType: QPTypeRC, QPN: 1, WQECount: 8, MaxPost: 8, MaxSGE: maxBlockSGEs + 1, MaxInline: 64}
		q := &SQ{cfg: cfg, ring: make([]byte, 8*SendWQEBB), wrid: make([]uint64, 8), wqeHead: make([]uint32, 8)}
		q.encodeBlocks([]SendWR{write, write, other, write}, 0)
		if q.curPost != 2 {
			t.Errorf("encodeBlocks wrote %d requests of a list whose third is %+v; want 2", q.curPost, other)
		}
	}
}

// TestEncodeInline: encodeInline writes what encode writes for every
// inline request it takes (the opcodes below RDMA READ on RC and UC QPs,
// every flag set, signalled or not by default), of one to three SGEs from
// 0 bytes to past two WQEBBs, in every slot of a four-WQEBB ring, so that
// the data wraps round its end.
func TestEncodeInline(t *testing.T) {
	src := make([]byte, 512)
	for i := range src {
		src[i] = byte(0x30 + i)
	}
	addr := uint64(uintptr(unsafe.Pointer(&src[0])))
	checked := 0
	for _, typ := range []QPType{QPTypeRC, QPTypeUC} {
		for _, signalAll := range []bool{false, true} {
			cfg := SQConfig{QPType: typ, QPN: 0xabcde, WQECount: 4, MaxPost: 4, MaxSGE: 3, MaxInline: 180, SignalAll: signalAll}
			a := &SQ{cfg: cfg, ring: make([]byte, 4*SendWQEBB), wrid: make([]uint64, 4), wqeHead: make([]uint32, 4)}
			b := &SQ{cfg: cfg, ring: make([]byte, 4*SendWQEBB), wrid: make([]uint64, 4), wqeHead: make([]uint32, 4)}
			for op := SendOpcode(0); op < OpRDMARead; op++ {
				if !opcodeAllowed(typ, op) {
					continue
				}
				for flags := SendFlags(0); flags <= sendFlagsKnown; flags++ {
					if flags&SendInline == 0 {
						continue
					}
					for _, lens := range [][]uint32{{0}, {1}, {12}, {28}, {44}, {64}, {100}, {180}, {3, 0, 60}, {50, 70}} {
						for cur := range uint32(5) {
							wr := SendWR{ID: 0x5555 + uint64(cur), Opcode: op, Flags: flags, ImmData: 0x01020304, RemoteAddr: 0x1122334455667788, RKey: 0x99aabbcc}
							off := uint64(0)
							for _, l := range lens {
								wr.SGEs = append(wr.SGEs, SGE{Addr: addr + off, Length: l, LKey: 7})
								off += uint64(l) + 1
							}
							sameEncoding(t, a, b, (*SQ).encodeInline, &wr, 0xfffe+cur)
							checked++
						}
					}
				}
			}
		}
	}
	runtime.KeepAlive(src)
	t.Logf("%d requests encoded both ways", checked)
}

// sameEncoding encodes wr at cur_post cur with encode on a and with fast on
// b, two queues of the same configuration over rings of the same bytes, and
// fails unless both write the same ring, return the same control offset
// and size, and advance cur_post and record the request alike.
func sameEncoding(t *testing.T, a, b *SQ, fast func(*SQ, *SendWR, uint32) (int, int), wr *SendWR, cur uint32) {
	t.Helper()
	for i := range a.ring {
		a.ring[i], b.ring[i] = byte(i*7+3), byte(i*7+3)
	}
	a.curPost, b.curPost = cur, cur
	ca, sa := a.encode(wr, 9)
	cb, sb := fast(b, wr, 9)
	idx := int(cur) & (a.cfg.WQECount - 1)
	if ca != cb || sa != sb || a.curPost != b.curPost || !bytes.Equal(a.ring, b.ring) || a.wrid[idx] != b.wrid[idx] || a.wqeHead[idx] != b.wqeHead[idx] {
		t.Fatalf("%+v, %+v at cur_post %#x: the fast encoder gave ctrl %d, size %d, cur_post %#x, ring\n% x\nencode gave ctrl %d, size %d, cur_post %#x, ring\n% x",
			a.cfg, *wr, cur, cb, sb, b.curPost, b.ring, ca, sa, a.curPost, a.ring)
	}
}

// TestRecvOne: Post's path for one receive of one SGE leaves the ring, the
// request IDs, head and the doorbell record as postList does, in every
// slot, for max_gs 1 to 3, and refuses a receive for a full queue alike.
// Both write each entry as wantRecvWQE, which is built from the layout
// itself: postList has a shortcut of its own for such receives.
func TestRecvOne(t *testing.T) {
	checked := 0
	for maxSGE := 1; maxSGE <= 3; maxSGE++ {
		cfg := RQConfig{WQECount: 4, WQEShift: 6, MaxPost: 4, MaxSGE: maxSGE}
		a, err := NewRQ(aligned(4<<6), aligned(8), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewRQ(aligned(4<<6), aligned(8), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a.ring {
			a.ring[i], b.ring[i] = byte(i), byte(i)
		}
		for i := range 9 {
			wr := []RecvWR{{ID: 0x77 + uint64(i), SGEs: []SGE{{Addr: 0xf0f1f2f3f4f5f6f7 + uint64(i), Length: 0x200 + uint32(i), LKey: 0x1a2b3c4d}}}}
			entry := a.ring[(i&3)<<6 : (i&3+1)<<6]
			want := wantRecvWQE(entry, wr[0].SGEs[0], maxSGE)
			if _, err := a.Post(wr); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(entry, want) {
				t.Fatalf("max_gs %d, receive %d: the entry holds\n% x\nwant\n% x", maxSGE, i, entry, want)
			}
			if _, err := b.postList(wr); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.ring, b.ring) || a.head.Load() != b.head.Load() || a.db.Load() != b.db.Load() || a.wrid[i&3] != b.wrid[i&3] {
				t.Fatalf("max_gs %d, receive %d: Post left ring\n% x\nhead %d, record %#x; postList\n% x\nhead %d, record %#x",
					maxSGE, i, a.ring, a.head.Load(), a.db.Load(), b.ring, b.head.Load(), b.db.Load())
			}
			checked++
			a.Retire()
			b.Retire()
		}
		// A list of three through postList, each entry as wantRecvWQE.
		var list []RecvWR
		var want [][]byte
		for i := range 3 {
			sge := SGE{Addr: 0xa0a1a2a3a4a5a6a7 + uint64(i), Length: 0x300 + uint32(i), LKey: 0x5a5b5c5d + uint32(i)}
			list = append(list, RecvWR{ID: uint64(i), SGEs: []SGE{sge}})
			slot := int(a.head.Load()+uint32(i)) & 3
			want = append(want, wantRecvWQE(a.ring[slot<<6:(slot+1)<<6], sge, maxSGE))
		}
		head := a.head.Load()
		if _, err := a.Post(list); err != nil {
			t.Fatal(err)
		}
		if _, err := b.postList(list); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			slot := int(head+uint32(i)) & 3
			if got := a.ring[slot<<6 : (slot+1)<<6]; !bytes.Equal(got, want[i]) {
				t.Fatalf("max_gs %d, receive %d of a list: the entry holds\n% x\nwant\n% x", maxSGE, i, got, want[i])
			}
		}
		a.Retire()
		b.Retire()
		// A full queue: both refuse the fifth receive alike, and write
		// nothing for it.
		for i := range 5 {
			wr := []RecvWR{{ID: uint64(i), SGEs: []SGE{{Addr: 0x1000, Length: 64, LKey: 9}}}}
			ia, ea := a.Post(wr)
			ib, eb := b.postList(wr)
			if ia != ib || (ea == nil) != (eb == nil) || (i == 4) != (ea != nil) || (ea != nil && !errors.Is(ea, ErrQueueFull)) || !bytes.Equal(a.ring, b.ring) || a.db.Load() != b.db.Load() {
				t.Fatalf("max_gs %d, receive %d of 5 without completions: Post %d, %v; postList %d, %v", maxSGE, i, ia, ea, ib, eb)
			}
		}
		a.Retire()
		b.Retire()
	}
	t.Logf("%d receives posted both ways", checked)
}

// wantRecvWQE is the receive entry old becomes when one receive of sge is
// posted on a queue of max_gs maxSGE, written from the layout (struct
// mlx5_wqe_data_seg: byte_count, lkey and addr, big-endian; then, if the
// entry has room, an end marker of byte_count 0 and lkey
// MLX5_INVALID_LKEY, 0x100; qp.c mlx5_post_recv).
func wantRecvWQE(old []byte, sge SGE, maxSGE int) []byte {
	w := slices.Clone(old)
	binary.BigEndian.PutUint32(w[0:], sge.Length)
	binary.BigEndian.PutUint32(w[4:], sge.LKey)
	binary.BigEndian.PutUint64(w[8:], sge.Addr)
	if maxSGE > 1 {
		binary.BigEndian.PutUint32(w[16:], 0)
		binary.BigEndian.PutUint32(w[20:], 0x100)
		binary.BigEndian.PutUint64(w[24:], 0)
	}
	return w
}

// TestNewCQRefusesMisalignedRing: Poll loads each entry's op_own word
// atomically, so the ring must be aligned (mapped rings are page-aligned).
func TestNewCQRefusesMisalignedRing(t *testing.T) {
	buf := aligned(17 * CQESize)
	if _, err := NewCQ(buf[8:8+16*CQESize], aligned(8), aligned(4096), CQConfig{CQN: 1, Entries: 16}); err == nil {
		t.Error("NewCQ accepted a ring 8 bytes past a 64-byte boundary")
	}
	if _, err := NewCQ(buf[CQESize:], aligned(8), aligned(4096), CQConfig{CQN: 1, Entries: 16}); err != nil {
		t.Errorf("NewCQ refused an aligned ring: %v", err)
	}
}

// TestPostOne: Post's path for one request leaves the send ring, the
// request IDs, head, the doorbell record and the BlueFlame register as
// postList does, and refuses what postList refuses with the same error:
// every opcode and flag set, with and without an address vector on RC and
// UD QPs, atomics on and off, max_send_sge 2 and 3, SGE lists from none to
// three, inline data of 1 byte to one byte over max_inline_data, counters
// past 16 bits, and a full queue now and then.
func TestPostOne(t *testing.T) {
	var av AddressVector
	for i := range av {
		av[i] = byte(0x30 + i)
	}
	data := aligned(512)
	checked := 0
	refused := map[string]int{}
	for _, typ := range []QPType{QPTypeRC, QPTypeUD} {
		for _, maxSGE := range []int{2, 3} {
			for _, atomics := range []bool{false, true} {
				a, b := newTestQPWith(t, typ, maxSGE, atomics), newTestQPWith(t, typ, maxSGE, atomics)
				maxInline := uint32(a.sq.cfg.MaxInline)
				shapes := [][]uint32{{}, {0}, {1}, {64}, {maxInline}, {maxInline + 1}, {16, 32}, {16, 0, 32}}
				for _, q := range []*SQ{a.sq, b.sq} {
					q.curPost = 0xffe0
					q.head.Store(0xfffffff0)
					q.tail.Store(0xfffffff0)
				}
				for op := SendOpcode(0); int(op) <= len(deviceOpcode); op++ {
					for flags := SendFlags(0); flags <= sendFlagsKnown; flags++ {
						for _, withAV := range []bool{false, true} {
							for _, shape := range shapes {
								wr := SendWR{ID: uint64(checked), Opcode: op, Flags: flags, ImmData: 0x0c0d0e0f, RemoteAddr: 0x123456789abc, RKey: 0x77, CompareAdd: 5, Swap: 6, RemoteQPN: 0x4321, RemoteQKey: 0x11112222}
								if withAV {
									wr.AV = &av
								}
								off := uint64(0)
								for _, n := range shape {
									wr.SGEs = append(wr.SGEs, SGE{Addr: uintptrOf(data) + off, Length: n, LKey: 0x99})
									off += uint64(n)
								}
								ia, ea := a.sq.Post([]SendWR{wr})
								ib, eb := b.sq.postList([]SendWR{wr}, false)
								if ia != ib || (ea == nil) != (eb == nil) || (ea != nil && ea.Error() != eb.Error()) {
									t.Fatalf("%v QP, %+v: Post %d, %v; postList %d, %v", typ, wr, ia, ea, ib, eb)
								}
								if !bytes.Equal(a.sq.ring, b.sq.ring) || !bytes.Equal(a.dbrec, b.dbrec) || !bytes.Equal(a.uar, b.uar) ||
									a.sq.head.Load() != b.sq.head.Load() || a.sq.curPost != b.sq.curPost ||
									!slices.Equal(a.sq.wrid, b.sq.wrid) || !slices.Equal(a.sq.wqeHead, b.sq.wqeHead) {
									t.Fatalf("%v QP, %+v: Post and postList left different queues", typ, wr)
								}
								for _, e := range []error{ErrQueueFull, ErrAtomicsDisabled, ErrUDAddress, ErrInlineTooLong, ErrTooManySGEs, ErrBadOpcode} {
									if errors.Is(ea, e) {
										refused[e.Error()]++
									}
								}
								checked++
								if checked/61%3 != 0 { // every third run of 61 requests, none completes
									a.sq.Retire()
									b.sq.Retire()
								}
							}
						}
					}
				}
				if a.sq.curPost < 0x10000 {
					t.Errorf("cur_post stayed at %#x, below the 16-bit wrap", a.sq.curPost)
				}
			}
		}
	}
	for _, e := range []error{ErrQueueFull, ErrAtomicsDisabled, ErrUDAddress, ErrInlineTooLong, ErrTooManySGEs, ErrBadOpcode} {
		if refused[e.Error()] == 0 {
			t.Errorf("no request was refused with %v", e)
		}
	}
	t.Logf("%d requests posted both ways; refused: %v", checked, refused)
}

// TestDoorbellInsideRegister: the doorbell, which writes the BlueFlame
// register and reads the ring through unchecked pointers
// (mmio.StoreForDevice32WC), stays inside the register's current half and
// copies the WQE's own blocks, wrapped at the end of the ring, for inline
// sends of every length up to max_inline_data (WQEs of one WQEBB up to
// more than a half, which ring with 8 bytes), WRITEs and lists, in every
// slot of a small ring. The register sits between guard bytes.
func TestDoorbellInsideRegister(t *testing.T) {
	const guard = 64
	sqCfg, sqBytes, err := SQSize(&testLimits, QPTypeRC, 4, 1, 300)
	if err != nil {
		t.Fatal(err)
	}
	sqCfg.QPN = 0x42
	dbrec := aligned(8)
	region := aligned(guard + 512 + guard)
	for i := range region {
		region[i] = 0xaa
	}
	bf := &BlueFlame{Reg: region[guard : guard+512 : guard+512], BufSize: 256, Dedicated: true, PreferBF: true}
	q, err := NewSQ(aligned(sqBytes), dbrec, bf, sqCfg)
	if err != nil {
		t.Fatal(err)
	}
	src := aligned(512)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	wrap, bfPosts := 0, 0
	post := func(wrs []SendWR) {
		t.Helper()
		half, ctrl := bf.offset, int(q.curPost)&(sqCfg.WQECount-1)*SendWQEBB
		other := slices.Clone(bf.Reg[half^bf.BufSize : half^bf.BufSize+bf.BufSize])
		if _, err := q.Post(wrs); err != nil {
			t.Fatal(err)
		}
		if len(wrs) > 1 { // rung with the last WQE, a WRITE of one WQEBB
			ctrl = int(q.curPost-1) & (sqCfg.WQECount - 1) * SendWQEBB
		}
		for i, b := range region {
			if (i < guard || i >= guard+512) && b != 0xaa {
				t.Fatalf("%+v: the doorbell wrote byte %d outside the register", wrs[0], i-guard)
			}
		}
		if !bytes.Equal(bf.Reg[half^bf.BufSize:half^bf.BufSize+bf.BufSize], other) {
			t.Fatalf("%+v: the doorbell wrote the register's other half", wrs[0])
		}
		size := int(q.ring[ctrl+7] & 0x3f) // qpn_ds: the WQE's size in 16-byte units
		n := 0
		if len(wrs) == 1 && size > 1 && size <= bf.BufSize/16 {
			n = (size*16 + SendWQEBB - 1) / SendWQEBB
			bfPosts++
		}
		if ctrl+n*SendWQEBB > len(q.ring) {
			wrap++
		}
		var want []byte
		for k := range max(n, 1) {
			at := (ctrl + k*SendWQEBB) % len(q.ring)
			want = append(want, q.ring[at:at+SendWQEBB]...)
		}
		if n == 0 {
			want = want[:8]
		}
		if got := bf.Reg[half : half+len(want)]; !bytes.Equal(got, want) {
			t.Fatalf("%+v (WQE of %d units at %d): the register's half at %d holds\n% x\nwant\n% x", wrs[0], size, ctrl, half, got, want)
		}
		q.Retire()
	}
	for round := range 3 {
		for n := range sqCfg.MaxInline + 1 {
			post([]SendWR{{ID: uint64(n), Opcode: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: uintptrOf(src) + uint64(round), Length: uint32(n)}}}})
			w := SendWR{Opcode: OpRDMAWrite, RemoteAddr: 0x1000, RKey: 5, SGEs: []SGE{{Addr: 0x2000, Length: uint32(n + 1), LKey: 6}}}
			post([]SendWR{w})
			if n%17 == 0 {
				post([]SendWR{w, w})
			}
		}
	}
	if wrap == 0 || bfPosts == 0 {
		t.Fatalf("%d BlueFlame posts, %d wrapped: the test did not reach both", bfPosts, wrap)
	}
}

// TestNewSQRefusesBadBlueFlame: the doorbell writes the register through
// unchecked pointers, so NewSQ must refuse any geometry whose halves do not
// fit the register, including a half size whose double overflows.
func TestNewSQRefusesBadBlueFlame(t *testing.T) {
	sqCfg, sqBytes, err := SQSize(&testLimits, QPTypeRC, 4, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	reg := aligned(512)
	for _, tc := range []struct {
		name string
		bf   *BlueFlame
	}{
		{"no register", nil},
		{"a dedicated register with halves of 0 bytes", &BlueFlame{Reg: reg, BufSize: 0, Dedicated: true}},
		{"a half not a multiple of 64", &BlueFlame{Reg: reg, BufSize: 100}},
		{"halves longer than the register", &BlueFlame{Reg: reg, BufSize: 320}},
		{"a half whose double overflows", &BlueFlame{Reg: reg, BufSize: 1 << 62}},
		{"a misaligned register", &BlueFlame{Reg: reg[4:260], BufSize: 64}},
	} {
		if _, err := NewSQ(aligned(sqBytes), aligned(8), tc.bf, sqCfg); err == nil {
			t.Errorf("%s: NewSQ accepted it", tc.name)
		}
	}
	if _, err := NewSQ(aligned(sqBytes), aligned(8), &BlueFlame{Reg: reg, BufSize: 256}, sqCfg); err != nil {
		t.Errorf("NewSQ refused two halves of 256 bytes in 512: %v", err)
	}
}
