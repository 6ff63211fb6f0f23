package nvmeof

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"
)

// The target's command engine, driven without RDMA: capsules built with
// the host's own encoders go in, responses come out, and the host's
// memory that keyed SGLs point at is a map of byte slices by key.

type engineQueue struct {
	t   *testing.T
	s   *session
	mem map[uint32][]byte // the host's memory: key → bytes, addresses are offsets

	mu    sync.Mutex
	ended error
}

func (e *engineQueue) buffer(r *request) ([]byte, bool) { return make([]byte, r.need), true }

// fetch reads the host's memory; a key or range it does not have fails the
// queue, as an RDMA READ with a bad key would.
func (e *engineQueue) fetch(r *request) bool {
	m, ok := e.mem[r.sqe.sgl.key]
	if !ok || r.sqe.sgl.addr > uint64(len(m)) || uint64(r.need) > uint64(len(m))-r.sqe.sgl.addr {
		e.end(errors.New("remote access error"))
		return false
	}
	copy(r.data, m[r.sqe.sgl.addr:])
	return true
}

func (e *engineQueue) end(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended == nil {
		e.ended = err
	}
}

func (e *engineQueue) endedWith() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

type engineResult struct {
	completion
	hold       bool
	out        []byte // the data the target gave the host
	invalidate bool   // the response goes as a SEND with Invalidate of sgl.key
}

// run executes one capsule and returns the response the target would
// send, after writing any data it gives the host into the keyed memory.
func (e *engineQueue) run(capsule []byte) engineResult {
	e.t.Helper()
	sq, err := parseSQE(capsule)
	if err != nil {
		e.t.Fatal(err)
	}
	r := &request{sqe: sq, raw: capsule[:sqeSize], capsule: capsule}
	if !e.s.execute(r, e) {
		return engineResult{completion: completion{status: 0xffff}}
	}
	res := engineResult{completion: completion{result: r.result, cid: sq.cid, status: r.status}, hold: r.hold, invalidate: r.invalidate}
	if r.status != 0 && r.out != 0 {
		e.t.Fatalf("opcode %#x: status %#x with %d bytes of data for the host", sq.opcode, r.status, r.out)
	}
	if r.out > len(r.data) {
		e.t.Fatalf("opcode %#x: %d bytes out of a %d-byte buffer", sq.opcode, r.out, len(r.data))
	}
	if r.out > 0 {
		res.out = append([]byte(nil), r.data[:r.out]...)
		m, ok := e.mem[sq.sgl.key]
		if !ok || sq.sgl.addr > uint64(len(m)) || uint64(r.out) > uint64(len(m))-sq.sgl.addr {
			// An RDMA WRITE the host's memory does not take ends the
			// queue before the response.
			e.end(errors.New("remote access error"))
			return engineResult{completion: completion{status: 0xffff}}
		}
		copy(m[sq.sgl.addr:], r.data[:r.out])
	}
	return res
}

// Host memory keys the tests use.
const (
	keyData = 0x1000 + iota
	keyConnect
)

type engine struct {
	t     *testing.T
	tgt   *Target
	admin *engineQueue
	ns    *TargetNamespace
	cid   uint16
}

const (
	testNQN     = "nqn.2024-01.io.goverbs:test"
	testHostNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-4333-8444-555555555555"
)

var testHostID = [16]byte{1, 2, 3, 4}

func newEngine(t *testing.T, cfg *TargetConfig, subs ...*Subsystem) *engine {
	t.Helper()
	if len(subs) == 0 {
		ns, err := MemoryNamespace(1<<20, 512)
		if err != nil {
			t.Fatal(err)
		}
		subs = []*Subsystem{{NQN: testNQN, Namespaces: []*TargetNamespace{ns}}}
	}
	tgt, err := newTarget(cfg, subs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tgt.Close() })
	e := &engine{t: t, tgt: tgt}
	if len(subs[0].Namespaces) > 0 {
		e.ns = subs[0].Namespaces[0]
	}
	e.admin = e.queue(0, adminDepth)
	return e
}

// queue makes a session as if a queue's connection request had come with
// depth entries.
func (e *engine) queue(qid uint16, depth int) *engineQueue {
	q := &engineQueue{t: e.t, mem: map[uint32][]byte{}}
	q.s = &session{t: e.tgt, cm: cmQueueRequest{qid: qid, hrqsize: uint16(depth), hsqsize: uint16(depth - 1)},
		local: netip.MustParseAddrPort("10.77.0.1:4420"), end: q.end}
	return q
}

// cmd numbers a command and sends it on q with a keyed SGL of n bytes of
// host memory (0 for none); data, if any, is what that memory holds.
func (e *engine) cmd(q *engineQueue, c command, n int, data []byte) engineResult {
	e.t.Helper()
	e.cid++
	c.setCID(e.cid)
	c.setKeyedSGL(0, n, keyData)
	m := make([]byte, n)
	copy(m, data)
	q.mem[keyData] = m
	return q.run(c[:])
}

func (e *engine) connect(q *engineQueue, sqsize int, cntlid uint16, subsys, host string, kato uint32) engineResult {
	e.t.Helper()
	c := connectCommand(q.s.cm.qid, sqsize, kato)
	d := make([]byte, connectDataSize)
	connectData(d, testHostID, cntlid, subsys, host)
	return e.cmd(q, c, connectDataSize, d)
}

func wantStatus(t *testing.T, what string, got engineResult, want uint16) {
	t.Helper()
	if got.status != want {
		t.Fatalf("%s: status %#x (%v), want %#x (%v)", what, got.status, statusError(what, got.status), want, statusError(what, want))
	}
}

// enable connects the admin queue and enables the controller as a host
// does; it returns the controller ID.
func (e *engine) enable(kato uint32) uint16 {
	e.t.Helper()
	r := e.connect(e.admin, adminDepth, 0xffff, testNQN, testHostNQN, kato)
	wantStatus(e.t, "connect", r, 0)
	wantStatus(e.t, "enable", e.cmd(e.admin, propertySet(propCC, ccIOSQES|ccIOCQES|ccEnable), 0, nil), 0)
	r = e.cmd(e.admin, propertyGet(propCSTS), 0, nil)
	if r.status != 0 || r.result&cstsReady == 0 {
		e.t.Fatalf("CSTS after enable: %#x status %#x", r.result, r.status)
	}
	return e.admin.s.ctrl.Load().id
}

// ioQueue connects I/O queue qid to the controller.
func (e *engine) ioQueue(qid uint16, cntlid uint16) *engineQueue {
	e.t.Helper()
	q := e.queue(qid, 32)
	wantStatus(e.t, "I/O connect", e.connect(q, 32, cntlid, testNQN, testHostNQN, 0), 0)
	return q
}

func TestTargetConnect(t *testing.T) {
	e := newEngine(t, nil)
	// Nothing but Connect on a new queue.
	wantStatus(t, "identify before connect", e.cmd(e.admin, identifyCommand(cnsController, 0), identifySize, nil), scInvalidOpcode|statusDNR)

	r := e.connect(e.admin, adminDepth, 0xffff, "nqn.2024-01.io.goverbs:nothere", testHostNQN, 0)
	wantStatus(t, "unknown subsystem", r, scConnectInvalidParam|statusDNR)
	if r.result != 1<<16|256 {
		t.Fatalf("unknown subsystem: IATTR/IPO %#x, want the subsystem NQN's (%#x)", r.result, 1<<16|256)
	}
	r = e.connect(e.admin, adminDepth, 5, testNQN, testHostNQN, 0)
	wantStatus(t, "a static controller ID", r, scConnectInvalidParam|statusDNR)
	if r.result != 1<<16|16 {
		t.Fatalf("static controller ID: IATTR/IPO %#x", r.result)
	}
	wantStatus(t, "sqsize 0", e.connect(e.admin, 1, 0xffff, testNQN, testHostNQN, 0), scConnectInvalidParam|statusDNR)
	wantStatus(t, "sqsize above the CM's hsqsize", e.connect(e.admin, adminDepth+1, 0xffff, testNQN, testHostNQN, 0), scConnectInvalidParam|statusDNR)
	c := connectCommand(1, adminDepth, 0)
	d := make([]byte, connectDataSize)
	connectData(d, testHostID, 0xffff, testNQN, testHostNQN)
	wantStatus(t, "qid other than the CM request's", e.cmd(e.admin, c, connectDataSize, d), scConnectInvalidParam|statusDNR)
	c = connectCommand(0, adminDepth, 0)
	binary.LittleEndian.PutUint16(c[40:], 1)
	wantStatus(t, "record format 1", e.cmd(e.admin, c, connectDataSize, d), scConnectFormat|statusDNR)
	wantStatus(t, "512 bytes of connect data", e.cmd(e.admin, connectCommand(0, adminDepth, 0), 512, d), scSGLInvalidData|statusDNR)

	r = e.connect(e.admin, adminDepth, 0xffff, testNQN, testHostNQN, 0)
	wantStatus(t, "connect", r, 0)
	id := uint16(r.result)
	if id == 0 || id >= 0xfff0 {
		t.Fatalf("controller ID %#x", id)
	}
	wantStatus(t, "second connect", e.connect(e.admin, adminDepth, 0xffff, testNQN, testHostNQN, 0), scConnectCtrlBusy|statusDNR)
	cs := e.tgt.Controllers()
	if len(cs) != 1 || cs[0].ID != id || cs[0].HostNQN != testHostNQN || cs[0].HostID != testHostID || cs[0].Subsystem != testNQN {
		t.Fatalf("Controllers() = %+v", cs)
	}

	// Admin commands wait for CC.EN and CSTS.RDY.
	wantStatus(t, "identify before enable", e.cmd(e.admin, identifyCommand(cnsController, 0), identifySize, nil), scCmdSeqError|statusDNR)
	q := e.queue(1, 32)
	wantStatus(t, "I/O connect before enable", e.connect(q, 32, id, testNQN, testHostNQN, 0), scCmdSeqError|statusDNR)

	// A second host gets a controller of its own, with another ID.
	other := e.queue(0, adminDepth)
	r = e.connect(other, adminDepth, 0xffff, testNQN, "nqn.2014-08.org.nvmexpress:uuid:other", 0)
	wantStatus(t, "second host", r, 0)
	if uint16(r.result) == id {
		t.Fatalf("two controllers with ID %d", id)
	}
}

func TestTargetHostsAllowed(t *testing.T) {
	ns, _ := MemoryNamespace(4096, 512)
	e := newEngine(t, nil, &Subsystem{NQN: testNQN, Namespaces: []*TargetNamespace{ns}, Hosts: []string{"nqn.2014-08.org.nvmexpress:uuid:allowed"}})
	r := e.connect(e.admin, adminDepth, 0xffff, testNQN, testHostNQN, 0)
	wantStatus(t, "a host not listed", r, scConnectInvalidHost|statusDNR)
	if r.result != 1<<16|512 {
		t.Fatalf("IATTR/IPO %#x, want the host NQN's", r.result)
	}
	wantStatus(t, "the host listed", e.connect(e.admin, adminDepth, 0xffff, testNQN, "nqn.2014-08.org.nvmexpress:uuid:allowed", 0), 0)
}

func TestTargetProperties(t *testing.T) {
	e := newEngine(t, &TargetConfig{QueueDepth: 64})
	wantStatus(t, "connect", e.connect(e.admin, adminDepth, 0xffff, testNQN, testHostNQN, 0), 0)
	r := e.cmd(e.admin, propertyGet(propCAP), 0, nil)
	if r.status != 0 || r.result&0xffff != 63 || r.result>>37&1 != 1 || r.result>>24&0xff == 0 {
		t.Fatalf("CAP %#x status %#x", r.result, r.status)
	}
	if r := e.cmd(e.admin, propertyGet(propVS), 0, nil); r.status != 0 || r.result != 0x10300 {
		t.Fatalf("VS %#x status %#x", r.result, r.status)
	}
	// CAP read as 4 bytes, an unknown offset, CC written as 8 bytes, VS
	// written: invalid field.
	g := propertyGet(propCAP)
	g[40] = 0
	wantStatus(t, "CAP as 4 bytes", e.cmd(e.admin, g, 0, nil), scInvalidField|statusDNR)
	wantStatus(t, "offset 0x30", e.cmd(e.admin, propertyGet(0x30), 0, nil), scInvalidField|statusDNR)
	s := propertySet(propCC, ccEnable)
	s[40] = 1
	wantStatus(t, "CC as 8 bytes", e.cmd(e.admin, s, 0, nil), scInvalidField|statusDNR)
	wantStatus(t, "set VS", e.cmd(e.admin, propertySet(propVS, 0), 0, nil), scInvalidField|statusDNR)

	csts := func() uint64 {
		r := e.cmd(e.admin, propertyGet(propCSTS), 0, nil)
		wantStatus(t, "CSTS", r, 0)
		return r.result
	}
	// 128-byte submission queue entries: the controller is fatal.
	wantStatus(t, "enable", e.cmd(e.admin, propertySet(propCC, 7<<16|ccIOCQES|ccEnable), 0, nil), 0)
	if v := csts(); v&cstsFatal == 0 || v&cstsReady != 0 {
		t.Fatalf("CSTS %#x after enabling with IOSQES 7", v)
	}
	wantStatus(t, "disable", e.cmd(e.admin, propertySet(propCC, 0), 0, nil), 0)
	if v := csts(); v != 0 {
		t.Fatalf("CSTS %#x after disable", v)
	}
	wantStatus(t, "enable", e.cmd(e.admin, propertySet(propCC, ccIOSQES|ccIOCQES|ccEnable), 0, nil), 0)
	if v := csts(); v != cstsReady {
		t.Fatalf("CSTS %#x after enable", v)
	}
	if r := e.cmd(e.admin, propertyGet(propCC), 0, nil); r.result != ccIOSQES|ccIOCQES|ccEnable {
		t.Fatalf("CC reads %#x", r.result)
	}
	wantStatus(t, "shutdown", e.cmd(e.admin, propertySet(propCC, ccIOSQES|ccIOCQES|ccEnable|ccShnNormal), 0, nil), 0)
	if v := csts(); v&cstsShstMask != cstsShstDone || v&cstsReady != 0 {
		t.Fatalf("CSTS %#x after shutdown", v)
	}
	// Property commands are for the admin queue only.
	q := e.queue(1, 8)
	e.enableAgain()
	wantStatus(t, "I/O connect", e.connect(q, 8, e.admin.s.ctrl.Load().id, testNQN, testHostNQN, 0), 0)
	wantStatus(t, "property get on an I/O queue", e.cmd(q, propertyGet(propCSTS), 0, nil), scInvalidOpcode|statusDNR)
}

func (e *engine) enableAgain() {
	e.t.Helper()
	wantStatus(e.t, "disable", e.cmd(e.admin, propertySet(propCC, 0), 0, nil), 0)
	wantStatus(e.t, "enable", e.cmd(e.admin, propertySet(propCC, ccIOSQES|ccIOCQES|ccEnable), 0, nil), 0)
}

func TestTargetIdentify(t *testing.T) {
	ns1, _ := MemoryNamespace(1<<20, 4096)
	ns2, _ := MemoryNamespace(1<<16, 512)
	ns2.ID = 7
	ns2.ReadOnly = true
	e := newEngine(t, &TargetConfig{MaxIOSize: 256 << 10, InlineDataSize: 8192},
		&Subsystem{NQN: testNQN, Serial: "SN42", Model: "test model", Namespaces: []*TargetNamespace{ns1, ns2}})
	id := e.enable(0)

	r := e.cmd(e.admin, identifyCommand(cnsController, 0), identifySize, nil)
	wantStatus(t, "identify controller", r, 0)
	ci, err := parseIdentifyController(r.out)
	if err != nil {
		t.Fatal(err)
	}
	if ci.SerialNumber != "SN42" || ci.ModelNumber != "test model" || ci.Firmware != "1.0" || ci.ControllerID != id ||
		ci.Version != 0x10300 || ci.MaxDataTransfer != 256<<10 || ci.Namespaces != 7 || !ci.WriteZeroes() ||
		ci.VWC != 1 || ci.KeepAliveUnit == 0 || ci.SGLSupport&(1<<2) == 0 || ci.SGLSupport&(1<<20) == 0 ||
		ci.SubsystemNQN != testNQN || ci.IOCommandCapsuleSize != 64+8192 || ci.InCapsuleDataOffset != 0 || ci.MaxCommands != 128 {
		t.Fatalf("identify controller: %+v", ci)
	}
	if r.out[111] != 1 || binary.LittleEndian.Uint32(r.out[96:])&ctrattTBKAS == 0 {
		t.Fatalf("CNTRLTYPE %d, CTRATT %#x", r.out[111], binary.LittleEndian.Uint32(r.out[96:]))
	}

	r = e.cmd(e.admin, identifyCommand(cnsNamespace, 7), identifySize, nil)
	wantStatus(t, "identify namespace 7", r, 0)
	ni, err := parseIdentifyNamespace(7, r.out)
	if err != nil || ni.Size != 128 || ni.Capacity != 128 || ni.BlockSize != 512 || ni.NGUID == [16]byte{} || r.out[99] != 1 || r.out[30] != 1 {
		t.Fatalf("identify namespace 7: %+v %v, NSATTR %d NMIC %d", ni, err, r.out[99], r.out[30])
	}
	r = e.cmd(e.admin, identifyCommand(cnsNamespace, 1), identifySize, nil)
	n1, _ := parseIdentifyNamespace(1, r.out)
	if n1.Size != 256 || n1.BlockSize != 4096 || n1.NGUID == ni.NGUID {
		t.Fatalf("identify namespace 1: %+v", n1)
	}
	r = e.cmd(e.admin, identifyCommand(cnsNamespace, 2), identifySize, nil)
	if r.status != 0 || !bytes.Equal(r.out, make([]byte, identifySize)) {
		t.Fatalf("identify of an ID with no namespace: status %#x, not zeros", r.status)
	}
	wantStatus(t, "identify namespace 0xFFFFFFFF", e.cmd(e.admin, identifyCommand(cnsNamespace, nsidAll), identifySize, nil), scInvalidNS|statusDNR)

	r = e.cmd(e.admin, identifyCommand(cnsActiveNSList, 0), identifySize, nil)
	if r.status != 0 || le32(r.out) != 1 || le32(r.out[4:]) != 7 || le32(r.out[8:]) != 0 {
		t.Fatalf("active namespaces: % x", r.out[:12])
	}
	r = e.cmd(e.admin, identifyCommand(cnsActiveNSList, 1), identifySize, nil)
	if le32(r.out) != 7 || le32(r.out[4:]) != 0 {
		t.Fatalf("active namespaces after 1: % x", r.out[:8])
	}
	wantStatus(t, "active list after 0xFFFFFFFE", e.cmd(e.admin, identifyCommand(cnsActiveNSList, 0xfffffffe), identifySize, nil), scInvalidNS|statusDNR)

	r = e.cmd(e.admin, identifyCommand(cnsNSDescList, 7), identifySize, nil)
	wantStatus(t, "descriptors", r, 0)
	if r.out[0] != nidtNGUID || r.out[1] != 16 || !bytes.Equal(r.out[4:20], ni.NGUID[:]) ||
		r.out[20] != nidtUUID || r.out[21] != 16 || r.out[40] != nidtCSI || r.out[41] != 1 || r.out[44] != 0 || r.out[45] != 0 {
		t.Fatalf("descriptors: % x", r.out[:48])
	}
	wantStatus(t, "descriptors of no namespace", e.cmd(e.admin, identifyCommand(cnsNSDescList, 3), identifySize, nil), scInvalidNS|statusDNR)
	c := identifyCommand(cnsCSCtrl, 0)
	if r := e.cmd(e.admin, c, identifySize, nil); r.status != 0 || !bytes.Equal(r.out, make([]byte, identifySize)) {
		t.Fatalf("CNS 06h: status %#x", r.status)
	}
	c.dword(11, 2<<24) // CSI: zoned namespaces
	wantStatus(t, "CNS 06h for ZNS", e.cmd(e.admin, c, identifySize, nil), scInvalidField|statusDNR)
	wantStatus(t, "CNS 0x10", e.cmd(e.admin, identifyCommand(0x10, 0), identifySize, nil), scInvalidField|statusDNR)
	wantStatus(t, "identify into 512 bytes", e.cmd(e.admin, identifyCommand(cnsController, 0), 512, nil), scSGLInvalidData|statusDNR)
}

func TestTargetLogPages(t *testing.T) {
	e := newEngine(t, nil)
	e.enable(0)
	// A failure to log first.
	wantStatus(t, "CNS 0x10", e.cmd(e.admin, identifyCommand(0x10, 0), identifySize, nil), scInvalidField|statusDNR)
	failedCID := e.cid

	r := e.cmd(e.admin, getLogPage(logError, 0, 512), 512, nil)
	wantStatus(t, "error log", r, 0)
	if binary.LittleEndian.Uint64(r.out) != 1 || binary.LittleEndian.Uint16(r.out[10:]) != failedCID ||
		binary.LittleEndian.Uint16(r.out[12:])>>1 != scInvalidField|statusDNR || binary.LittleEndian.Uint64(r.out[64:]) != 0 {
		t.Fatalf("error log: % x", r.out[:32])
	}
	c := getLogPage(logSMART, 0, 512)
	c.setNSID(nsidAll)
	r = e.cmd(e.admin, c, 512, nil)
	if r.status != 0 || r.out[3] != 100 || binary.LittleEndian.Uint64(r.out[176:]) != 1 {
		t.Fatalf("SMART: status %#x, % x", r.status, r.out[:8])
	}
	c.setNSID(9)
	wantStatus(t, "SMART of namespace 9", e.cmd(e.admin, c, 512, nil), scInvalidNS|statusDNR)
	r = e.cmd(e.admin, getLogPage(logCmdEffects, 0, 4096), 4096, nil)
	if r.status != 0 || le32(r.out[4*opIdentify:]) != 1 || le32(r.out[1024+4*opWrite:]) != 3 || le32(r.out[4*0x10:]) != 0 {
		t.Fatalf("effects: status %#x", r.status)
	}
	if r := e.cmd(e.admin, getLogPage(logChangedNS, 0, 4096), 4096, nil); r.status != 0 || le32(r.out) != 0 {
		t.Fatalf("changed namespaces: status %#x", r.status)
	}
	r = e.cmd(e.admin, getLogPage(logFirmwareSlot, 0, 512), 512, nil)
	if r.status != 0 || r.out[0] != 1 || string(r.out[8:16]) != "1.0     " {
		t.Fatalf("firmware slot: %q", r.out[:16])
	}
	// An offset into the page, past its end, unaligned.
	r = e.cmd(e.admin, getLogPage(logFirmwareSlot, 8, 8), 8, nil)
	if r.status != 0 || string(r.out) != "1.0     " {
		t.Fatalf("firmware slot at 8: %q %#x", r.out, r.status)
	}
	wantStatus(t, "offset past the end", e.cmd(e.admin, getLogPage(logFirmwareSlot, 1024, 8), 8, nil), scInvalidField|statusDNR)
	wantStatus(t, "offset 6", e.cmd(e.admin, getLogPage(logFirmwareSlot, 6, 8), 8, nil), scInvalidField|statusDNR)
	wantStatus(t, "log 0xc0", e.cmd(e.admin, getLogPage(0xc0, 0, 512), 512, nil), scInvalidLogPage|statusDNR)
	wantStatus(t, "discovery log of an NVM subsystem", e.cmd(e.admin, getLogPage(logDiscovery, 0, 1024), 1024, nil), scInvalidLogPage|statusDNR)
	wantStatus(t, "512 bytes asked, 4096 given", e.cmd(e.admin, getLogPage(logSMART, 0, 512), 4096, nil), scSGLInvalidData|statusDNR)
	wantStatus(t, "more than MDTS", e.cmd(e.admin, getLogPage(logError, 0, 1<<20), 1<<20, nil), scInvalidField|statusDNR)
}

func TestTargetFeatures(t *testing.T) {
	e := newEngine(t, &TargetConfig{MaxIOQueues: 3})
	e.enable(0)
	r := e.cmd(e.admin, setNumQueues(8), 0, nil)
	if r.status != 0 || r.result != 2|2<<16 {
		t.Fatalf("8 queues asked, 3 the most: result %#x status %#x", r.result, r.status)
	}
	if r := e.cmd(e.admin, setNumQueues(2), 0, nil); r.result != 1|1<<16 {
		t.Fatalf("2 queues asked: result %#x", r.result)
	}
	c := setNumQueues(1)
	c.dword(11, 0xffff)
	wantStatus(t, "0xFFFF queues", e.cmd(e.admin, c, 0, nil), scInvalidField|statusDNR)
	c = setNumQueues(1)
	c.dword(10, featNumQueues|1<<31)
	wantStatus(t, "save", e.cmd(e.admin, c, 0, nil), scFeatureNotSaveable|statusDNR)

	feature := func(op byte, fid uint32, cdw11 uint32, n int) engineResult {
		var c command
		c.setOpcode(op)
		c.dword(10, fid)
		c.dword(11, cdw11)
		return e.cmd(e.admin, c, n, nil)
	}
	wantStatus(t, "AEN config", feature(opSetFeature, featAsyncEvent, oaesNSAttr, 0), 0)
	if r := feature(opGetFeatures, featAsyncEvent, 0, 0); r.result != oaesNSAttr {
		t.Fatalf("AEN config reads %#x", r.result)
	}
	wantStatus(t, "AEN for SMART warnings", feature(opSetFeature, featAsyncEvent, 0xff, 0), scInvalidField|statusDNR)
	wantStatus(t, "set KATO", feature(opSetFeature, featKATO, 7000, 0), 0)
	if r := feature(opGetFeatures, featKATO, 0, 0); r.result != 7000 {
		t.Fatalf("KATO reads %d", r.result)
	}
	if r := feature(opGetFeatures, featVolatileWC, 0, 0); r.status != 0 || r.result != 1 {
		t.Fatalf("VWC: %#x %#x", r.result, r.status)
	}
	if r := feature(opGetFeatures, featNumQueues, 0, 0); r.result != 2|2<<16 {
		t.Fatalf("queues read %#x", r.result)
	}
	if r := feature(opGetFeatures, featHostID, 1, 16); r.status != 0 || !bytes.Equal(r.out, testHostID[:]) {
		t.Fatalf("host ID: %x %#x", r.out, r.status)
	}
	wantStatus(t, "64-bit host ID", feature(opGetFeatures, featHostID, 0, 16), scInvalidField|statusDNR)
	wantStatus(t, "set host ID", feature(opSetFeature, featHostID, 1, 0), scCmdSeqError|statusDNR)
	wantStatus(t, "arbitration", feature(opGetFeatures, 0x01, 0, 0), scInvalidField|statusDNR)
	wantStatus(t, "timestamp", feature(opSetFeature, 0x0e, 0, 0), scInvalidField|statusDNR)
	if r := feature(opGetFeatures, featKATO|3<<8, 0, 0); r.status != 0 || r.result != 1<<2 {
		t.Fatalf("KATO capabilities: %#x %#x", r.result, r.status)
	}
}

func TestTargetAsyncEventsAndKeepAlive(t *testing.T) {
	e := newEngine(t, nil)
	e.enable(0)
	var aer command
	aer.setOpcode(opAsyncEvent)
	for i := range aerLimit {
		if r := e.cmd(e.admin, aer, 0, nil); !r.hold || r.status != 0 {
			t.Fatalf("AER %d: hold %v status %#x", i, r.hold, r.status)
		}
	}
	wantStatus(t, "one AER too many", e.cmd(e.admin, aer, 0, nil), scAsyncLimit|statusDNR)
	wantStatus(t, "keep alive without KATO", e.cmd(e.admin, keepAlive(), 0, nil), scKATOInvalid|statusDNR)
	var abort command
	abort.setOpcode(opAbort)
	if r := e.cmd(e.admin, abort, 0, nil); r.status != 0 || r.result != 1 {
		t.Fatalf("abort: %#x %#x", r.result, r.status)
	}
	var unknown command
	unknown.setOpcode(0x80)
	wantStatus(t, "format NVM", e.cmd(e.admin, unknown, 0, nil), scInvalidOpcode|statusDNR)
}

// A controller whose host stops sending commands for KATO is ended and
// its queues with it; commands keep it.
func TestTargetKeepAliveTimeout(t *testing.T) {
	e := newEngine(t, nil)
	id := e.enable(300)
	io := e.ioQueue(1, id)
	for range 6 {
		time.Sleep(100 * time.Millisecond)
		wantStatus(t, "keep alive", e.cmd(e.admin, keepAlive(), 0, nil), 0)
	}
	if err := e.admin.endedWith(); err != nil {
		t.Fatalf("ended while kept alive: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.admin.endedWith() == nil || io.endedWith() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the controller outlived its keep-alive timeout by seconds")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := e.admin.endedWith(); !errors.Is(err, ErrControllerLost) {
		t.Fatalf("admin queue ended with %v", err)
	}
	if cs := e.tgt.Controllers(); len(cs) != 0 {
		t.Fatalf("controllers left: %+v", cs)
	}
}

func TestTargetIOQueues(t *testing.T) {
	e := newEngine(t, &TargetConfig{MaxIOQueues: 2})
	id := e.enable(0)
	q := e.queue(1, 32)
	wantStatus(t, "unknown controller", e.connect(q, 32, id+1, testNQN, testHostNQN, 0), scConnectInvalidParam|statusDNR)
	wantStatus(t, "another host's controller", e.connect(q, 32, id, testNQN, "nqn.2014-08.org.nvmexpress:uuid:other", 0), scConnectInvalidParam|statusDNR)
	wantStatus(t, "I/O before connect", e.cmd(q, rwCommand(opRead, 1, 0, 1), 512, nil), scInvalidOpcode|statusDNR)
	wantStatus(t, "connect", e.connect(q, 32, id, testNQN, testHostNQN, 0), 0)
	dup := e.queue(1, 32)
	wantStatus(t, "queue 1 twice", e.connect(dup, 32, id, testNQN, testHostNQN, 0), scCmdSeqError|statusDNR)
	q3 := e.queue(3, 32)
	r := e.connect(q3, 32, id, testNQN, testHostNQN, 0)
	wantStatus(t, "queue 3 of 2", r, scConnectInvalidParam|statusDNR)
	if r.result != 42 {
		t.Fatalf("queue 3: IATTR/IPO %#x, want the qid's", r.result)
	}
	if cs := e.tgt.Controllers(); len(cs) != 1 || cs[0].IOQueues != 1 {
		t.Fatalf("controllers %+v", cs)
	}
	// The host disconnects the queue: the controller goes on without it.
	q.s.closed(errors.New("gone"), true)
	if cs := e.tgt.Controllers(); len(cs) != 1 || cs[0].IOQueues != 0 {
		t.Fatalf("after the disconnect: %+v", cs)
	}
	q1 := e.queue(1, 32)
	wantStatus(t, "queue 1 again", e.connect(q1, 32, id, testNQN, testHostNQN, 0), 0)
	// An error on an I/O queue ends the controller.
	q2 := e.ioQueue(2, id)
	q2.s.closed(errors.New("transport error"), false)
	if e.admin.endedWith() == nil || q1.endedWith() == nil || len(e.tgt.Controllers()) != 0 {
		t.Fatal("an I/O queue's error left the controller")
	}
	// A command that was on its way meanwhile gets no answer, not a
	// command sequence error: the host is to see the controller lost.
	if r := e.cmd(q1, rwCommand(opRead, 1, 0, 1), 512, nil); r.status != 0xffff {
		t.Fatalf("a read on a queue of the ended controller: status %#x, want no answer", r.status)
	}
	if r := e.cmd(e.admin, identifyCommand(cnsController, 0), identifySize, nil); r.status != 0xffff {
		t.Fatalf("identify on the ended controller: status %#x, want no answer", r.status)
	}
}

func TestTargetReadWrite(t *testing.T) {
	e := newEngine(t, &TargetConfig{MaxIOSize: 64 << 10})
	id := e.enable(0)
	q := e.ioQueue(1, id)
	data := make([]byte, 8192)
	for i := range data {
		data[i] = byte(i*7 + 3)
	}
	wantStatus(t, "write", e.cmd(q, rwCommand(opWrite, 1, 10, 16), 8192, data), 0)
	got := make([]byte, 8192)
	e.ns.ReadAt(got, 10*512)
	if !bytes.Equal(got, data) {
		t.Fatal("the write did not reach the namespace")
	}
	r := e.cmd(q, rwCommand(opRead, 1, 10, 16), 8192, nil)
	if r.status != 0 || !bytes.Equal(r.out, data) || !bytes.Equal(q.mem[keyData], data) {
		t.Fatalf("read back: status %#x", r.status)
	}

	// In-capsule data.
	c := rwCommand(opWrite, 1, 100, 2)
	e.cid++
	c.setCID(e.cid)
	c.setInlineSGL(1024)
	capsule := append(c[:], data[:1024]...)
	if r := q.run(capsule); r.status != 0 {
		t.Fatalf("in-capsule write: %#x", r.status)
	}
	e.ns.ReadAt(got[:1024], 100*512)
	if !bytes.Equal(got[:1024], data[:1024]) {
		t.Fatal("the in-capsule write did not reach the namespace")
	}
	binary.LittleEndian.PutUint64(capsule[24:], 512) // offset 512: past the data received
	wantStatus(t, "in-capsule data past the capsule", q.run(capsule), scSGLInvalidOffset|statusDNR)
	c = rwCommand(opRead, 1, 100, 2)
	c.setInlineSGL(1024)
	wantStatus(t, "a read into the capsule", q.run(append(c[:], data[:1024]...)), scInvalidField|statusDNR)

	wantStatus(t, "flush", e.cmd(q, flushCommand(1), 0, nil), 0)
	wantStatus(t, "flush all", e.cmd(q, flushCommand(nsidAll), 0, nil), 0)
	wantStatus(t, "flush of namespace 2", e.cmd(q, flushCommand(2), 0, nil), scInvalidNS|statusDNR)
	wantStatus(t, "write zeroes", e.cmd(q, rwCommand(opWriteZeroes, 1, 12, 4), 0, nil), 0)
	e.ns.ReadAt(got, 10*512)
	if !bytes.Equal(got[:1024], data[:1024]) || !bytes.Equal(got[1024:3072], make([]byte, 2048)) || !bytes.Equal(got[3072:], data[3072:]) {
		t.Fatal("write zeroes wrote the wrong blocks")
	}

	blocks := uint64(e.ns.Size() / 512)
	wantStatus(t, "read past the end", e.cmd(q, rwCommand(opRead, 1, blocks-1, 2), 1024, nil), scLBARange|statusDNR)
	wantStatus(t, "write zeroes past the end", e.cmd(q, rwCommand(opWriteZeroes, 1, blocks, 1), 0, nil), scLBARange|statusDNR)
	wantStatus(t, "an LBA that wraps", e.cmd(q, rwCommand(opRead, 1, 1<<64-1, 2), 1024, nil), scLBARange|statusDNR)
	wantStatus(t, "namespace 5", e.cmd(q, rwCommand(opRead, 5, 0, 1), 512, nil), scInvalidNS|statusDNR)
	wantStatus(t, "more than MDTS", e.cmd(q, rwCommand(opRead, 1, 0, 129), 129*512, nil), scInvalidField|statusDNR)
	wantStatus(t, "SGL shorter than the blocks", e.cmd(q, rwCommand(opRead, 1, 0, 2), 512, nil), scSGLInvalidData|statusDNR)
	wantStatus(t, "data with a flush", e.cmd(q, flushCommand(1), 512, nil), scSGLInvalidData|statusDNR)
	var dsm command
	dsm.setOpcode(0x09)
	dsm.setNSID(1)
	wantStatus(t, "dataset management", e.cmd(q, dsm, 0, nil), scInvalidOpcode|statusDNR)

	// Bad data pointers.
	bad := func(what string, typ byte, flags byte, want uint16) {
		t.Helper()
		c := rwCommand(opRead, 1, 0, 1)
		e.cid++
		c.setCID(e.cid)
		c.setKeyedSGL(0, 512, keyData)
		c[39] = typ
		c[1] = flags
		q.mem[keyData] = make([]byte, 512)
		wantStatus(t, what, q.run(c[:]), want)
	}
	bad("SGL data block, address sub type", 0x00, flagSGL, scInvalidField|statusDNR)
	bad("SGL segment", 0x20, flagSGL, scSGLInvalidType|statusDNR)
	bad("SGL bit bucket", 0x10, flagSGL, scSGLInvalidType|statusDNR)
	bad("keyed SGL, sub type 2", 0x42, flagSGL, scInvalidField|statusDNR)
	bad("PRPs", 0x40, 0, scInvalidField|statusDNR)
	bad("fused", 0x40, flagSGL|1, scInvalidField|statusDNR)
	bad("keyed SGL with invalidate", 0x4f, flagSGL, 0)
	if t.Failed() {
		return
	}

	// The Invalidate sub type with data asks for a SEND with Invalidate
	// of the key (nvmet_rdma_map_sgl_keyed); without it, or without data,
	// the response is a plain SEND.
	for _, k := range []struct {
		what       string
		cmd        command
		n          int
		typ        byte
		invalidate bool
	}{
		{"read, invalidate", rwCommand(opRead, 1, 0, 1), 512, sglKeyedInvalidate, true},
		{"write, invalidate", rwCommand(opWrite, 1, 0, 1), 512, sglKeyedInvalidate, true},
		{"read, keep the key", rwCommand(opRead, 1, 0, 1), 512, sglKeyedAddress, false},
		{"flush, invalidate, no data", flushCommand(1), 0, sglKeyedInvalidate, false},
		{"read, invalidate, short SGL", rwCommand(opRead, 1, 0, 2), 512, sglKeyedInvalidate, false},
	} {
		c := k.cmd
		e.cid++
		c.setCID(e.cid)
		c.setKeyedSGL(0, k.n, keyData)
		c[39] = k.typ
		q.mem[keyData] = make([]byte, 512)
		if r := q.run(c[:]); r.invalidate != k.invalidate {
			t.Errorf("%s: status %#x, SEND with Invalidate %v, want %v", k.what, r.status, r.invalidate, k.invalidate)
		}
	}

	// A bad key ends the queue, as a failed RDMA READ does.
	c = rwCommand(opWrite, 1, 0, 1)
	e.cid++
	c.setCID(e.cid)
	c.setKeyedSGL(0, 512, 0xdead)
	if r := q.run(c[:]); r.status != 0xffff || q.endedWith() == nil {
		t.Fatalf("a write from a bad key: %#x, queue ended: %v", r.status, q.endedWith())
	}
}

func TestTargetReadOnlyNamespace(t *testing.T) {
	ns, _ := MemoryNamespace(8192, 512)
	ns.ReadOnly = true
	e := newEngine(t, nil, &Subsystem{NQN: testNQN, Namespaces: []*TargetNamespace{ns}})
	q := e.ioQueue(1, e.enable(0))
	wantStatus(t, "write", e.cmd(q, rwCommand(opWrite, 1, 0, 1), 512, make([]byte, 512)), scNSWriteProtected|statusDNR)
	wantStatus(t, "write zeroes", e.cmd(q, rwCommand(opWriteZeroes, 1, 0, 1), 0, nil), scNSWriteProtected|statusDNR)
	wantStatus(t, "read", e.cmd(q, rwCommand(opRead, 1, 0, 1), 512, nil), 0)
}

func TestTargetDiscovery(t *testing.T) {
	ns, _ := MemoryNamespace(4096, 512)
	e := newEngine(t, nil,
		&Subsystem{NQN: "nqn.2024-01.io.goverbs:b", Namespaces: []*TargetNamespace{ns}},
		&Subsystem{NQN: "nqn.2024-01.io.goverbs:a", Namespaces: []*TargetNamespace{ns}},
		&Subsystem{NQN: "nqn.2024-01.io.goverbs:private", Namespaces: []*TargetNamespace{ns}, Hosts: []string{"nqn.2014-08.org.nvmexpress:uuid:someone"}})
	r := e.connect(e.admin, adminDepth, 0xffff, DiscoveryNQN, testHostNQN, 0)
	wantStatus(t, "connect", r, 0)
	wantStatus(t, "enable", e.cmd(e.admin, propertySet(propCC, ccIOSQES|ccIOCQES|ccEnable), 0, nil), 0)
	r = e.cmd(e.admin, identifyCommand(cnsController, 0), identifySize, nil)
	ci, _ := parseIdentifyController(r.out)
	if r.status != 0 || r.out[111] != 2 || ci.SubsystemNQN != DiscoveryNQN || ci.IOCommandCapsuleSize != 64 {
		t.Fatalf("identify: status %#x CNTRLTYPE %d %+v", r.status, r.out[111], ci)
	}
	wantStatus(t, "identify namespace", e.cmd(e.admin, identifyCommand(cnsNamespace, 1), identifySize, nil), scInvalidField|statusDNR)
	wantStatus(t, "SMART", e.cmd(e.admin, getLogPage(logSMART, 0, 512), 512, nil), scInvalidLogPage|statusDNR)
	wantStatus(t, "number of queues", e.cmd(e.admin, setNumQueues(1), 0, nil), scInvalidField|statusDNR)

	r = e.cmd(e.admin, getLogPage(logDiscovery, 0, 4096), 4096, nil)
	wantStatus(t, "discovery log", r, 0)
	if gen, n := binary.LittleEndian.Uint64(r.out), binary.LittleEndian.Uint64(r.out[8:]); gen != 1 || n != 3 {
		t.Fatalf("generation %d, %d records", gen, n)
	}
	var es []DiscoveryEntry
	for i := range 3 {
		es = append(es, parseDiscoveryEntry(r.out[1024*(i+1):][:1024]))
	}
	if es[0].SubsystemNQN != "nqn.2024-01.io.goverbs:a" || es[1].SubsystemNQN != "nqn.2024-01.io.goverbs:b" ||
		es[0].Subtype() != "nvme subsystem" || es[2].Subtype() != "current discovery subsystem" || es[2].SubsystemNQN != DiscoveryNQN {
		t.Fatalf("entries %+v", es)
	}
	for _, x := range es {
		if x.Transport() != "rdma" || x.Family() != "ipv4" || x.Address != "10.77.0.1" || x.ServiceID != "4420" ||
			x.ControllerID != 0xffff || x.AdminQueueSize != 32 || x.RDMAQP() != "connected" || x.RDMACM() != "rdma-cm" {
			t.Fatalf("entry %+v", x)
		}
	}
	// The host reads the header again at an offset of its own choosing.
	r = e.cmd(e.admin, getLogPage(logDiscovery, 1024, 1024), 1024, nil)
	if r.status != 0 || parseDiscoveryEntry(r.out).SubsystemNQN != "nqn.2024-01.io.goverbs:a" {
		t.Fatalf("log at 1024: %#x", r.status)
	}
	q := e.queue(1, 32)
	wantStatus(t, "an I/O queue to discovery", e.connect(q, 32, e.admin.s.ctrl.Load().id, DiscoveryNQN, testHostNQN, 0), scConnectInvalidParam|statusDNR)
}

func TestTargetSettings(t *testing.T) {
	ns, _ := MemoryNamespace(4096, 512)
	good := &Subsystem{NQN: testNQN, Namespaces: []*TargetNamespace{ns}}
	for _, c := range []struct {
		name string
		cfg  *TargetConfig
		subs []*Subsystem
	}{
		{"no subsystem", nil, nil},
		{"depth 1", &TargetConfig{QueueDepth: 1}, []*Subsystem{good}},
		{"depth 2000", &TargetConfig{QueueDepth: 2000}, []*Subsystem{good}},
		{"MaxIOSize 12 KiB", &TargetConfig{MaxIOSize: 12 << 10}, []*Subsystem{good}},
		{"MaxIOSize 2 MiB", &TargetConfig{MaxIOSize: 2 << 20}, []*Subsystem{good}},
		{"inline 100", &TargetConfig{InlineDataSize: 100}, []*Subsystem{good}},
		{"200 queues", &TargetConfig{MaxIOQueues: 200}, []*Subsystem{good}},
		{"nil subsystem", nil, []*Subsystem{nil}},
		{"empty NQN", nil, []*Subsystem{{}}},
		{"discovery NQN", nil, []*Subsystem{{NQN: DiscoveryNQN}}},
		{"twice", nil, []*Subsystem{good, good}},
		{"serial of 21", nil, []*Subsystem{{NQN: testNQN, Serial: "123456789012345678901"}}},
		{"nil namespace", nil, []*Subsystem{{NQN: testNQN, Namespaces: []*TargetNamespace{nil}}}},
		{"zero namespace", nil, []*Subsystem{{NQN: testNQN, Namespaces: []*TargetNamespace{{}}}}},
		{"NSID twice", nil, []*Subsystem{{NQN: testNQN, Namespaces: []*TargetNamespace{ns, {ID: 1, store: ns.store, wstore: ns.wstore, size: 512, blockSize: 512}}}}},
	} {
		if _, err := newTarget(c.cfg, c.subs); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := MemoryNamespace(4096, 768); err == nil {
		t.Error("768-byte blocks accepted")
	}
	if _, err := MemoryNamespace(100, 512); err == nil {
		t.Error("a namespace smaller than a block accepted")
	}
	if _, err := NewNamespace(nil, 4096, 512); err == nil {
		t.Error("a nil store accepted")
	}
	if _, err := FileNamespace("/nonexistent/file", 512); err == nil {
		t.Error("a missing file accepted")
	}
}

func TestTargetFileNamespace(t *testing.T) {
	path := t.TempDir() + "/ns"
	if err := writeFile(path, 10000); err != nil {
		t.Fatal(err)
	}
	ns, err := FileNamespace(path, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	if ns.Size() != 9216 || ns.BlockSize() != 1024 {
		t.Fatalf("size %d, blocks of %d", ns.Size(), ns.BlockSize())
	}
	e := newEngine(t, nil, &Subsystem{NQN: testNQN, Namespaces: []*TargetNamespace{ns}})
	q := e.ioQueue(1, e.enable(0))
	data := bytes.Repeat([]byte("goverbs!"), 256)
	c := rwCommand(opWrite, 1, 3, 2)
	c.dword(12, c.cdwForTest(12)|1<<30) // Force Unit Access
	wantStatus(t, "FUA write", e.cmd(q, c, 2048, data), 0)
	wantStatus(t, "flush", e.cmd(q, flushCommand(1), 0, nil), 0)
	got := make([]byte, 2048)
	if _, err := readFileAt(path, got, 3072); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file has %q..., %v", got[:16], err)
	}
	wantStatus(t, "write zeroes", e.cmd(q, rwCommand(opWriteZeroes, 1, 3, 1), 0, nil), 0)
	readFileAt(path, got, 3072)
	if !bytes.Equal(got[:1024], make([]byte, 1024)) || !bytes.Equal(got[1024:], data[1024:]) {
		t.Fatal("write zeroes on the file")
	}
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ns.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	wantStatus(t, "read from a closed file", e.cmd(q, rwCommand(opRead, 1, 0, 1), 1024, nil), scReadError)
	wantStatus(t, "write to a closed file", e.cmd(q, rwCommand(opWrite, 1, 0, 1), 1024, nil), scWriteFault)
}

func (c *command) cdwForTest(n int) uint32 { return binary.LittleEndian.Uint32(c[4*n:]) }

func writeFile(path string, size int) error { return os.WriteFile(path, make([]byte, size), 0o600) }

func readFileAt(path string, p []byte, off int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(p, off)
}

func TestTargetCloseNil(t *testing.T) {
	var tgt *Target
	if err := tgt.Close(); err != nil {
		t.Fatal(err)
	}
	var ns *TargetNamespace
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTargetCMRequest(t *testing.T) {
	req := func(recfmt, qid, hrq, hsq uint16) []byte {
		b := make([]byte, 32)
		binary.LittleEndian.PutUint16(b[0:], recfmt)
		binary.LittleEndian.PutUint16(b[2:], qid)
		binary.LittleEndian.PutUint16(b[4:], hrq)
		binary.LittleEndian.PutUint16(b[6:], hsq)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want uint16
	}{
		{"the host's admin queue", cmRequest(0, 32), 0},
		{"the host's I/O queue", cmRequest(4, 128), 0},
		{"the kernel's admin queue", req(0, 0, 32, 31), 0},
		{"7 bytes", req(0, 0, 32, 31)[:7], cmRejInvalidLen},
		{"record format 1", req(1, 0, 32, 31), cmRejInvalidRecfmt},
		{"queue 5 of 4", req(0, 5, 32, 31), cmRejInvalidQID},
		{"admin queue of 33", req(0, 0, 33, 32), cmRejInvalidHSQSize},
		{"I/O queue of 129", req(0, 1, 129, 128), cmRejInvalidHSQSize},
		{"no private data", make([]byte, 56), cmRejInvalidHRQSize},
	} {
		r, st := parseCMRequest(c.b, 4, 128)
		if st != c.want {
			t.Errorf("%s: status %d, want %d (%+v)", c.name, st, c.want, r)
		}
	}
	if r, _ := parseCMRequest(cmRequest(3, 17), 4, 128); r.qid != 3 || r.hrqsize != 17 || r.hsqsize != 16 {
		t.Fatalf("parsed %+v", r)
	}
	// The host's decoders read what the target encodes.
	if n, err := parseCMAccept(cmAccept(77)); err != nil || n != 77 {
		t.Fatalf("accept: %d %v", n, err)
	}
	if r, ok := cmRejectReason(cmReject(cmRejInvalidHSQSize)); !ok || r != "invalid host send queue size (status 4)" {
		t.Fatalf("reject: %q", r)
	}
	b := make([]byte, 16)
	putCQE(b, 0x1122334455667788, 5, 2, 0xbeef, scLBARange|statusDNR)
	c, err := parseCompletion(b)
	if err != nil || c.result != 0x1122334455667788 || c.sqHead != 5 || c.sqID != 2 || c.cid != 0xbeef || c.status != scLBARange|statusDNR {
		t.Fatalf("completion %+v %v", c, err)
	}
}
