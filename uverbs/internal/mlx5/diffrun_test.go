package mlx5

// The Go side of the differential harness (test/mlx5diff, docs/mlx5.md §7):
// runCase executes one case text with this package and prints what it wrote
// in the format test/mlx5diff/harness.c prints for rdma-core's libmlx5.

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

const arenaSize = 65536

// arena holds the bytes inline SGEs point at (harness.c: arena); a package
// variable, so it never moves.
var arena [arenaSize]byte

func init() {
	for i := range arena {
		arena[i] = byte(i*131 + (i>>8)*7 + 1)
	}
}

// fill writes the pattern harness.c fill writes.
func fill(p []byte, seed int) {
	for i := range p {
		p[i] = byte(i*37 + seed*11 + (i>>8)*5 + 1)
	}
}

// aligned returns n zero bytes aligned to 4096.
func aligned(n int) []byte {
	b := make([]byte, n+4096)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 4095)
	return b[off : off+n : off+n]
}

type caseReader struct {
	lines []string
	pos   int
}

func (r *caseReader) next() (string, bool) {
	if r.pos >= len(r.lines) {
		return "", false
	}
	r.pos++
	return r.lines[r.pos-1], true
}

func fields(line, tag string, n int) ([]uint64, error) {
	f := strings.Fields(line)
	if len(f) != n+1 || f[0] != tag {
		return nil, fmt.Errorf("bad %s line %q", tag, line)
	}
	out := make([]uint64, n)
	for i := range n {
		v, err := strconv.ParseUint(f[i+1], 0, 64)
		if err != nil {
			var sv int64
			sv, err = strconv.ParseInt(f[i+1], 0, 64)
			v = uint64(sv)
		}
		if err != nil {
			return nil, fmt.Errorf("bad %s line %q: %v", tag, line, err)
		}
		out[i] = v
	}
	return out, nil
}

// fields in harness.c are read with %x for hex and %u/%d for decimal; the
// case writer prefixes hex values with 0x so one parser reads both.

type out struct{ strings.Builder }

func (o *out) hex(tag string, b []byte) { fmt.Fprintf(o, "%s %x\n", tag, b) }

func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var e interface{ Errno() syscall.Errno }
	if errors.As(err, &e) {
		return int(e.Errno())
	}
	return -1
}

// runCase runs the body of one case (the lines between "case NAME" and
// "end") and returns the output lines harness.c prints for it.
func runCase(body []string) (string, error) {
	r := &caseReader{lines: body}
	first, ok := r.next()
	if !ok {
		return "", errors.New("empty case")
	}
	var o out
	var err error
	switch strings.Fields(first)[0] {
	case "sq":
		err = runSQ(first, r, &o)
	case "rq":
		err = runRQ(first, r, &o)
	case "srq":
		err = runSRQ(first, r, &o)
	case "qpsize":
		err = runQPSize(first, &o)
	case "srqsize":
		err = runSRQSize(first, &o)
	case "cq":
		err = runCQ(first, r, &o)
	case "ah":
		err = runAH(first, &o)
	case "cqinit":
		err = runCQInit(first, &o)
	case "qpcmd":
		err = runQPCmd(first, &o)
	case "cqcmd":
		err = runCQCmd(first, &o)
	case "srqcmd":
		err = runSRQCmd(first, &o)
	default:
		err = fmt.Errorf("unknown case kind %q", first)
	}
	return o.String(), err
}

func readSGEs(r *caseReader, n int, inline bool) ([]SGE, error) {
	sges := make([]SGE, n)
	for j := range sges {
		l, _ := r.next()
		v, err := fields(l, "sge", 3)
		if err != nil {
			return nil, err
		}
		addr := v[0]
		if inline {
			addr += uint64(uintptr(unsafe.Pointer(&arena[0])))
		}
		sges[j] = SGE{Addr: addr, Length: uint32(v[1]), LKey: uint32(v[2])}
	}
	return sges, nil
}

func readSendWRs(r *caseReader, n int) ([]SendWR, error) {
	wrs := make([]SendWR, n)
	for i := range wrs {
		l, _ := r.next()
		f := strings.Fields(l)
		if len(f) != 13 || f[0] != "wr" {
			return nil, fmt.Errorf("bad wr line %q", l)
		}
		num := func(k int) uint64 {
			v, _ := strconv.ParseUint(f[k], 0, 64)
			return v
		}
		wr := SendWR{
			ID: num(1), Opcode: SendOpcode(num(2)), Flags: SendFlags(num(3)),
			RemoteAddr: num(5), RKey: uint32(num(6)), CompareAdd: num(7), Swap: num(8),
			RemoteQPN: uint32(num(9)), RemoteQKey: uint32(num(10)),
		}
		// The case's imm is libibverbs' union ex (the harness sets
		// invalidate_rkey for SEND_WITH_INV, imm_data otherwise); here
		// the field not meant gets the complement, so that an encoder
		// reading the wrong one differs.
		if imm := uint32(num(4)); wr.Opcode == OpSendWithInv {
			wr.InvalidateRKey, wr.ImmData = imm, ^imm
		} else {
			wr.ImmData, wr.InvalidateRKey = imm, ^imm
		}
		if f[11] != "-" {
			var av AddressVector
			if b, err := hex.DecodeString(f[11]); err != nil || len(b) != len(av) {
				return nil, fmt.Errorf("bad av in %q", l)
			}
			b, _ := hex.DecodeString(f[11])
			copy(av[:], b)
			wr.AV = &av
		}
		sges, err := readSGEs(r, int(num(12)), wr.Flags&SendInline != 0)
		if err != nil {
			return nil, err
		}
		wr.SGEs = sges
		wrs[i] = wr
	}
	return wrs, nil
}

func runSQ(first string, r *caseReader, o *out) error {
	v, err := fields(first, "sq", 13)
	if err != nil {
		return err
	}
	wqeCnt, bfSize := int(v[2]), int(v[8])
	ring := aligned(max(wqeCnt*SendWQEBB, 4096))[:wqeCnt*SendWQEBB]
	dbrec := aligned(8)
	uar := aligned(4096)
	fill(ring, 1)
	fill(dbrec, 2)
	fill(uar, 3)
	bf := &BlueFlame{Reg: uar[BFRegOffset:], BufSize: bfSize, Dedicated: v[9] != 0, PreferBF: v[10] != 0, Disabled: v[11] != 0}
	sq, err := NewSQ(ring, dbrec, bf, SQConfig{
		QPType: QPType(v[0]), QPN: uint32(v[1]), WQECount: wqeCnt, MaxPost: int(v[3]),
		MaxSGE: int(v[4]), MaxInline: int(v[5]), SignalAll: v[6] != 0, Atomics: v[7] != 0,
	})
	if err != nil {
		return err
	}
	start := uint32(v[12])
	sq.curPost = start
	sq.head.Store(start)
	sq.tail.Store(start)
	for {
		l, ok := r.next()
		if !ok || l == "end" {
			return nil
		}
		if l == "complete" {
			sq.Retire()
			continue
		}
		pv, err := fields(l, "post", 1)
		if err != nil {
			return err
		}
		wrs, err := readSendWRs(r, int(pv[0]))
		if err != nil {
			return err
		}
		before := snapshot(ring, dbrec, uar)
		bad, perr := sq.Post(wrs)
		if perr != nil {
			fmt.Fprintf(o, "post %d %d\n", errnoOf(perr), bad)
			if snapshot(ring, dbrec, uar) != before {
				return fmt.Errorf("a refused post (%v) wrote to the ring, the doorbell record or the UAR", perr)
			}
		} else {
			fmt.Fprintf(o, "post 0 -1\n")
		}
		o.hex("db", dbrec)
		o.hex("bf", uar[BFRegOffset:BFRegOffset+max(2*bfSize, 16)]) // bfreg 0 has no halves: its doorbell is the first 8 bytes
		o.hex("ring", ring)
		fmt.Fprintf(o, "idx %x %x %x\n", sq.curPost, sq.head.Load(), bf.offset)
		o.WriteString("wrid")
		for i := range sq.wrid {
			fmt.Fprintf(o, " %x:%x", sq.wrid[i], sq.wqeHead[i])
		}
		o.WriteString("\n")
	}
}

func snapshot(bs ...[]byte) string {
	var s strings.Builder
	for _, b := range bs {
		s.Write(b)
	}
	return s.String()
}

func readRecvWRs(r *caseReader, n int) ([]RecvWR, error) {
	wrs := make([]RecvWR, n)
	for i := range wrs {
		l, _ := r.next()
		v, err := fields(l, "rwr", 2)
		if err != nil {
			return nil, err
		}
		sges, err := readSGEs(r, int(v[1]), false)
		if err != nil {
			return nil, err
		}
		wrs[i] = RecvWR{ID: v[0], SGEs: sges}
	}
	return wrs, nil
}

func runRQ(first string, r *caseReader, o *out) error {
	v, err := fields(first, "rq", 5)
	if err != nil {
		return err
	}
	cnt, shift := int(v[0]), int(v[1])
	ring := aligned(cnt << shift)
	dbrec := aligned(8)
	fill(ring, 4)
	fill(dbrec, 5)
	rq, err := NewRQ(ring, dbrec, RQConfig{WQECount: cnt, WQEShift: shift, MaxPost: int(v[2]), MaxSGE: int(v[3])})
	if err != nil {
		return err
	}
	rq.head.Store(uint32(v[4]))
	rq.tail.Store(uint32(v[4]))
	for {
		l, ok := r.next()
		if !ok || l == "end" {
			return nil
		}
		if l == "complete" {
			rq.Retire()
			continue
		}
		pv, err := fields(l, "post", 1)
		if err != nil {
			return err
		}
		wrs, err := readRecvWRs(r, int(pv[0]))
		if err != nil {
			return err
		}
		before := snapshot(ring, dbrec)
		bad, perr := rq.Post(wrs)
		if perr != nil {
			fmt.Fprintf(o, "post %d %d\n", errnoOf(perr), bad)
			if snapshot(ring, dbrec) != before {
				return fmt.Errorf("a refused post (%v) wrote to the ring or the doorbell record", perr)
			}
		} else {
			fmt.Fprintf(o, "post 0 -1\n")
		}
		o.hex("db", dbrec)
		o.hex("ring", ring)
		fmt.Fprintf(o, "idx %x\n", rq.head.Load())
		o.WriteString("wrid")
		for _, id := range rq.wrid {
			fmt.Fprintf(o, " %x", id)
		}
		o.WriteString("\n")
	}
}

func printSRQ(o *out, q *SRQ, dbrec []byte) {
	o.hex("db", dbrec[:4])
	o.hex("ring", q.ring)
	fmt.Fprintf(o, "idx %x %x %x\n", q.head, q.tail, q.counter)
}

func newTestSRQ(maxWR, maxSGE int, lim *DeviceLimits, dbrec []byte) (*SRQ, error) {
	cfg, size, err := SRQSize(lim, maxWR, maxSGE)
	if err != nil {
		return nil, err
	}
	ring := aligned(size)
	fill(ring, 99) // NewSRQ must clear it, as libmlx5 does
	return NewSRQ(ring, dbrec, cfg)
}

func runSRQ(first string, r *caseReader, o *out) error {
	v, err := fields(first, "srq", 4)
	if err != nil {
		return err
	}
	dbrec := aligned(8)
	fill(dbrec, 6)
	q, err := newTestSRQ(int(v[0]), int(v[1]), &DeviceLimits{MaxSRQRecvWR: int(v[2]), MaxRecvWR: int(v[3])}, dbrec)
	if err != nil {
		o.WriteString("srq -1\n")
		for {
			if l, ok := r.next(); !ok || l == "end" {
				return nil
			}
		}
	}
	fmt.Fprintf(o, "srq %d %d %d %d %d\n", q.cfg.WQECount, q.cfg.MaxSGE, q.cfg.WQEShift, q.head, q.tail)
	for {
		l, ok := r.next()
		if !ok || l == "end" {
			return nil
		}
		if strings.HasPrefix(l, "free ") {
			fv, err := fields(l, "free", 1)
			if err != nil {
				return err
			}
			q.free(int(fv[0]))
			printSRQ(o, q, dbrec)
			continue
		}
		pv, err := fields(l, "post", 1)
		if err != nil {
			return err
		}
		wrs, err := readRecvWRs(r, int(pv[0]))
		if err != nil {
			return err
		}
		before := snapshot(q.ring, dbrec)
		bad, perr := q.Post(wrs)
		if perr != nil {
			fmt.Fprintf(o, "post %d %d\n", errnoOf(perr), bad)
			if snapshot(q.ring, dbrec) != before {
				return fmt.Errorf("a refused post (%v) wrote to the ring or the doorbell record", perr)
			}
		} else {
			fmt.Fprintf(o, "post 0 -1\n")
		}
		printSRQ(o, q, dbrec)
		o.WriteString("wrid")
		for _, id := range q.wrid {
			fmt.Fprintf(o, " %x", id)
		}
		o.WriteString("\n")
	}
}

func runQPSize(first string, o *out) error {
	v, err := fields(first, "qpsize", 10)
	if err != nil {
		return err
	}
	lim := &DeviceLimits{MaxSQDescSize: int(v[6]), MaxRQDescSize: int(v[7]), MaxSendWQEBB: int(v[8]), MaxRecvWR: int(v[9])}
	sq, sqBytes, err1 := SQSize(lim, QPType(v[0]), int(v[1]), int(v[2]), int(v[3]))
	rq, rqBytes, err2 := RQSize(lim, int(v[4]), int(v[5]))
	if err1 != nil || err2 != nil {
		o.WriteString("qpsize -22\n")
		return nil
	}
	inl := 0
	if v[1] != 0 {
		inl = sq.MaxInline
	}
	fmt.Fprintf(o, "qpsize %d %d %d %d %d %d %d %d %d %d\n", sqBytes+rqBytes, sq.WQECount, sq.MaxPost, sq.MaxSGE, inl,
		rq.WQECount, rq.WQEShift, rq.MaxPost, rq.MaxSGE, rqBytes)
	return nil
}

func runSRQSize(first string, o *out) error {
	v, err := fields(first, "srqsize", 4)
	if err != nil {
		return err
	}
	cfg, _, err := SRQSize(&DeviceLimits{MaxSRQRecvWR: int(v[2]), MaxRecvWR: int(v[3])}, int(v[0]), int(v[1]))
	if err != nil {
		o.WriteString("srqsize -1\n")
		return nil
	}
	fmt.Fprintf(o, "srqsize %d %d %d %d %d\n", cfg.WQECount, cfg.MaxSGE, cfg.WQEShift, 0, cfg.Tail)
	return nil
}

func runCQ(first string, r *caseReader, o *out) error {
	v, err := fields(first, "cq", 4)
	if err != nil {
		return err
	}
	entries, version := int(v[0]), int(v[2])
	ring := aligned(entries * CQESize)
	dbrec := aligned(8)
	uar := aligned(4096)
	fill(ring, 7)
	for i := range entries {
		ring[i*CQESize+cqeOpOwn] = cqeInvalid << 4
	}
	fill(dbrec, 8)
	fill(uar, 9)
	cq, err := NewCQ(ring, dbrec, uar, CQConfig{CQN: uint32(v[1]), Entries: entries, CQEVersion: version})
	if err != nil {
		return err
	}
	cq.consIndex = uint32(v[3])
	var qps []*QP
	var srqs []*SRQ
	wcs := make([]WC, 64)
	for {
		l, ok := r.next()
		if !ok || l == "end" {
			return nil
		}
		f := strings.Fields(l)
		switch f[0] {
		case "qp":
			if len(f) != 7 {
				return fmt.Errorf("bad qp line %q", l)
			}
			num := func(k int) uint64 { x, _ := strconv.ParseUint(f[k], 0, 64); return x }
			k := uint64(len(qps) + 1)
			sqCnt, rqCnt := int(num(3)), int(num(4))
			sq := &SQ{cfg: SQConfig{WQECount: sqCnt}, wrid: make([]uint64, sqCnt), wqeHead: make([]uint32, sqCnt)}
			for i := range sqCnt {
				sq.wrid[i] = 0x51000000*k + uint64(i)
				sq.wqeHead[i] = uint32(i*3 + 7)
			}
			qp := &QP{SQ: sq}
			if rqCnt > 0 {
				rq := &RQ{cfg: RQConfig{WQECount: rqCnt}, wrid: make([]uint64, rqCnt)}
				rq.tail.Store(uint32(num(5)))
				for i := range rqCnt {
					rq.wrid[i] = 0x52000000*k + uint64(i)
				}
				qp.RQ = rq
			}
			if s, _ := strconv.Atoi(f[6]); s >= 0 {
				qp.SRQ = srqs[s]
			}
			qps = append(qps, qp)
			key := uint32(num(1))
			if version == 1 {
				key = uint32(num(2))
			}
			cq.RegisterQP(key, qp)
		case "srq":
			sv, err := fields(l, "srq", 3)
			if err != nil {
				return err
			}
			db := aligned(8)
			q, err := newTestSRQ(int(sv[1]), int(sv[2]), &DeviceLimits{MaxSRQRecvWR: 1 << 20, MaxRecvWR: 1 << 20}, db)
			if err != nil {
				return err
			}
			for i := range q.wrid {
				q.wrid[i] = 0x53000000*uint64(len(srqs)+1) + uint64(i)
			}
			srqs = append(srqs, q)
			if version == 0 {
				cq.RegisterSRQ(uint32(sv[0]), q)
			}
		case "cqe":
			if len(f) != 3 {
				return fmt.Errorf("bad cqe line %q", l)
			}
			slot, _ := strconv.ParseUint(f[1], 0, 32)
			b, err := hex.DecodeString(f[2])
			if err != nil || len(b) != CQESize || int(slot) >= entries {
				return fmt.Errorf("bad cqe line %q", l)
			}
			copy(ring[int(slot)*CQESize:], b)
		case "poll":
			pv, err := fields(l, "poll", 1)
			if err != nil {
				return err
			}
			for i := range wcs {
				wcs[i] = WC{ID: ^uint64(0), Status: ^uint32(0), Opcode: ^uint32(0), VendorErr: ^uint32(0), ByteLen: ^uint32(0),
					ImmData: ^uint32(0), InvalidatedRKey: ^uint32(0), QPNum: ^uint32(0), SrcQP: ^uint32(0), Flags: ^uint32(0),
					PKeyIndex: ^uint16(0), SLID: ^uint16(0), SL: 0xff, DLIDPathBits: 0xff}
			}
			n, perr := cq.Poll(wcs[:pv[0]])
			if perr != nil {
				o.WriteString("poll -2\n")
			} else {
				fmt.Fprintf(o, "poll %d\n", n)
				for _, w := range wcs[:n] {
					raw := bswap32(w.ImmData)
					if w.Flags != ^uint32(0) && w.Flags&WCFlagWithInv != 0 {
						raw = w.InvalidatedRKey
					}
					fmt.Fprintf(o, "wc %x %x %x %x %x %x %x %x %x %x %x %x %x\n", w.ID, w.Status, w.Opcode, w.VendorErr,
						w.ByteLen, raw, w.QPNum, w.SrcQP, ibvWCFlags(w.Flags), w.PKeyIndex, w.SLID, w.SL, w.DLIDPathBits)
				}
			}
			fmt.Fprintf(o, "ci %x\n", cq.consIndex)
			o.hex("db", dbrec)
			for _, qp := range qps {
				var rqTail uint32
				if qp.RQ != nil {
					rqTail = qp.RQ.tail.Load()
				}
				fmt.Fprintf(o, "tails %x %x\n", qp.SQ.tail.Load(), rqTail)
			}
			for _, q := range srqs {
				printSRQ(o, q, dbrec) // harness.c prints the CQ's record here
			}
		case "arm":
			av, err := fields(l, "arm", 1)
			if err != nil {
				return err
			}
			cq.Arm(av[0] != 0)
			o.hex("db", dbrec)
			o.hex("uar", uar[cqDoorbellOff:cqDoorbellOff+8])
		case "event":
			cq.Event()
		default:
			return fmt.Errorf("unknown cq op %q", l)
		}
	}
}

func bswap32(x uint32) uint32 { return x>>24 | x>>8&0xff00 | x<<8&0xff0000 | x<<24 }

func runAH(first string, o *out) error {
	f := strings.Fields(first)
	if len(f) != 17 {
		return fmt.Errorf("bad ah line %q", first)
	}
	v, err := fields(strings.Join(f[:15], " "), "ah", 14)
	if err != nil {
		return err
	}
	a := AHAttr{DLID: uint16(v[5]), SL: uint8(v[6]), SrcPathBits: uint8(v[7]), StaticRate: uint8(v[8]), IsGlobal: v[9] != 0,
		FlowLabel: uint32(v[10]), SGIDIndex: uint8(v[11]), HopLimit: uint8(v[12]), TrafficClass: uint8(v[13])}
	gid, err1 := hex.DecodeString(f[15])
	mac, err2 := hex.DecodeString(f[16])
	if err1 != nil || err2 != nil || len(gid) != 16 || len(mac) != 6 {
		return fmt.Errorf("bad ah line %q", first)
	}
	copy(a.DGID[:], gid)
	var dmac [6]byte
	copy(dmac[:], mac)
	// v[3] (the kernel returns the MAC, or libmlx5 resolves it) does not
	// change the AV: both give dmac.
	av, err := BuildAV(&a, PortLink{Ethernet: v[0] != 0, GRHRequired: v[1] != 0, RoCEv2: v[2] != 0}, dmac, uint32(v[4]))
	if err != nil {
		fmt.Fprintf(o, "ah -%d\n", errnoOf(err))
		return nil
	}
	o.WriteString("ah 0\n")
	o.hex("av", av[:])
	return nil
}

func runCQInit(first string, o *out) error {
	v, err := fields(first, "cqinit", 1)
	if err != nil {
		return err
	}
	n, err := CQEntries(int(v[0]))
	if err != nil {
		return err
	}
	ring := aligned(n * CQESize)
	fill(ring, 10)
	InitCQRing(ring)
	fmt.Fprintf(o, "cqinit %d\n", n)
	o.hex("ring", ring)
	return nil
}

// The create commands (docs/mlx5.md §10): what uverbs sends, built by this
// package's functions the way uverbs calls them, with the ring at address
// 1 and the doorbell record at 2 standing for the buffers.

func printDrv(o *out, b []byte, buf, db uint64) {
	where := func(got, want uint64, name string) string {
		if got == want {
			return name
		}
		return "other"
	}
	fmt.Fprintf(o, "drvlen %d buf %s db %s\n", len(b), where(be64le(b[0:]), buf, "ring"), where(be64le(b[8:]), db, "dbrec"))
	d := append([]byte(nil), b...)
	clear(d[:16])
	o.hex("drv", d)
}

func be64le(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func runQPCmd(first string, o *out) error {
	v, err := fields(first, "qpcmd", 15)
	if err != nil {
		return err
	}
	lim := &DeviceLimits{MaxSQDescSize: int(v[11]), MaxRQDescSize: int(v[12]), MaxSendWQEBB: int(v[13]), MaxRecvWR: int(v[14])}
	t := QPType(v[0])
	sq, _, err1 := SQSize(lim, t, int(v[1]), int(v[2]), int(v[3]))
	rq, _, err2 := RQSize(lim, int(v[4]), int(v[5]))
	if err1 != nil || err2 != nil {
		o.WriteString("qpcmd -1\n")
		return nil
	}
	uidx := uint32(v[8])
	if v[7] == 0 {
		uidx = DefaultUIDX
	}
	fmt.Fprintf(o, "core %d %d %d %d %d %d %d %d\n", v[1], v[4], v[2], v[5], CoreMaxInline(sq), v[6], v[0], 0)
	cmd := CreateQPCmd(1, 2, sq, rq, uidx)
	printDrv(o, structBytes(&cmd), 1, 2)
	o.hex("dbrec", make([]byte, 8))
	sendWR, recvWR, recvSGE, inline := QPCaps(sq, rq)
	fmt.Fprintf(o, "caps %d %d %d %d bf %d\n", sendWR, recvWR, recvSGE, inline, v[10])
	return nil
}

func runCQCmd(first string, o *out) error {
	v, err := fields(first, "cqcmd", 2)
	if err != nil {
		return err
	}
	n, err := CQEntries(int(v[0]))
	if err != nil {
		o.WriteString("cqcmd -1\n")
		return nil
	}
	fmt.Fprintf(o, "core %d\n", n-1)
	cmd := CreateCQCmd(1, 2)
	printDrv(o, structBytes(&cmd), 1, 2)
	o.hex("dbrec", make([]byte, 8))
	fmt.Fprintf(o, "cqn %x\n", v[1])
	return nil
}

func runSRQCmd(first string, o *out) error {
	v, err := fields(first, "srqcmd", 6)
	if err != nil {
		return err
	}
	lim := &DeviceLimits{MaxSRQRecvWR: int(v[2]), MaxRecvWR: int(v[3]), MaxRQDescSize: int(v[4])}
	if err := CheckSRQAttr(lim, int(v[0]), int(v[1])); err != nil {
		o.WriteString("srqcmd -1\n")
		return nil
	}
	cfg, _, err := SRQSize(lim, int(v[0]), int(v[1]))
	if err != nil {
		o.WriteString("srqcmd -1\n")
		return nil
	}
	fmt.Fprintf(o, "core %d %d %d\n", SRQCoreMaxWR(cfg), cfg.MaxSGE, 0)
	cmd := CreateSRQCmd(1, 2)
	printDrv(o, structBytes(&cmd), 1, 2)
	o.hex("dbrec", make([]byte, 4))
	fmt.Fprintf(o, "reported %d %d\n", cfg.Tail, cfg.MaxSGE)
	return nil
}

// structBytes is the memory of a command struct, as the kernel reads it.
func structBytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// ibvWCFlags is the libibverbs value of completion flags f, which the
// decoder writes with the kernel's values: IB_WC_WITH_INVALIDATE (4) is
// IBV_WC_WITH_INV (8). ^0, a field the poll left as it was, stays.
func ibvWCFlags(f uint32) uint32 {
	if f == ^uint32(0) || f&WCFlagWithInv == 0 {
		return f
	}
	return f&^WCFlagWithInv | 8
}
