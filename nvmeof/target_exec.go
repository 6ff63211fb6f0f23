package nvmeof

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The command engine: what a target does with a command capsule, apart
// from moving its data over RDMA (target_queue.go). A session is one
// queue's NVMe state; a request is one command.

// session is the NVMe side of one queue.
type session struct {
	t     *Target
	cm    cmQueueRequest // what the queue's connection request said
	local netip.AddrPort // the address the host reached, for the discovery log
	end   func(error)    // ends the queue's connection

	connectMu sync.Mutex
	gone      bool                        // under connectMu: closed ran, so a Connect still running must not join
	ctrl      atomic.Pointer[tController] // set by Connect
	noSQHD    atomic.Bool                 // SQ flow control disabled at Connect
}

// dataDir says which way a command's data goes.
type dataDir uint8

const (
	dirNone dataDir = iota
	dirIn           // host to controller: the target reads the host's memory
	dirOut          // controller to host
)

// request is one command in the engine's hands.
type request struct {
	sqe     sqe
	raw     []byte // the 64-byte entry
	capsule []byte // everything received: the entry and in-capsule data
	ctx     int    // the transport's handle for the command

	// set by begin: the data the command moves, and its handler
	dir  dataDir
	need int
	run  func(*request)
	// set by begin for the I/O commands, whose handlers are plain
	// functions of the request, so that a command allocates nothing
	ctrl *tController
	ns   *tNamespace
	rw   rwArgs
	// set by mapSGL
	inline []byte // in-capsule data, when the SGL points there
	keyed  bool   // the data is in the host's memory, behind sqe.sgl
	// invalidate: the host asked that its key be invalidated when the
	// command is done (keyed data with the Invalidate sub type): the
	// response goes as a SEND with Invalidate.
	invalidate bool
	// the data buffer run works on: the in-capsule bytes or a buffer of
	// need bytes the transport filled (dirIn) or sends (dirOut)
	data []byte

	status uint16
	result uint64
	out    int  // bytes of data to give the host before the response
	hold   bool // no response now (Async Event Request)
	drop   bool // no response ever: the controller ended and its queues end
}

func (r *request) fail(status uint16) { r.status = status | statusDNR }

// isWrite is the direction the opcode names (include/linux/nvme.h
// nvme_is_write): bit 0 of the opcode, or of a Fabrics command's type.
func (r *request) isWrite() bool {
	if r.sqe.opcode == opFabrics {
		return fabricsType(r.raw)&1 != 0
	}
	return r.sqe.opcode&1 != 0
}

// maxData is the most data one command may move on this queue: MDTS.
func (s *session) maxData() int { return s.t.set.maxIO }

// begin checks what every command must satisfy and picks the command's
// handler and data; it returns false when r is answered already (its
// status set).
func (s *session) begin(r *request) bool {
	// Fused commands are not offered; the data pointer must be an SGL
	// (PSDT 01b or 10b), as fabrics require (nvmet_req_init).
	if r.sqe.flags&3 != 0 || (r.sqe.flags>>6 != 1 && r.sqe.flags>>6 != 2) {
		r.fail(scInvalidField)
		return false
	}
	c := s.ctrl.Load()
	if c == nil {
		// An unconnected queue takes Connect only.
		if r.sqe.opcode != opFabrics || fabricsType(r.raw) != fctConnect {
			r.fail(scInvalidOpcode)
			return false
		}
		r.dir, r.need, r.run = dirIn, connectDataSize, s.connect
		return true
	}
	c.touch()
	switch {
	case r.sqe.opcode == opFabrics:
		s.beginFabrics(r, c)
	case s.cm.qid != 0:
		s.beginIO(r, c)
	case !s.needReady(r, c):
	case c.sub.discovery:
		s.beginDiscovery(r)
	default:
		s.beginAdmin(r, c)
	}
	if r.status == 0 && r.need > s.maxData() {
		// More than MDTS.
		r.fail(scInvalidField)
	}
	return r.status == 0 && !r.drop
}

func (s *session) beginFabrics(r *request, c *tController) {
	switch fabricsType(r.raw) {
	case fctConnect:
		// The queue is connected already.
		r.fail(scConnectCtrlBusy)
	case fctPropertyGet:
		if s.cm.qid != 0 {
			r.fail(scInvalidOpcode)
			return
		}
		r.run = func(r *request) { s.propertyGet(r, c) }
	case fctPropertySet:
		if s.cm.qid != 0 {
			r.fail(scInvalidOpcode)
			return
		}
		r.run = func(r *request) { s.propertySet(r, c) }
	default:
		r.fail(scInvalidOpcode)
	}
}

func (s *session) beginAdmin(r *request, c *tController) {
	switch r.sqe.opcode {
	case opIdentify:
		r.dir, r.need, r.run = dirOut, identifySize, func(r *request) { s.identify(r, c) }
	case opGetLogPage:
		a := parseGetLogPage(&r.sqe)
		if a.length > uint64(s.maxData()) {
			r.fail(scInvalidField)
			return
		}
		r.dir, r.need, r.run = dirOut, int(a.length), func(r *request) { s.getLogPage(r, c, a) }
	case opSetFeature:
		r.run = func(r *request) { s.setFeatures(r, c) }
	case opGetFeatures:
		if uint8(r.sqe.cdw[10]) == featHostID {
			r.dir, r.need = dirOut, 16
		}
		r.run = func(r *request) { s.getFeatures(r, c) }
	case opAsyncEvent:
		r.run = func(r *request) { s.asyncEvent(r, c) }
	case opKeepAlive:
		r.run = func(r *request) { s.keepAlive(r, c) }
	case opAbort:
		// The minimum the specification asks: nothing is aborted (dword
		// 0 bit 0 set), as the kernel's target answers.
		r.run = func(r *request) { r.result = 1 }
	default:
		r.fail(scInvalidOpcode)
	}
}

// beginDiscovery: a discovery controller takes Identify Controller, the
// discovery log, features, Async Event Request and Keep Alive (NVMe over
// Fabrics "Discovery Controller").
func (s *session) beginDiscovery(r *request) {
	c := s.ctrl.Load()
	switch r.sqe.opcode {
	case opIdentify:
		r.dir, r.need, r.run = dirOut, identifySize, func(r *request) {
			if cns := uint8(r.sqe.cdw[10]); cns != cnsController {
				r.fail(scInvalidField)
				return
			}
			s.identifyController(r, c)
		}
	case opGetLogPage:
		a := parseGetLogPage(&r.sqe)
		if a.length > uint64(s.maxData()) {
			r.fail(scInvalidField)
			return
		}
		r.dir, r.need, r.run = dirOut, int(a.length), func(r *request) {
			if a.lid != logDiscovery {
				r.fail(scInvalidLogPage)
				return
			}
			s.putLog(r, a, s.discoveryLogFor(c))
		}
	case opSetFeature:
		r.run = func(r *request) { s.setFeatures(r, c) }
	case opGetFeatures:
		r.run = func(r *request) { s.getFeatures(r, c) }
	case opAsyncEvent:
		r.run = func(r *request) { s.asyncEvent(r, c) }
	case opKeepAlive:
		r.run = func(r *request) { s.keepAlive(r, c) }
	default:
		r.fail(scInvalidOpcode)
	}
}

// needReady refuses r unless the controller is ready. A command that
// meets a controller that ended is dropped, not refused: its queue is
// ending, and the host is to see the controller lost rather than a
// command sequence error for a command it sent to a live one.
func (s *session) needReady(r *request, c *tController) bool {
	ok, dead := c.ready()
	switch {
	case dead:
		r.drop = true
	case !ok:
		r.fail(scCmdSeqError)
	}
	return ok
}

func (s *session) beginIO(r *request, c *tController) {
	if !s.needReady(r, c) {
		return
	}
	switch r.sqe.opcode {
	case opFlush:
		if r.sqe.nsid != nsidAll && c.sub.namespace(r.sqe.nsid) == nil {
			r.fail(scInvalidNS)
			return
		}
		r.ctrl, r.run = c, flush
	case opRead, opWrite, opWriteZeroes:
		ns := c.sub.namespace(r.sqe.nsid)
		if ns == nil {
			r.fail(scInvalidNS)
			return
		}
		a := parseRW(&r.sqe)
		if a.slba+uint64(a.blocks) > ns.ident.blocks || a.slba+uint64(a.blocks) < a.slba {
			r.fail(scLBARange)
			return
		}
		if r.sqe.opcode != opRead && ns.ident.readOnly {
			r.fail(scNSWriteProtected)
			return
		}
		switch r.sqe.opcode {
		case opRead:
			r.dir, r.need = dirOut, int(a.blocks)*ns.blockSize
		case opWrite:
			r.dir, r.need = dirIn, int(a.blocks)*ns.blockSize
		}
		r.ctrl, r.ns, r.rw, r.run = c, ns, a, readWrite
	default:
		r.fail(scInvalidOpcode)
	}
}

// mapSGL reads the command's data pointer (the kernel's target:
// drivers/nvme/target/rdma.c nvmet_rdma_map_sgl): in-capsule data (data
// block, offset sub type) on a write, or a keyed data block the target
// reaches with RDMA, invalidating its key or not; the length it gives must
// be the command's (nvmet_check_transfer_len). It returns false when r is
// answered. A keyed descriptor with the Invalidate sub type and data
// (the kernel's host sets it for every command it maps with a
// registration of its own: drivers/nvme/host/rdma.c nvme_rdma_map_sg_fr)
// asks for the key to be invalidated: the target then answers with a SEND
// with Invalidate naming it, as nvmet_rdma_map_sgl_keyed records
// (rsp->invalidate_rkey, NVMET_RDMA_REQ_INVALIDATE_RKEY, only when the
// length is not 0) and nvmet_rdma_queue_response sends
// (IB_WR_SEND_WITH_INV), and the host need not invalidate it itself.
func (s *session) mapSGL(r *request) bool {
	d := r.sqe.sgl
	length := int(d.length)
	switch d.typ >> 4 {
	case sglDataBlockOffset >> 4:
		if d.typ&0xf != sglDataBlockOffset&0xf || !r.isWrite() {
			r.fail(scInvalidField)
			return false
		}
		avail := uint64(len(r.capsule) - sqeSize)
		if d.addr > avail || uint64(d.length) > avail-d.addr {
			r.fail(scSGLInvalidOffset)
			return false
		}
		r.inline = r.capsule[sqeSize+int(d.addr):][:length]
	case sglKeyedAddress >> 4:
		if d.typ&0xf != sglKeyedAddress&0xf && d.typ != sglKeyedInvalidate {
			r.fail(scInvalidField)
			return false
		}
		r.keyed = length > 0
	default:
		r.fail(scSGLInvalidType)
		return false
	}
	if length != r.need {
		r.fail(scSGLInvalidData)
		return false
	}
	r.invalidate = r.keyed && d.typ == sglKeyedInvalidate
	return true
}

// discoveryKATO is the keep-alive timeout of a discovery controller whose
// host asked for none.
const discoveryKATO = 120 * time.Second

// connect is Fabrics Connect (NVMe over Fabrics "Connect Command and
// Response"; the kernel's target: drivers/nvme/target/fabrics-cmd.c): on
// the admin queue it makes a controller for the host (controller ID 0xFFFF
// asks for one); on an I/O queue it joins the controller the host names.
// A parameter refused is named in the response's dword 0.
func (s *session) connect(r *request) {
	s.connectMu.Lock()
	defer s.connectMu.Unlock()
	if s.gone {
		r.fail(scConnectCtrlBusy) // never sent: the queue has ended
		return
	}
	if s.ctrl.Load() != nil {
		r.fail(scConnectCtrlBusy)
		return
	}
	cc := parseConnectCmd(r.raw)
	ci, err := parseConnectData(r.data)
	switch {
	case err != nil:
		r.fail(scSGLInvalidData)
		return
	case cc.recfmt != 0:
		r.fail(scConnectFormat)
		return
	case cc.qid != s.cm.qid:
		// The queue's connection request named another queue.
		r.result = iattrSQE(connSQEOffQID)
		r.fail(scConnectInvalidParam)
		return
	case cc.sqsize == 0 || cc.sqsize > s.cm.hsqsize:
		// At least two entries, and no more than the RDMA queue takes.
		r.result = iattrSQE(connSQEOffSQSize)
		r.fail(scConnectInvalidParam)
		return
	}
	sub := s.t.subsystem(ci.subsysNQN)
	if sub == nil {
		r.result = iattrData(connOffSubsysNQN)
		r.fail(scConnectInvalidParam)
		return
	}
	if !sub.discovery && !sub.allows(ci.hostNQN) {
		r.result = iattrData(connOffHostNQN)
		r.fail(scConnectInvalidHost)
		return
	}
	var c *tController
	if cc.qid == 0 {
		if ci.cntlid != 0xffff {
			r.result = iattrData(connOffCntlid)
			r.fail(scConnectInvalidParam)
			return
		}
		var st uint16
		kato := time.Duration(cc.kato) * time.Millisecond
		if sub.discovery && kato == 0 {
			// As the kernel's target, which ends stale discovery sessions
			// (drivers/nvme/target/core.c nvmet_alloc_ctrl,
			// NVMET_DISC_KATO_MS).
			kato = discoveryKATO
		}
		if c, st = s.t.newController(sub, ci, kato, s); c == nil {
			r.fail(st)
			return
		}
		r.result = uint64(c.id)
	} else {
		if c = sub.controller(ci.cntlid, ci.hostNQN); c == nil {
			r.result = iattrData(connOffCntlid)
			r.fail(scConnectInvalidParam)
			return
		}
		if sub.discovery || int(cc.qid) > s.t.set.maxQueues {
			r.result = iattrSQE(connSQEOffQID)
			r.fail(scConnectInvalidParam)
			return
		}
		if st := c.addQueue(cc.qid, s); st != 0 {
			r.fail(st)
			return
		}
		c.touch()
	}
	if cc.cattr&connectCattrNoSQFlow != 0 {
		s.noSQHD.Store(true)
	}
	s.ctrl.Store(c)
}

// closed tells the controller its queue ended: an admin queue, or a queue
// ended by an error rather than the host's disconnect, ends the controller
// (the kernel's target: nvmet_rdma_error_comp makes it fatal).
func (s *session) closed(why error, hostDisconnected bool) {
	// After a Connect that is running (it holds connectMu), before any
	// later one: either its controller is seen here, or it sees gone.
	s.connectMu.Lock()
	s.gone = true
	s.connectMu.Unlock()
	c := s.ctrl.Load()
	if c == nil {
		return
	}
	if s.cm.qid == 0 || !hostDisconnected {
		s.t.deleteController(c, why)
		return
	}
	c.removeQueue(s.cm.qid, s)
}

// Controller properties (NVMe over Fabrics "Property Definitions"): CAP is
// 8 bytes, VS, CC and CSTS 4; the host may set CC only.
func (s *session) propertyGet(r *request, c *tController) {
	p := parsePropertyCmd(r.raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case p.size8 && p.offset == propCAP:
		r.result = s.t.cap
	case !p.size8 && p.offset == propVS:
		r.result = targetVersion
	case !p.size8 && p.offset == propCC:
		r.result = uint64(c.cc)
	case !p.size8 && p.offset == propCSTS:
		r.result = uint64(c.csts)
	default:
		r.fail(scInvalidField)
	}
}

func (s *session) propertySet(r *request, c *tController) {
	p := parsePropertyCmd(r.raw)
	if p.size8 || p.offset != propCC {
		r.fail(scInvalidField)
		return
	}
	c.updateCC(uint32(p.value))
}

func (s *session) identifyController(r *request, c *tController) {
	ioccsz := sqeSize
	if !c.sub.discovery {
		ioccsz += s.t.set.inline
	}
	identifyController(r.data, ctrlIdentity{
		serial: c.sub.serial, model: c.sub.model, firmware: c.sub.firmware, nqn: c.sub.nqn,
		cntlid: c.id, discovery: c.sub.discovery, mdts: s.t.set.mdts,
		maxcmd: uint16(s.t.set.depth), nn: c.sub.maxNSID, ioccsz: ioccsz,
		writeZeroes: !c.sub.discovery,
	})
	r.out = identifySize
}

// identify answers the CNS values the kernel's host asks for (Identify
// Controller, Namespace, the active namespace list, the namespace
// identification descriptors from NVMe 1.3 on, and the NVM command set's
// Identify Controller, which has no limits to report here), as the
// kernel's target does (drivers/nvme/target/admin-cmd.c
// nvmet_execute_identify).
func (s *session) identify(r *request, c *tController) {
	cns, csi := uint8(r.sqe.cdw[10]), uint8(r.sqe.cdw[11]>>24)
	nsid := r.sqe.nsid
	switch cns {
	case cnsController:
		s.identifyController(r, c)
		return
	case cnsNamespace:
		if nsid == nsidAll {
			r.fail(scInvalidNS)
			return
		}
		if ns := c.sub.namespace(nsid); ns != nil {
			identifyNamespace(r.data, ns.ident)
		} else {
			// An ID with no namespace gives zeros (not allocated).
			clear(r.data)
		}
	case cnsActiveNSList:
		if nsid >= 0xfffffffe {
			r.fail(scInvalidNS)
			return
		}
		clear(r.data)
		i := 0
		for _, ns := range c.sub.ns {
			if ns.id > nsid && i < identifySize/4 {
				binary.LittleEndian.PutUint32(r.data[4*i:], ns.id)
				i++
			}
		}
	case cnsNSDescList:
		ns := c.sub.namespace(nsid)
		if ns == nil {
			r.fail(scInvalidNS)
			return
		}
		nsDescriptors(r.data, ns.ident)
	case cnsCSCtrl:
		if csi != 0 {
			r.fail(scInvalidField)
			return
		}
		clear(r.data)
	default:
		r.fail(scInvalidField)
		return
	}
	r.out = identifySize
}

// putLog answers Get Log Page with the bytes of page from the offset
// asked, zeros past its end.
func (s *session) putLog(r *request, a getLogPageArgs, page []byte) {
	if a.offset%4 != 0 || a.offset > uint64(len(page)) {
		r.fail(scInvalidField)
		return
	}
	n := copy(r.data, page[a.offset:])
	clear(r.data[n:])
	r.out = len(r.data)
}

// getLogPage serves the logs the kernel's host and nvme-cli read:
// Error Information, SMART / Health Information, Firmware Slot, Changed
// Namespace List and Commands Supported and Effects.
func (s *session) getLogPage(r *request, c *tController, a getLogPageArgs) {
	var page []byte
	switch a.lid {
	case logError:
		page = make([]byte, errorLogEntries*64)
		c.mu.Lock()
		for i := range min(c.errNext, errorLogEntries) {
			// newest first
			e := c.errs[(c.errNext-1-i)%errorLogEntries]
			putErrorEntry(page[64*i:], e)
		}
		c.mu.Unlock()
	case logSMART:
		if n := r.sqe.nsid; n != 0 && n != nsidAll && c.sub.namespace(n) == nil {
			r.fail(scInvalidNS)
			return
		}
		page = s.smartLog(c)
	case logFirmwareSlot:
		page = make([]byte, 512)
		page[0] = 1 // AFI: slot 1 active
		putASCII(page[8:16], c.sub.firmware)
	case logChangedNS:
		// No namespace attribute has changed: the list is empty.
		page = make([]byte, 4096)
	case logCmdEffects:
		if a.csi != 0 {
			r.fail(scInvalidField)
			return
		}
		page = cmdEffectsLog()
	default:
		r.fail(scInvalidLogPage)
		return
	}
	s.putLog(r, a, page)
}

func (s *session) smartLog(c *tController) []byte {
	b := make([]byte, 512)
	b[3] = 100 // available spare, %
	b[4] = 10  // available spare threshold
	// Data units are thousands of 512-byte units, rounded up.
	units := func(n uint64) uint64 { return (n/512 + 999) / 1000 }
	binary.LittleEndian.PutUint64(b[32:], units(c.sub.readBytes.Load()))
	binary.LittleEndian.PutUint64(b[48:], units(c.sub.writeBytes.Load()))
	binary.LittleEndian.PutUint64(b[64:], c.sub.readCmds.Load())
	binary.LittleEndian.PutUint64(b[80:], c.sub.writeCmds.Load())
	c.mu.Lock()
	binary.LittleEndian.PutUint64(b[176:], c.errNext)
	c.mu.Unlock()
	return b
}

// cmdEffectsLog marks the commands this controller takes (CSUPP) and
// those that change the namespace's contents (LBCC).
func cmdEffectsLog() []byte {
	b := make([]byte, 4096)
	const csupp, lbcc = 1 << 0, 1 << 1
	for _, op := range []uint8{opGetLogPage, opIdentify, opAbort, opSetFeature, opGetFeatures, opAsyncEvent, opKeepAlive} {
		binary.LittleEndian.PutUint32(b[4*int(op):], csupp)
	}
	io := b[1024:]
	binary.LittleEndian.PutUint32(io[4*opFlush:], csupp)
	binary.LittleEndian.PutUint32(io[4*opRead:], csupp)
	binary.LittleEndian.PutUint32(io[4*opWrite:], csupp|lbcc)
	binary.LittleEndian.PutUint32(io[4*opWriteZeroes:], csupp|lbcc)
	return b
}

// discoveryLogFor lists the subsystems the host may use, then this
// discovery subsystem as the current one (subtype 3), all at the address
// the host reached.
func (s *session) discoveryLogFor(c *tController) []byte {
	var recs []discoveryRecord
	for _, sub := range sortedSubs(s.t) {
		if sub.allows(c.hostNQN) {
			recs = append(recs, discoveryRecord{subtype: 2, nqn: sub.nqn, addr: s.local, portID: 1})
		}
	}
	recs = append(recs, discoveryRecord{subtype: 3, nqn: DiscoveryNQN, addr: s.local, portID: 1})
	// The set of subsystems never changes while the Target runs: one
	// generation.
	return discoveryLog(1, recs)
}

func sortedSubs(t *Target) []*tSubsystem {
	out := subsOf(t)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].nqn < out[j-1].nqn; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// setFeatures takes the features the kernel's host sets: the number of
// queues, the asynchronous events to report and the keep-alive timeout.
// Nothing is saveable.
func (s *session) setFeatures(r *request, c *tController) {
	fid, cdw11 := uint8(r.sqe.cdw[10]), r.sqe.cdw[11]
	if r.sqe.cdw[10]>>31 != 0 {
		r.fail(scFeatureNotSaveable)
		return
	}
	switch {
	case fid == featNumQueues && !c.sub.discovery:
		nsq, ncq := cdw11&0xffff, cdw11>>16
		if nsq == 0xffff || ncq == 0xffff {
			r.fail(scInvalidField)
			return
		}
		// Both counts are 0-based; the host gets what it asked for, up
		// to MaxIOQueues, and may connect that many.
		n := min(max(nsq, ncq)+1, uint32(s.t.set.maxQueues))
		r.result = uint64(n-1) | uint64(n-1)<<16
	case fid == featAsyncEvent:
		if cdw11&^s.aenSupported(c) != 0 {
			r.fail(scInvalidField)
			return
		}
		c.mu.Lock()
		c.aenCfg = cdw11
		c.mu.Unlock()
		r.result = uint64(cdw11)
	case fid == featKATO:
		c.setKATO(time.Duration(cdw11) * time.Millisecond)
	case fid == featHostID:
		// The host identifier came with Connect and does not change.
		r.fail(scCmdSeqError)
	default:
		r.fail(scInvalidField)
	}
}

func (s *session) aenSupported(c *tController) uint32 {
	if c.sub.discovery {
		return 0
	}
	return oaesNSAttr
}

func (s *session) getFeatures(r *request, c *tController) {
	fid := uint8(r.sqe.cdw[10])
	sel := r.sqe.cdw[10] >> 8 & 7
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case fid == featNumQueues && !c.sub.discovery:
		n := uint64(s.t.set.maxQueues - 1)
		r.result = n | n<<16
	case fid == featAsyncEvent:
		r.result = uint64(c.aenCfg)
	case fid == featKATO:
		r.result = uint64(c.kato / time.Millisecond)
	case fid == featVolatileWC && !c.sub.discovery:
		r.result = 1
	case fid == featHostID && !c.sub.discovery:
		if r.sqe.cdw[11]&1 == 0 {
			// Only the 128-bit host identifier is kept.
			r.fail(scInvalidField)
			return
		}
		copy(r.data, c.hostID[:])
		r.out = 16
	default:
		r.fail(scInvalidField)
		return
	}
	if sel == 3 {
		// Supported capabilities: the ones set here change, none is
		// saveable or per namespace.
		r.result = 0
		if fid == featAsyncEvent || fid == featKATO {
			r.result = 1 << 2
		}
	}
}

// asyncEvent holds the request until an event comes (none is ever
// reported here: namespaces do not change) or the controller ends, as the
// kernel's target holds them, up to AERL + 1.
func (s *session) asyncEvent(r *request, c *tController) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aers >= aerLimit {
		r.fail(scAsyncLimit)
		return
	}
	c.aers++
	r.hold = true
}

func (s *session) keepAlive(r *request, c *tController) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kato == 0 {
		// No keep-alive timeout was given (nvmet_execute_keep_alive).
		r.fail(scKATOInvalid)
	}
}

func flush(r *request) {
	c := r.ctrl
	var err error
	if r.sqe.nsid == nsidAll {
		for _, ns := range c.sub.ns {
			if e := ns.sync(); e != nil && err == nil {
				err = e
			}
		}
	} else {
		err = c.sub.namespace(r.sqe.nsid).sync()
	}
	if err != nil {
		r.status = scWriteFault
	}
}

func readWrite(r *request) {
	c, ns, a := r.ctrl, r.ns, r.rw
	off := int64(a.slba) * int64(ns.blockSize)
	n := int64(a.blocks) * int64(ns.blockSize)
	switch r.sqe.opcode {
	case opRead:
		// io.ReaderAt may return io.EOF with every byte at the end of
		// its input.
		if m, err := ns.store.ReadAt(r.data, off); err != nil && !(err == io.EOF && m == len(r.data)) {
			r.status = scReadError
			return
		}
		c.sub.readCmds.Add(1)
		c.sub.readBytes.Add(uint64(n))
		r.out = len(r.data)
	case opWrite:
		_, err := ns.wstore.WriteAt(r.data, off)
		if err == nil && a.fua {
			// Force Unit Access: durable before the response.
			err = ns.sync()
		}
		if err != nil {
			r.status = writeStatus(err)
			return
		}
		c.sub.writeCmds.Add(1)
		c.sub.writeBytes.Add(uint64(n))
	case opWriteZeroes:
		err := ns.zero(off, n)
		if err == nil && a.fua {
			err = ns.sync()
		}
		if err != nil {
			r.status = writeStatus(err)
		}
	}
}

// writeStatus is the status of a failed write: capacity exceeded when the
// store is full, a write fault otherwise.
func writeStatus(err error) uint16 {
	if errors.Is(err, syscall.ENOSPC) {
		return scCapacityExceeded
	}
	return scWriteFault
}

// logFailure keeps a command that failed in the controller's Error
// Information log.
func (s *session) logFailure(r *request) {
	c := s.ctrl.Load()
	if c == nil || r.status == 0 {
		return
	}
	e := errorEntry{sqid: s.cm.qid, cid: r.sqe.cid, status: r.status, nsid: r.sqe.nsid}
	switch r.sqe.opcode {
	case opRead, opWrite, opWriteZeroes:
		if s.cm.qid != 0 {
			e.lba = parseRW(&r.sqe).slba
		}
	}
	c.logError(e)
}

// dataPath is how a transport gets a command's data buffer and the host's
// data into it.
type dataPath interface {
	// buffer returns a buffer of at least r.need bytes for r, or false
	// when the queue ended meanwhile.
	buffer(r *request) ([]byte, bool)
	// fetch fills r.data from the host's memory behind r.sqe.sgl, or
	// returns false when that failed and the queue ends.
	fetch(r *request) bool
}

// execute runs one command through the engine: its checks, its data
// (in-capsule, or moved by dp), its handler. It returns false when the
// queue ended on the way and nothing is to be answered.
func (s *session) execute(r *request, dp dataPath) bool {
	if s.begin(r) && s.mapSGL(r) {
		switch {
		case r.inline != nil:
			r.data = r.inline
		case r.keyed:
			buf, ok := dp.buffer(r)
			if !ok {
				return false
			}
			r.data = buf[:r.need]
			if r.dir == dirIn && !dp.fetch(r) {
				return false
			}
		}
		r.run(r)
	}
	if r.drop {
		return false
	}
	s.logFailure(r)
	return true
}
