package mlx5

// The cases of the differential harness (docs/mlx5.md §7): a fixed corpus
// that walks every opcode, flag, SGE and inline boundary, queue wrap,
// doorbell choice, refusal, completion opcode and error syndrome, and
// random cases drawn from a seed. Each case is text that both
// test/mlx5diff/harness.c (libmlx5) and runCase (this package) execute.

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

type diffCase struct {
	name string
	body []string
}

func (c *diffCase) add(format string, args ...any) {
	c.body = append(c.body, fmt.Sprintf(format, args...))
}

func (c diffCase) text() string {
	return "case " + c.name + "\n" + strings.Join(c.body, "\n") + "\nend\n"
}

// sqShape is the configuration line of a send-queue case.
type sqShape struct {
	qpType                         QPType
	qpn                            uint32
	wqeCnt, maxPost, maxGS, maxInl int
	sigAll, atomics                bool
	bfSize                         int
	dedicated, preferBF, shutUp    bool
	start                          uint32
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s sqShape) line() string {
	return fmt.Sprintf("sq %d %#x %d %d %d %d %d %d %d %d %d %d %#x", s.qpType, s.qpn, s.wqeCnt, s.maxPost, s.maxGS, s.maxInl,
		b2i(s.sigAll), b2i(s.atomics), s.bfSize, b2i(s.dedicated), b2i(s.preferBF), b2i(s.shutUp), s.start)
}

// sqShapeFor sizes a send queue as libmlx5 would for the capabilities.
func sqShapeFor(t QPType, wr, sge, inl int) sqShape {
	lim := DeviceLimits{MaxSQDescSize: 512, MaxRQDescSize: 512, MaxSendWQEBB: 1 << 15, MaxRecvWR: 1 << 15, MaxSRQRecvWR: 1 << 15}
	cfg, _, err := SQSize(&lim, t, wr, sge, inl)
	if err != nil {
		panic(err)
	}
	return sqShape{qpType: t, qpn: 0x1234, wqeCnt: cfg.WQECount, maxPost: cfg.MaxPost, maxGS: cfg.MaxSGE, maxInl: cfg.MaxInline,
		atomics: true, bfSize: 256, dedicated: true}
}

type genWR struct {
	id          uint64
	op          SendOpcode
	flags       SendFlags
	imm         uint32
	raddr       uint64
	rkey        uint32
	cmp, swap   uint64
	rqpn, rqkey uint32
	av          *AddressVector
	sges        []SGE
}

func (c *diffCase) post(wrs ...genWR) {
	c.add("post %d", len(wrs))
	for _, w := range wrs {
		av := "-"
		if w.av != nil {
			av = fmt.Sprintf("%x", w.av[:])
		}
		c.add("wr %#x %d %d %#x %#x %#x %#x %#x %#x %#x %s %d", w.id, w.op, w.flags, w.imm, w.raddr, w.rkey, w.cmp, w.swap,
			w.rqpn, w.rqkey, av, len(w.sges))
		for _, s := range w.sges {
			c.add("sge %#x %#x %#x", s.Addr, s.Length, s.LKey)
		}
	}
}

func (c *diffCase) postRecv(wrs ...RecvWR) {
	c.add("post %d", len(wrs))
	for _, w := range wrs {
		c.add("rwr %#x %d", w.ID, len(w.SGEs))
		for _, s := range w.SGEs {
			c.add("sge %#x %#x %#x", s.Addr, s.Length, s.LKey)
		}
	}
}

func testAV(seed byte) *AddressVector {
	var av AddressVector
	for i := range av {
		av[i] = byte(i)*7 + seed
	}
	return &av
}

// sges returns n SGEs with the given lengths (cycled); inline SGEs address
// the arena by offset.
func sges(n int, lengths ...uint32) []SGE {
	out := make([]SGE, n)
	off := uint64(0)
	for i := range out {
		l := lengths[i%len(lengths)]
		out[i] = SGE{Addr: 0x7f0000001000 + off, Length: l, LKey: 0x1100 + uint32(i)}
		off += uint64(l) + 24
	}
	return out
}

func inlineSGEs(lengths ...uint32) []SGE {
	out := make([]SGE, len(lengths))
	off := uint64(5)
	for i, l := range lengths {
		out[i] = SGE{Addr: off, Length: l, LKey: 0x2200 + uint32(i)}
		off += uint64(l) + 3
	}
	return out
}

func wrFor(op SendOpcode, flags SendFlags, s []SGE, id uint64) genWR {
	w := genWR{id: id, op: op, flags: flags, sges: s, imm: 0xa1b2c3d4, raddr: 0x10000 + id*64, rkey: 0xabcd0000 | uint32(id&0xffff)}
	if op == OpAtomicCmpAndSwp || op == OpAtomicFetchAndAdd {
		w.raddr &^= 7
		w.cmp, w.swap = 0x0102030405060708, 0x1112131415161718
	}
	return w
}

var rcOps = []SendOpcode{OpRDMAWrite, OpRDMAWriteWithImm, OpSend, OpSendWithImm, OpRDMARead, OpAtomicCmpAndSwp, OpAtomicFetchAndAdd}

// opsFor is every opcode a QP of type t takes: rcOps, and SEND_WITH_INV
// on RC and UC.
func opsFor(t QPType) []SendOpcode {
	switch t {
	case QPTypeUC:
		return append(rcOps[:4:4], OpSendWithInv)
	case QPTypeUD:
		return []SendOpcode{OpSend, OpSendWithImm}
	}
	return append(rcOps[:len(rcOps):len(rcOps)], OpSendWithInv)
}

func inlineOK(op SendOpcode) bool { return op <= OpSendWithImm || op == OpSendWithInv }

// fixedCases is the corpus every run compares in full.
func fixedCases() []diffCase {
	var cs []diffCase
	add := func(c diffCase) { cs = append(cs, c) }
	types := []QPType{QPTypeRC, QPTypeUC, QPTypeUD}

	// Every opcode, flag and SGE count on each QP type.
	for _, t := range types {
		for _, op := range opsFor(t) {
			for _, flags := range []SendFlags{0, SendSignaled, SendFence | SendSignaled, SendSolicited, SendFence | SendSolicited | SendSignaled} {
				for _, n := range []int{0, 1, 2, 4} {
					c := diffCase{name: fmt.Sprintf("send-%v-op%d-f%d-sge%d", t, op, flags, n)}
					sh := sqShapeFor(t, 8, 4, 0)
					c.add("%s", sh.line())
					w := wrFor(op, flags, sges(n, 100, 0, 4096, 1), 1)
					if t == QPTypeUD {
						w.av, w.rqpn, w.rqkey = testAV(byte(op)), 0x345678, 0x11223344
					}
					c.post(w)
					add(c)
				}
			}
		}
	}
	// Inline: every length from 0 to the maximum at the WQEBB boundaries,
	// split over SGEs, on each type, wrapping the ring.
	for _, t := range types {
		sh := sqShapeFor(t, 4, 2, 220)
		for _, op := range []SendOpcode{OpSend, OpSendWithImm, OpRDMAWrite, OpRDMAWriteWithImm, OpSendWithInv} {
			if !opcodeAllowed(t, op) {
				continue
			}
			for _, l := range []uint32{0, 1, 11, 12, 13, 27, 28, 29, 43, 44, 45, 59, 60, 61, 107, 108, 109, 171, 172, 173, uint32(sh.maxInl)} {
				if int(l) > sh.maxInl {
					continue
				}
				for _, split := range []bool{false, true} {
					for _, start := range []uint32{0, uint32(sh.wqeCnt - 1), uint32(sh.wqeCnt - 2)} {
						c := diffCase{name: fmt.Sprintf("inline-%v-op%d-len%d-split%v-start%d", t, op, l, split, start)}
						s := sh
						s.start = start
						c.add("%s", s.line())
						ls := []uint32{l}
						if split {
							ls = []uint32{l / 3, 0, l - l/3}
						}
						w := wrFor(op, SendInline|SendSignaled, inlineSGEs(ls...), 7)
						if t == QPTypeUD {
							w.av, w.rqpn, w.rqkey = testAV(3), 0x12, 0x80010000
						}
						c.post(w)
						add(c)
					}
				}
			}
		}
	}
	// Doorbell choices: BlueFlame on a dedicated bfreg, the shared bfreg,
	// preferred, disabled, register sizes, two posts to flip the halves.
	for _, bfSize := range []int{256, 512} {
		for _, dedicated := range []bool{false, true} {
			for _, prefer := range []bool{false, true} {
				for _, shut := range []bool{false, true} {
					c := diffCase{name: fmt.Sprintf("doorbell-bf%d-ded%v-prefer%v-shut%v", bfSize, dedicated, prefer, shut)}
					sh := sqShapeFor(QPTypeRC, 8, 8, 128)
					sh.bfSize, sh.dedicated, sh.preferBF, sh.shutUp = bfSize, dedicated, prefer, shut
					if !dedicated {
						sh.bfSize = 0 // bfreg 0: no halves (mlx5.c mlx5_init_context)
					}
					c.add("%s", sh.line())
					c.post(wrFor(OpSend, SendInline|SendSignaled, inlineSGEs(100), 1))
					c.post(wrFor(OpRDMAWrite, SendSignaled, sges(8, 64), 2))
					c.post(wrFor(OpRDMAWrite, 0, sges(1, 64), 3))
					c.post(wrFor(OpSend, SendInline, inlineSGEs(8), 4), wrFor(OpSend, SendInline, inlineSGEs(9), 5))
					c.post(wrFor(OpSend, SendInline, inlineSGEs(0), 6))
					add(c)
				}
			}
		}
	}
	// Signal-all QPs, lists, ring wrap and the 16-bit WQE counter wrap.
	for _, start := range []uint32{0, 5, 0xfffe, 0xfffffffe} {
		for _, sigAll := range []bool{false, true} {
			c := diffCase{name: fmt.Sprintf("list-start%#x-sigall%v", start, sigAll)}
			sh := sqShapeFor(QPTypeRC, 6, 3, 60)
			sh.start, sh.sigAll = start, sigAll
			c.add("%s", sh.line())
			for round := range 4 {
				var ws []genWR
				for i := range 3 {
					op := rcOps[(round*3+i)%len(rcOps)]
					f := SendFlags(0)
					if i == 2 {
						f = SendSignaled
					}
					if inlineOK(op) && round%2 == 1 {
						ws = append(ws, wrFor(op, f|SendInline, inlineSGEs(uint32(10*i+round)), uint64(round*3+i)))
					} else {
						ws = append(ws, wrFor(op, f, sges(3, 8, 16, 0), uint64(round*3+i)))
					}
				}
				c.post(ws...)
				c.add("complete")
			}
			add(c)
		}
	}
	// Refusals, each as the last post of its case.
	refuse := func(name string, sh sqShape, prelude int, bad genWR, badIndex int) {
		c := diffCase{name: "refuse-" + name}
		c.add("%s", sh.line())
		for i := range prelude {
			c.post(wrFor(OpSend, SendSignaled, sges(1, 32), uint64(100+i)))
		}
		var ws []genWR
		for i := range badIndex {
			ws = append(ws, wrFor(OpRDMAWrite, 0, sges(1, 8), uint64(200+i)))
		}
		ws = append(ws, bad)
		c.post(ws...)
		add(c)
	}
	rc := sqShapeFor(QPTypeRC, 4, 2, 64)
	for _, at := range []int{0, 1, 2} {
		refuse(fmt.Sprintf("opcode-at%d", at), rc, 0, wrFor(12, 0, nil, 9), at)
		refuse(fmt.Sprintf("opcode100-at%d", at), rc, 0, wrFor(100, 0, nil, 9), at)
		refuse(fmt.Sprintf("sge-at%d", at), rc, 0, wrFor(OpSend, 0, sges(3, 8), 9), at)
		refuse(fmt.Sprintf("inline-at%d", at), rc, 0, wrFor(OpSend, SendInline, inlineSGEs(40, 40), 9), at)
		noAtomics := rc
		noAtomics.atomics = false
		refuse(fmt.Sprintf("atomics-at%d", at), noAtomics, 0, wrFor(OpAtomicFetchAndAdd, 0, sges(1, 8), 9), at)
	}
	for _, prelude := range []int{rc.maxPost - 1, rc.maxPost} {
		refuse(fmt.Sprintf("full-after%d", prelude), rc, prelude, wrFor(OpSend, 0, nil, 9), 0)
	}
	refuse("full-in-list", rc, rc.maxPost-2, wrFor(OpSend, 0, nil, 9), 2)
	// Two faults at once: libmlx5 checks the opcode before the room.
	refuse("opcode-when-full", rc, rc.maxPost, wrFor(100, 0, nil, 9), 0)
	refuse("sge-when-full", rc, rc.maxPost, wrFor(OpSend, 0, sges(3, 8), 9), 0)

	// Receive queues: SGE counts with zero lengths, the terminator, wrap,
	// lists and refusals.
	for _, maxGS := range []int{1, 2, 4} {
		lim := DeviceLimits{MaxRQDescSize: 512, MaxRecvWR: 1 << 15}
		cfg, _, err := RQSize(&lim, 8, maxGS)
		if err != nil {
			panic(err)
		}
		for _, start := range []uint32{0, uint32(cfg.WQECount - 1), 0xfffe} {
			c := diffCase{name: fmt.Sprintf("recv-gs%d-start%#x", maxGS, start)}
			c.add("rq %d %d %d %d %#x", cfg.WQECount, cfg.WQEShift, cfg.MaxPost, cfg.MaxSGE, start)
			for n := 0; n <= cfg.MaxSGE; n++ {
				c.postRecv(RecvWR{ID: uint64(0x900 + n), SGEs: sges(n, 256, 0, 16)})
			}
			c.add("complete")
			c.postRecv(RecvWR{ID: 0xa0, SGEs: sges(1, 4)}, RecvWR{ID: 0xa1, SGEs: sges(cfg.MaxSGE, 0)}, RecvWR{ID: 0xa2})
			add(c)
			r := diffCase{name: fmt.Sprintf("recv-refuse-sge-gs%d-start%#x", maxGS, start)}
			r.add("rq %d %d %d %d %#x", cfg.WQECount, cfg.WQEShift, cfg.MaxPost, cfg.MaxSGE, start)
			r.postRecv(RecvWR{ID: 1, SGEs: sges(cfg.MaxSGE+1, 8)})
			add(r)
			f := diffCase{name: fmt.Sprintf("recv-refuse-full-gs%d-start%#x", maxGS, start)}
			f.add("rq %d %d %d %d %#x", cfg.WQECount, cfg.WQEShift, cfg.MaxPost, cfg.MaxSGE, start)
			var ws []RecvWR
			for i := 0; i <= cfg.MaxPost; i++ {
				ws = append(ws, RecvWR{ID: uint64(i), SGEs: sges(1, 8)})
			}
			f.postRecv(ws...)
			add(f)
		}
	}
	// SRQs: sizing with and without libmlx5's wait queue, posts, frees
	// (completions) and refusals.
	for _, maxWR := range []int{1, 3, 8} {
		for _, maxGS := range []int{0, 1, 3, 5} {
			for _, devWR := range []int{1 << 15, maxWR + 1} {
				c := diffCase{name: fmt.Sprintf("srq-wr%d-gs%d-dev%d", maxWR, maxGS, devWR)}
				c.add("srq %d %d %d %d", maxWR, maxGS, devWR, 1<<15)
				lim := DeviceLimits{MaxSRQRecvWR: devWR, MaxRecvWR: 1 << 15}
				cfg, _, _ := SRQSize(&lim, maxWR, maxGS)
				for n := 0; n <= min(cfg.MaxSGE, 3); n++ {
					c.postRecv(RecvWR{ID: uint64(0x700 + n), SGEs: sges(n, 64, 0)})
				}
				c.add("free %#x", 1)
				c.add("free %#x", 0)
				c.postRecv(RecvWR{ID: 0x7a, SGEs: sges(min(1, cfg.MaxSGE), 8)}, RecvWR{ID: 0x7b})
				if cfg.MaxSGE > 0 {
					c.postRecv(RecvWR{ID: 0x7c, SGEs: sges(cfg.MaxSGE+1, 8)})
				}
				add(c)
				f := diffCase{name: fmt.Sprintf("srq-full-wr%d-gs%d-dev%d", maxWR, maxGS, devWR)}
				f.add("srq %d %d %d %d", maxWR, maxGS, devWR, 1<<15)
				var ws []RecvWR
				for i := 0; i <= cfg.Tail; i++ {
					ws = append(ws, RecvWR{ID: uint64(i)})
				}
				f.postRecv(ws...)
				add(f)
			}
		}
	}
	// Sizing.
	for _, t := range types {
		for _, wr := range []int{0, 1, 3, 64, 1000} {
			for _, sge := range []int{0, 1, 2, 5, 16, 30} {
				for _, inl := range []int{0, 1, 60, 64, 200, 400} {
					for _, rwr := range []int{0, 1, 7, 100} {
						c := diffCase{name: fmt.Sprintf("qpsize-%v-%d-%d-%d-%d", t, wr, sge, inl, rwr)}
						c.add("qpsize %d %d %d %d %d %d %d %d %d %d", t, wr, sge, inl, rwr, sge, 512, 512, 1<<15, 1<<14)
						add(c)
					}
				}
			}
		}
	}
	for _, wr := range []int{1, 2, 3, 100, 1000} {
		for _, sge := range []int{0, 1, 2, 7, 31, 64} {
			for _, dev := range []int{16, 1 << 15} {
				c := diffCase{name: fmt.Sprintf("srqsize-%d-%d-%d", wr, sge, dev)}
				c.add("srqsize %d %d %d %d", wr, sge, dev, 512)
				add(c)
			}
		}
	}
	cs = append(cs, fixedAHCases()...)
	for _, depth := range []int{1, 2, 3, 7, 8, 100, 255, 256} {
		c := diffCase{name: fmt.Sprintf("cqinit-%d", depth)}
		c.add("cqinit %d", depth)
		cs = append(cs, c)
	}
	cs = append(cs, fixedCQCases()...)
	return append(cs, fixedCmdCases()...)
}

// fixedCmdCases are the create commands' cases: the driver data and core
// fields libmlx5 sends for a QP, CQ or SRQ, and the capabilities it
// reports (docs/mlx5.md §10).
func fixedCmdCases() []diffCase {
	var cs []diffCase
	i := 0
	for _, t := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		for _, wr := range []int{1, 3, 64, 1000} {
			for _, sge := range []int{0, 1, 2, 16, 30} {
				for _, inl := range []int{0, 1, 60, 200, 400} {
					for _, rwr := range []int{1, 7, 100} {
						rsge, sigAll, cqev := []int{0, 1, 3}[i%3], i/3%2, i/6%2
						c := diffCase{name: fmt.Sprintf("qpcmd-%v-%d-%d-%d-%d-%d-%d-%d", t, wr, sge, inl, rwr, rsge, sigAll, cqev)}
						c.add("qpcmd %d %d %d %d %d %d %d %d %#x %#x %d %d %d %d %d", t, wr, sge, inl, rwr, rsge, sigAll, cqev, i+1, 0x100+i, i%8, 512, 512, 1<<15, 1<<14)
						cs = append(cs, c)
						i++
					}
				}
			}
		}
	}
	for _, depth := range []int{1, 2, 3, 7, 8, 100, 255, 256, 1 << 16, 1 << 24} {
		c := diffCase{name: fmt.Sprintf("cqcmd-%d", depth)}
		c.add("cqcmd %d %#x", depth, 0x40+depth%7)
		cs = append(cs, c)
	}
	for _, wr := range []int{1, 2, 3, 100, 1000, 40000} {
		for _, sge := range []int{0, 1, 2, 7, 31, 32, 33} {
			for _, dev := range []int{16, 1 << 15} {
				c := diffCase{name: fmt.Sprintf("srqcmd-%d-%d-%d", wr, sge, dev)}
				c.add("srqcmd %d %d %d %d %d %#x", wr, sge, dev, 512, 512, 0x55+wr%5)
				cs = append(cs, c)
			}
		}
	}
	return cs
}

type ahSpec struct {
	eth, grhReq, v2, uhw, global bool
	random                       uint32
	attr                         AHAttr
	mac                          [6]byte
}

func (s ahSpec) line() string {
	a := s.attr
	return fmt.Sprintf("ah %d %d %d %d %#x %#x %d %d %d %d %#x %d %d %d %x %x", b2i(s.eth), b2i(s.grhReq), b2i(s.v2), b2i(s.uhw), s.random,
		a.DLID, a.SL, a.SrcPathBits, a.StaticRate, b2i(s.global), a.FlowLabel, a.SGIDIndex, a.HopLimit, a.TrafficClass, a.DGID[:], s.mac[:])
}

func fixedAHCases() []diffCase {
	var cs []diffCase
	gid := [16]byte{0xfe, 0x80, 15: 1}
	i := 0
	for _, eth := range []bool{false, true} {
		for _, grhReq := range []bool{false, true} {
			for _, v2 := range []bool{false, true} {
				for _, global := range []bool{false, true} {
					for _, fl := range []uint32{0, 1, 0x3fff, 0x4000, 0xfffff, 0x123456} {
						for _, rate := range []uint8{0, 2, 3, 7, 14, 16, 22, 23, 200} {
							s := ahSpec{eth: eth, grhReq: grhReq, v2: v2, uhw: i%2 == 0, global: global, random: uint32(i) * 7919,
								attr: AHAttr{DLID: 0x1234, SL: uint8(i % 16), SrcPathBits: uint8(i * 37), StaticRate: rate, IsGlobal: global,
									DGID: gid, FlowLabel: fl, SGIDIndex: uint8(i), HopLimit: 64, TrafficClass: uint8(i * 3)},
								mac: [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, byte(i)}}
							c := diffCase{name: fmt.Sprintf("ah-%d", i)}
							c.add("%s", s.line())
							cs = append(cs, c)
							i++
						}
					}
				}
			}
		}
	}
	return cs
}

func randomAH(r *rand.Rand, name string) diffCase {
	var a AHAttr
	a.DLID, a.SL, a.SrcPathBits, a.StaticRate = uint16(r.Uint32()), uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(30))
	a.IsGlobal = r.IntN(4) != 0
	a.FlowLabel = pick(r, 0, r.Uint32(), r.Uint32()&0xfffff)
	a.SGIDIndex, a.HopLimit, a.TrafficClass = uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256))
	for i := range a.DGID {
		a.DGID[i] = byte(r.Uint32())
	}
	s := ahSpec{eth: r.IntN(2) == 0, grhReq: r.IntN(4) == 0, v2: r.IntN(2) == 0, uhw: r.IntN(2) == 0, global: a.IsGlobal, random: r.Uint32(), attr: a}
	for i := range s.mac {
		s.mac[i] = byte(r.Uint32())
	}
	c := diffCase{name: name}
	c.add("%s", s.line())
	return c
}

// cqe builds a 64-byte completion entry.
type cqeSpec struct {
	opcode    uint8 // high nibble of op_own
	owner     uint8
	qpn       uint32
	wqeOpcode uint8 // top byte of sop_drop_qpn (requester)
	srqnUIDX  uint32
	wqeCtr    uint16
	byteCnt   uint32
	immInval  uint32
	flagsRQPN uint32
	slid      uint16
	mlPath    uint8
	syndrome  uint8
	vendor    uint8
	noise     uint64 // fills the bytes libmlx5 does not read
}

func (s cqeSpec) hex() string {
	var b [CQESize]byte
	r := rand.New(rand.NewPCG(s.noise, 17))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[cqeApp] = 0
	b[cqeMLPath] = s.mlPath
	be.PutUint16(b[cqeSLID:], s.slid)
	be.PutUint32(b[cqeFlagsRQPN:], s.flagsRQPN)
	be.PutUint32(b[cqeSRQNUIDX:], s.srqnUIDX)
	be.PutUint32(b[cqeImmInvalPKey:], s.immInval)
	be.PutUint32(b[cqeByteCnt:], s.byteCnt)
	b[cqeVendorSynd] = s.vendor
	b[cqeSyndrome] = s.syndrome
	be.PutUint32(b[cqeSopDropQPN:], uint32(s.wqeOpcode)<<24|s.qpn&0xffffff)
	be.PutUint16(b[cqeWQECounter:], s.wqeCtr)
	b[cqeOpOwn] = s.opcode<<4 | s.owner&1
	return fmt.Sprintf("%x", b[:])
}

var syndromes = []uint8{0x01, 0x02, 0x04, 0x05, 0x06, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x22, 0x00, 0x07, 0xff}

func fixedCQCases() []diffCase {
	var cs []diffCase
	const qpn, uidx, srqn = 0x4321, 0x77, 0x99
	for _, version := range []int{0, 1} {
		for _, start := range []uint32{0, 7, 0xfffffe} {
			header := func(c *diffCase) {
				c.add("cq %d %#x %d %#x", 8, 0x5a5, version, start)
				c.add("srq %#x %d %d", srqn, 4, 2)
				c.add("qp %#x %#x %d %d %#x %d", qpn, uidx, 16, 8, 3, -1)
				c.add("qp %#x %#x %d %d %#x %d", qpn+1, uidx+1, 8, 0, 0, 0)
			}
			// Fill slots from the consumer index on with the owner
			// parity the device would give them.
			slotOwner := func(i uint32) (uint32, uint8) {
				n := start + i
				return n & 7, uint8(n >> 3 & 1)
			}
			key := func(q uint32) uint32 {
				if version == 1 {
					return uidx + q
				}
				return 0
			}
			var specs []cqeSpec
			for _, wop := range []uint8{opcodeRDMAWrite, opcodeRDMAWriteImm, opcodeSend, opcodeSendImm, 0x01, opcodeRDMARead, opcodeAtomicCS, opcodeAtomicFA} {
				specs = append(specs, cqeSpec{opcode: cqeReq, qpn: qpn, wqeOpcode: wop, srqnUIDX: key(0), wqeCtr: uint16(wop) * 3, byteCnt: 0x1234, noise: uint64(wop)})
			}
			for _, op := range []uint8{cqeRespWrImm, cqeRespSend, cqeRespSendImm, cqeRespSendInv} {
				for _, g := range []uint32{0, 1, 2, 3} {
					specs = append(specs, cqeSpec{opcode: op, qpn: qpn, srqnUIDX: key(0), byteCnt: 0x2000 + uint32(op), immInval: 0xdeadbeef,
						flagsRQPN: g<<28 | 0x5<<24 | 0xabcdef, slid: 0x1357, mlPath: 0xff, noise: uint64(op)*4 + uint64(g)})
				}
				// The same on the QP that receives from the SRQ.
				s := cqeSpec{opcode: op, qpn: qpn + 1, srqnUIDX: key(1), wqeCtr: 2, byteCnt: 77, immInval: 0x01020304, flagsRQPN: 0x12345678, noise: 99}
				if version == 0 {
					s.srqnUIDX = srqn
				}
				specs = append(specs, s)
			}
			for _, syn := range syndromes {
				specs = append(specs, cqeSpec{opcode: cqeReqErr, qpn: qpn, srqnUIDX: key(0), wqeCtr: uint16(syn), syndrome: syn, vendor: syn ^ 0x5a, noise: uint64(syn)})
				specs = append(specs, cqeSpec{opcode: cqeRespErr, qpn: qpn, srqnUIDX: key(0), syndrome: syn, vendor: syn + 1, noise: uint64(syn) + 1000})
				s := cqeSpec{opcode: cqeRespErr, qpn: qpn + 1, srqnUIDX: key(1), wqeCtr: 1, syndrome: syn, vendor: 0x42, noise: uint64(syn) + 2000}
				if version == 0 {
					s.srqnUIDX = srqn
				}
				specs = append(specs, s)
			}
			specs = append(specs, cqeSpec{opcode: cqeResize, qpn: qpn, noise: 5})
			// Feed them through a ring of 8 in groups, polling with
			// different batch sizes.
			for g := 0; g*6 < len(specs); g++ {
				c := diffCase{name: fmt.Sprintf("cq-v%d-start%#x-group%d", version, start, g)}
				header(&c)
				group := specs[g*6 : min(len(specs), g*6+6)]
				for i, s := range group {
					slot, owner := slotOwner(uint32(i))
					s.owner = owner
					c.add("cqe %#x %s", slot, s.hex())
				}
				c.add("poll 1")
				c.add("poll 2")
				c.add("poll 8")
				c.add("poll 4")
				cs = append(cs, c)
			}
			// Unattributable entries: an unknown QP, NO_PACKET, SIG_ERR,
			// each after a good one.
			for _, bad := range []cqeSpec{
				{opcode: cqeReq, qpn: 0x999, srqnUIDX: 0x999},
				{opcode: cqeRespSend, qpn: 0x999, srqnUIDX: 0x999},
				{opcode: cqeNoPacket, qpn: qpn, srqnUIDX: key(0)},
				{opcode: cqeSigErr, qpn: qpn, srqnUIDX: key(0)},
			} {
				c := diffCase{name: fmt.Sprintf("cq-v%d-start%#x-bad%d", version, start, bad.opcode)}
				header(&c)
				slot, owner := slotOwner(0)
				c.add("cqe %#x %s", slot, cqeSpec{opcode: cqeReq, qpn: qpn, srqnUIDX: key(0), wqeOpcode: opcodeSend, owner: owner}.hex())
				slot, owner = slotOwner(1)
				bad.owner = owner
				c.add("cqe %#x %s", slot, bad.hex())
				slot, owner = slotOwner(2)
				c.add("cqe %#x %s", slot, cqeSpec{opcode: cqeReq, qpn: qpn, srqnUIDX: key(0), wqeOpcode: opcodeRDMARead, owner: owner, byteCnt: 9}.hex())
				c.add("poll 4")
				c.add("poll 4")
				cs = append(cs, c)
			}
			// Ownership: an entry with the wrong owner bit is not ready.
			c := diffCase{name: fmt.Sprintf("cq-v%d-start%#x-owner", version, start)}
			header(&c)
			slot, owner := slotOwner(0)
			c.add("cqe %#x %s", slot, cqeSpec{opcode: cqeReq, qpn: qpn, srqnUIDX: key(0), wqeOpcode: opcodeSend, owner: owner ^ 1}.hex())
			c.add("poll 4")
			c.add("cqe %#x %s", slot, cqeSpec{opcode: cqeReq, qpn: qpn, srqnUIDX: key(0), wqeOpcode: opcodeSend, owner: owner}.hex())
			c.add("poll 4")
			c.add("poll 4")
			// Arming: both kinds, after events (the sequence number).
			for i := range 6 {
				c.add("arm %d", i%2)
				if i%2 == 1 {
					c.add("event")
				}
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// randomCases draws n cases from seed.
func randomCases(seed uint64, n int) []diffCase {
	r := rand.New(rand.NewPCG(seed, 0x6d6c7835))
	cs := make([]diffCase, 0, n)
	for i := range n {
		name := fmt.Sprintf("random-%d-%d", seed, i)
		switch k := r.IntN(10); {
		case k < 6:
			cs = append(cs, randomSend(r, name))
		case k < 7:
			cs = append(cs, randomRecv(r, name))
		case k < 8:
			if r.IntN(4) == 0 {
				cs = append(cs, randomAH(r, name))
			} else {
				cs = append(cs, randomSRQ(r, name))
			}
		default:
			cs = append(cs, randomCQ(r, name))
		}
	}
	return cs
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func randomSGEs(r *rand.Rand, n int) []SGE {
	out := make([]SGE, n)
	for i := range out {
		l := pick(r, 0, 1, 8, 63, 64, 65, 4096, r.Uint32())
		out[i] = SGE{Addr: r.Uint64(), Length: uint32(l), LKey: r.Uint32()}
	}
	return out
}

func randomSend(r *rand.Rand, name string) diffCase {
	t := pick(r, QPTypeRC, QPTypeUC, QPTypeUD)
	sh := sqShapeFor(t, 1+r.IntN(16), r.IntN(8), pick(r, 0, 16, 64, 100, 256))
	sh.qpn = r.Uint32() & 0xffffff
	sh.sigAll = r.IntN(4) == 0
	sh.atomics = r.IntN(8) != 0
	sh.bfSize = pick(r, 256, 512)
	sh.dedicated = r.IntN(4) != 0
	if !sh.dedicated {
		sh.bfSize = 0 // bfreg 0: no halves (mlx5.c mlx5_init_context)
	}
	sh.preferBF = r.IntN(4) == 0
	sh.shutUp = r.IntN(8) == 0
	sh.start = pick(r, 0, r.Uint32(), uint32(r.IntN(sh.wqeCnt)), 0xffff-uint32(r.IntN(4)))
	c := diffCase{name: name}
	c.add("%s", sh.line())
	outstanding := 0
	for p := r.IntN(6) + 1; p > 0; p-- {
		if r.IntN(3) == 0 {
			c.add("complete")
			outstanding = 0
		}
		room := sh.maxPost - outstanding
		if room == 0 {
			c.add("complete")
			outstanding, room = 0, sh.maxPost
		}
		n := 1 + r.IntN(min(room, 4))
		ws := make([]genWR, n)
		for i := range ws {
			ws[i] = randomWR(r, t, sh)
		}
		last := p == 1
		if last && r.IntN(4) == 0 {
			// One refusal, as the last post.
			at := r.IntN(n)
			bad := &ws[at]
			switch r.IntN(5) {
			case 0:
				bad.op = SendOpcode(12 + r.IntN(100))
			case 1:
				bad.sges = randomSGEs(r, sh.maxGS+1+r.IntN(3))
				bad.flags &^= SendInline
			case 2:
				if sh.maxInl > 0 && t != QPTypeUD || t == QPTypeUD && sh.maxInl > 0 {
					bad.op = OpSend
					bad.flags |= SendInline
					bad.sges = inlineSGEs(uint32(sh.maxInl+1+r.IntN(20)), 0)[:1+r.IntN(2)]
					if len(bad.sges) > sh.maxGS {
						bad.sges = bad.sges[:0]
					}
				}
			case 3:
				if t == QPTypeRC && !sh.atomics {
					bad.op = OpAtomicCmpAndSwp
					bad.flags &^= SendInline
					bad.sges = randomSGEs(r, min(1, sh.maxGS))
				}
			case 4:
				for range sh.maxPost - outstanding - n + 1 {
					ws = append(ws, randomWR(r, t, sh))
				}
			}
		}
		c.post(ws...)
		outstanding += len(ws)
		if outstanding > sh.maxPost {
			break
		}
	}
	return c
}

func randomWR(r *rand.Rand, t QPType, sh sqShape) genWR {
	ops := opsFor(t)
	if !sh.atomics && t == QPTypeRC {
		ops = append(ops[:5:5], OpSendWithInv)
	}
	op := pick(r, ops...)
	w := genWR{id: r.Uint64(), op: op, imm: r.Uint32(), raddr: r.Uint64(), rkey: r.Uint32(), cmp: r.Uint64(), swap: r.Uint64()}
	w.flags = SendFlags(r.IntN(8))
	if t == QPTypeUD {
		w.av, w.rqpn, w.rqkey = testAV(byte(r.Uint32())), r.Uint32()&0xffffff, r.Uint32()
	}
	if inlineOK(op) && sh.maxInl > 0 && r.IntN(2) == 0 {
		w.flags |= SendInline
		total := r.IntN(sh.maxInl + 1)
		n := min(sh.maxGS, 1+r.IntN(3))
		var ls []uint32
		for i := range n {
			l := total / n
			if i == n-1 {
				l = total - l*(n-1)
			}
			ls = append(ls, uint32(l))
		}
		w.sges = inlineSGEs(ls...)
		return w
	}
	w.sges = randomSGEs(r, r.IntN(sh.maxGS+1))
	return w
}

func randomRecv(r *rand.Rand, name string) diffCase {
	lim := DeviceLimits{MaxRQDescSize: 512, MaxRecvWR: 1 << 15}
	cfg, _, err := RQSize(&lim, 1+r.IntN(32), r.IntN(8))
	if err != nil {
		panic(err)
	}
	c := diffCase{name: name}
	c.add("rq %d %d %d %d %#x", cfg.WQECount, cfg.WQEShift, cfg.MaxPost, cfg.MaxSGE, r.Uint32())
	outstanding := 0
	for p := r.IntN(6) + 1; p > 0; p-- {
		if r.IntN(3) == 0 || outstanding == cfg.MaxPost {
			c.add("complete")
			outstanding = 0
		}
		n := 1 + r.IntN(min(cfg.MaxPost-outstanding, 5))
		ws := make([]RecvWR, n)
		for i := range ws {
			ws[i] = RecvWR{ID: r.Uint64(), SGEs: randomSGEs(r, r.IntN(cfg.MaxSGE+1))}
		}
		if p == 1 && r.IntN(4) == 0 {
			if r.IntN(2) == 0 {
				ws[r.IntN(n)].SGEs = randomSGEs(r, cfg.MaxSGE+1)
			} else {
				for range cfg.MaxPost - outstanding - n + 1 {
					ws = append(ws, RecvWR{ID: r.Uint64()})
				}
			}
		}
		c.postRecv(ws...)
		outstanding += n
	}
	return c
}

func randomSRQ(r *rand.Rand, name string) diffCase {
	maxWR, maxGS := 1+r.IntN(16), r.IntN(6)
	devWR := pick(r, 1<<15, maxWR+1+r.IntN(maxWR+1))
	lim := DeviceLimits{MaxSRQRecvWR: devWR, MaxRecvWR: 1 << 15}
	cfg, _, err := SRQSize(&lim, maxWR, maxGS)
	if err != nil {
		panic(err)
	}
	c := diffCase{name: name}
	c.add("srq %d %d %d %d", maxWR, maxGS, devWR, 1<<15)
	// Model the free list to free only entries in use, as completions do.
	next := make([]int, cfg.WQECount)
	for i := range cfg.Tail {
		next[i] = i + 1
	}
	head, tail := 0, cfg.Tail
	var inUse []int
	for p := r.IntN(8) + 1; p > 0; p-- {
		if len(inUse) > 0 && r.IntN(2) == 0 {
			k := r.IntN(len(inUse))
			ind := inUse[k]
			inUse = append(inUse[:k], inUse[k+1:]...)
			c.add("free %#x", ind)
			next[tail] = ind
			tail = ind
			continue
		}
		free := 0
		for h := head; h != tail; h = next[h] {
			free++
		}
		if free == 0 {
			continue
		}
		n := 1 + r.IntN(min(free, 4))
		ws := make([]RecvWR, n)
		for i := range ws {
			ws[i] = RecvWR{ID: r.Uint64(), SGEs: randomSGEs(r, r.IntN(cfg.MaxSGE+1))}
		}
		if p == 1 && r.IntN(3) == 0 {
			if r.IntN(2) == 0 {
				ws[r.IntN(n)].SGEs = randomSGEs(r, cfg.MaxSGE+1)
			} else {
				for range free - n + 1 {
					ws = append(ws, RecvWR{ID: r.Uint64()})
				}
			}
			c.postRecv(ws...)
			break
		}
		c.postRecv(ws...)
		for range n {
			inUse = append(inUse, head)
			head = next[head]
		}
	}
	return c
}

func randomCQ(r *rand.Rand, name string) diffCase {
	version := r.IntN(2)
	entries := pick(r, 2, 4, 8, 16)
	start := pick(r, 0, r.Uint32(), 0xffffff-uint32(r.IntN(4)))
	const srqn = 0x31
	c := diffCase{name: name}
	c.add("cq %d %#x %d %#x", entries, r.Uint32()&0xffffff, version, start)
	c.add("srq %#x %d %d", srqn, 1+r.IntN(8), r.IntN(4))
	qpns := []uint32{r.Uint32()&0xffffff | 1, r.Uint32()&0xffffff | 2}
	uidxs := []uint32{r.Uint32() & 0xffffff, r.Uint32()&0xffffff ^ 0x800000}
	sqCnt := pick(r, 1, 4, 64)
	c.add("qp %#x %#x %d %d %#x %d", qpns[0], uidxs[0], sqCnt, pick(r, 1, 8, 32), r.Uint32(), -1)
	c.add("qp %#x %#x %d %d %#x %d", qpns[1], uidxs[1], pick(r, 2, 16), 0, 0, 0)
	const srqMax = 2 // an SRQ of max_wr >= 1 has at least 4 entries
	n := start
	{
		k := 1 + r.IntN(entries)
		for i := range k {
			q := r.IntN(2)
			s := cqeSpec{qpn: qpns[q], noise: r.Uint64(), wqeCtr: uint16(r.Uint32()), byteCnt: r.Uint32(), immInval: r.Uint32(),
				flagsRQPN: r.Uint32(), slid: uint16(r.Uint32()), mlPath: byte(r.Uint32()), vendor: byte(r.Uint32())}
			if version == 1 {
				s.srqnUIDX = uidxs[q]
			}
			kind := r.IntN(5)
			switch {
			case kind <= 1:
				s.opcode = cqeReq
				s.wqeOpcode = pick[uint8](r, opcodeRDMAWrite, opcodeRDMAWriteImm, opcodeSend, opcodeSendImm, 0x01, opcodeRDMARead, opcodeAtomicCS, opcodeAtomicFA)
			case kind == 2:
				s.opcode = cqeReqErr
				s.syndrome = pick(r, syndromes...)
			default:
				s.opcode = pick[uint8](r, cqeRespWrImm, cqeRespSend, cqeRespSendImm, cqeRespSendInv, cqeRespErr)
				s.syndrome = pick(r, syndromes...)
				if q == 1 {
					s.wqeCtr = uint16(r.IntN(srqMax))
					if version == 0 {
						s.srqnUIDX = srqn
					}
					if s.syndrome == 0x22 {
						s.vendor &^= 0x80 // not the on-demand-paging fault (0x93)
					}
				} else if version == 0 {
					s.srqnUIDX = 0
				}
			}
			if r.IntN(16) == 0 {
				s.opcode = cqeResize
			}
			ci := n + uint32(i)
			s.owner = uint8(ci / uint32(entries) & 1)
			if r.IntN(20) == 0 {
				s.owner ^= 1
			}
			c.add("cqe %#x %s", ci&uint32(entries-1), s.hex())
		}
		c.add("poll %d", 1+r.IntN(entries+1))
		c.add("poll %d", entries)
		if r.IntN(3) == 0 {
			c.add("arm %d", r.IntN(2))
			if r.IntN(2) == 0 {
				c.add("event")
			}
		}
	}
	return c
}
