package nvmeof

import (
	"encoding/binary"
	"testing"
)

// The target's decoders and its command engine meet whatever a host
// sends: none may panic, and every answer must be one a host can take.

// seedCapsules are commands a host sends, the kernel's and ours.
func seedCapsules() [][]byte {
	var out [][]byte
	add := func(c command, sgl func(*command)) {
		sgl(&c)
		out = append(out, append([]byte(nil), c[:]...))
	}
	keyed := func(n int) func(*command) { return func(c *command) { c.setKeyedSGL(0, n, keyData) } }
	d := make([]byte, connectDataSize)
	connectData(d, testHostID, 0xffff, testNQN, testHostNQN)
	add(connectCommand(1, 32, 0), keyed(connectDataSize))
	add(propertyGet(propCAP), keyed(0))
	add(propertySet(propCC, ccIOSQES|ccIOCQES|ccEnable), keyed(0))
	add(identifyCommand(cnsController, 0), keyed(identifySize))
	add(identifyCommand(cnsNSDescList, 1), keyed(identifySize))
	add(getLogPage(logSMART, 0, 512), keyed(512))
	add(getLogPage(logDiscovery, 0, 4096), keyed(4096))
	add(setNumQueues(4), keyed(0))
	add(keepAlive(), keyed(0))
	add(rwCommand(opRead, 1, 8, 8), keyed(4096))
	add(rwCommand(opWrite, 1, 0, 1), keyed(512))
	add(rwCommand(opWriteZeroes, 1, 3, 100), keyed(0))
	add(flushCommand(nsidAll), keyed(0))
	w := rwCommand(opWrite, 1, 2, 2)
	w.setInlineSGL(1024)
	out = append(out, append(w[:], make([]byte, 1024)...))
	out = append(out, make([]byte, 64), []byte{0x7f, 0x40})
	return out
}

func FuzzTargetCapsule(f *testing.F) {
	for _, c := range seedCapsules() {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, capsule []byte) {
		if len(capsule) < sqeSize {
			if _, err := parseSQE(capsule); err == nil {
				t.Fatalf("a %d-byte capsule decoded", len(capsule))
			}
			return
		}
		if len(capsule) > sqeSize+16<<10 {
			capsule = capsule[:sqeSize+16<<10]
		}
		e := newEngine(t, &TargetConfig{MaxIOSize: 64 << 10})
		id := e.enable(0)
		io := e.ioQueue(1, id)
		fresh := e.queue(2, 8)
		for _, q := range []*engineQueue{e.admin, io, fresh} {
			// The host's memory behind any key the capsule names: as
			// much as the SGL says, up to 64 KiB.
			sq, _ := parseSQE(capsule)
			q.mem[sq.sgl.key] = make([]byte, min(sq.sgl.length, 64<<10))
			r := q.run(append([]byte(nil), capsule...))
			if r.status == 0xffff {
				continue // the queue ended, as an RDMA error would end it
			}
			if r.cid != sq.cid {
				t.Fatalf("answered command %d for %d", r.cid, sq.cid)
			}
			if r.status != 0 && r.status&statusDNR == 0 && r.status>>8 != 2 && r.status != scWriteFault {
				t.Fatalf("status %#x without DNR", r.status)
			}
		}
	})
}

func FuzzTargetDecoders(f *testing.F) {
	f.Add(cmRequest(1, 32))
	f.Add(make([]byte, connectDataSize))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, st := parseCMRequest(b, 4, 128); st == 0 {
			if int(r.hsqsize) >= 128 || r.qid > 4 || r.hrqsize == 0 {
				t.Fatalf("accepted %+v", r)
			}
			if r.qid == 0 && r.hsqsize >= adminDepth {
				t.Fatalf("accepted an admin queue of %d", r.hsqsize+1)
			}
		}
		if ci, err := parseConnectData(b); err == nil && (len(ci.subsysNQN) > 256 || len(ci.hostNQN) > 256) {
			t.Fatalf("NQNs of %d and %d bytes", len(ci.subsysNQN), len(ci.hostNQN))
		}
		if s, err := parseSQE(b); err == nil {
			a := parseGetLogPage(&s)
			if a.length == 0 || a.length > 1<<34 {
				t.Fatalf("log page of %d bytes", a.length)
			}
			if rw := parseRW(&s); rw.blocks == 0 || rw.blocks > 65536 {
				t.Fatalf("%d blocks", rw.blocks)
			}
			if s.sgl.typ>>4 == 4 && s.sgl.length >= 1<<24 {
				t.Fatalf("keyed SGL of %d bytes", s.sgl.length)
			}
			if binary.LittleEndian.Uint16(b[2:]) != s.cid {
				t.Fatal("command ID")
			}
		}
	})
}
