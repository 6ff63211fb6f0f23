package uverbs

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

// The basic opcodes between two QPs of ONE rxe device on a veth end: the
// device the RDMA CM tests use, with a real Ethernet MTU (1500, so an active
// MTU of 1024, docs/abi.md §3.14) instead of lo's 64K. Messages span
// several packets. The QPs address each other through the IPv4-mapped GID of
// the device's address. (Traffic between the two veth devices goes through
// the CM and is tested there.)
func TestVethDeviceOpcodes(t *testing.T) {
	end := testutil.VethPair(t)[0]
	c, err := Open(end.Device)
	if err != nil {
		t.Fatalf("Open(%q): %v", end.Device, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	ip := netip.MustParseAddr(end.Addr)
	idx, err := c.GIDIndexForIP(1, ip)
	if err != nil {
		t.Fatal(err)
	}
	ent, err := c.QueryGID(1, idx)
	if err != nil {
		t.Fatal(err)
	}
	if ent.GID != GIDFromIP(ip) || ent.Type != GIDTypeRoCEv2 || ent.Netdev != end.Netdev {
		t.Fatalf("GID %d: %+v, want the RoCE v2 GID %v on %s", idx, ent, GIDFromIP(ip), end.Netdev)
	}
	port, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if port.State != PortActive || port.ActiveMTU != MTU1024 {
		t.Fatalf("port 1 of %s: state %v, active MTU %v; want ACTIVE and 1024 on a 1500-byte veth", end.Device, port.State, port.ActiveMTU)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "PD", pd.Close)
	e := &verbsEnv{t: t, ctx: c, pd: pd, gidIdx: idx, gid: GIDFromIP(ip)}

	const size = 64 << 10
	abuf, amr := e.memory(size)
	bbuf, bmr := e.memory(size)
	am, bm := abuf.Bytes(), bbuf.Bytes()
	fillPattern(am, 11)
	fillPattern(bm, 201)
	cq := e.cq(64, nil)
	a, b := e.linkedPair(cq, defaultLink)
	for _, q := range []*QP{a, b} {
		attr, err := q.Query(QPAttrAll)
		if err != nil {
			t.Fatal(err)
		}
		if attr.State != QPStateRTS || attr.PathMTU != MTU1024 || attr.AH.DGID != e.gid || attr.AH.SGIDIndex != e.gidIdx {
			t.Fatalf("QP %#x: %+v", q.QPN(), attr)
		}
	}

	// SEND of 5000 bytes (5 packets) from two SGEs into two SGEs; SEND WITH
	// IMM; an inline SEND.
	if err := b.PostRecv([]RecvWR{
		{ID: 20, SGEs: []SGE{bmr.SGE(8192, 3000), bmr.SGE(16384, 3000)}},
		{ID: 21, SGEs: []SGE{bmr.SGE(24576, 2048)}},
		{ID: 22, SGEs: []SGE{bmr.SGE(28672, 64)}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{
		{ID: 1, Op: OpSend, Flags: SendSignaled, SGEs: []SGE{amr.SGE(0, 2000), amr.SGE(4096, 3000)}},
		{ID: 2, Op: OpSendImm, Flags: SendSignaled, Imm: 0xa1b2c3d4, SGEs: []SGE{amr.SGE(100, 2048)}},
		{ID: 3, Op: OpSend, Flags: SendSignaled | SendInline, SGEs: []SGE{amr.SGE(300, 50)}},
	}); err != nil {
		t.Fatal(err)
	}
	got := byID(t, pollN(t, cq, 6))
	expectWC(t, got[1], true, WCOpSend, a.QPN(), 5000)
	expectWC(t, got[2], true, WCOpSend, a.QPN(), 2048)
	expectWC(t, got[3], true, WCOpSend, a.QPN(), 50)
	wc, ok := got[20]
	expectWC(t, wc, ok, WCOpRecv, b.QPN(), 5000)
	wc, ok = got[21]
	expectWC(t, wc, ok, WCOpRecv, b.QPN(), 2048)
	if wc.Flags&WCWithImm == 0 || wc.Imm != 0xa1b2c3d4 {
		t.Errorf("SEND WITH IMM: imm %#x flags %v", wc.Imm, wc.Flags)
	}
	wc, ok = got[22]
	expectWC(t, wc, ok, WCOpRecv, b.QPN(), 50)
	sent := append(append([]byte{}, am[:2000]...), am[4096:4096+3000]...)
	recvd := append(append([]byte{}, bm[8192:8192+3000]...), bm[16384:16384+2000]...)
	if !bytes.Equal(recvd, sent) || !bytes.Equal(bm[24576:24576+2048], am[100:2148]) || !bytes.Equal(bm[28672:28672+50], am[300:350]) {
		t.Fatal("SEND data differs")
	}

	// RDMA WRITE of 10000 bytes, WRITE WITH IMM, RDMA READ of 9000 bytes.
	if err := b.PostRecv([]RecvWR{{ID: 23}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PostSend([]SendWR{
		{ID: 4, Op: OpWrite, Flags: SendSignaled, SGEs: []SGE{amr.SGE(1000, 10000)}, RemoteAddr: bmr.Addr() + 32768, RKey: bmr.RKey()},
		{ID: 5, Op: OpWriteImm, Flags: SendSignaled, Imm: 77, SGEs: []SGE{amr.SGE(20000, 1500)}, RemoteAddr: bmr.Addr() + 45000, RKey: bmr.RKey()},
		{ID: 6, Op: OpRead, Flags: SendSignaled, SGEs: []SGE{amr.SGE(40000, 4000), amr.SGE(48000, 5000)}, RemoteAddr: bmr.Addr() + 50000, RKey: bmr.RKey()},
	}); err != nil {
		t.Fatal(err)
	}
	got = byID(t, pollN(t, cq, 4))
	expectWC(t, got[4], true, WCOpRDMAWrite, a.QPN(), 10000)
	expectWC(t, got[5], true, WCOpRDMAWrite, a.QPN(), 1500)
	expectWC(t, got[6], true, WCOpRDMARead, a.QPN(), 9000)
	wc, ok = got[23]
	expectWC(t, wc, ok, WCOpRecvRDMAWithImm, b.QPN(), 1500)
	if wc.Imm != 77 {
		t.Errorf("WRITE WITH IMM: imm %d", wc.Imm)
	}
	if !bytes.Equal(bm[32768:32768+10000], am[1000:11000]) || !bytes.Equal(bm[45000:46500], am[20000:21500]) {
		t.Fatal("RDMA WRITE data differs")
	}
	readBack := append(append([]byte{}, am[40000:44000]...), am[48000:53000]...)
	if !bytes.Equal(readBack, bm[50000:59000]) {
		t.Fatal("RDMA READ data differs")
	}

	// Atomics on b's word at 60000 (8-byte aligned); originals land in a.
	binary.LittleEndian.PutUint64(bm[60000:], 5000)
	if err := a.PostSend([]SendWR{
		{ID: 7, Op: OpAtomicFetchAdd, Flags: SendSignaled, SGEs: []SGE{amr.SGE(60000, 8)}, RemoteAddr: bmr.Addr() + 60000, RKey: bmr.RKey(), CompareAdd: 37},
		{ID: 8, Op: OpAtomicCmpSwap, Flags: SendSignaled | SendFence, SGEs: []SGE{amr.SGE(60008, 8)}, RemoteAddr: bmr.Addr() + 60000, RKey: bmr.RKey(), CompareAdd: 5037, Swap: 1 << 40},
		{ID: 9, Op: OpAtomicCmpSwap, Flags: SendSignaled | SendFence, SGEs: []SGE{amr.SGE(60016, 8)}, RemoteAddr: bmr.Addr() + 60000, RKey: bmr.RKey(), CompareAdd: 5037, Swap: 9},
	}); err != nil {
		t.Fatal(err)
	}
	got = byID(t, pollN(t, cq, 3))
	expectWC(t, got[7], true, WCOpFetchAdd, a.QPN(), 8)
	expectWC(t, got[8], true, WCOpCompSwap, a.QPN(), 8)
	expectWC(t, got[9], true, WCOpCompSwap, a.QPN(), 8)
	o1, o2, o3 := binary.LittleEndian.Uint64(am[60000:]), binary.LittleEndian.Uint64(am[60008:]), binary.LittleEndian.Uint64(am[60016:])
	if now := binary.LittleEndian.Uint64(bm[60000:]); o1 != 5000 || o2 != 5037 || o3 != 1<<40 || now != 1<<40 {
		t.Fatalf("atomics: originals %d, %d, %d (want 5000, 5037, %d), now %d (want %d)", o1, o2, o3, uint64(1)<<40, now, uint64(1)<<40)
	}
	// Nothing else arrived.
	wcs := make([]WC, 4)
	if n, err := cq.Poll(wcs); n != 0 || err != nil {
		t.Errorf("extra completions %+v, %v", wcs[:n], err)
	}
}
