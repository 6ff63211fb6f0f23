package nvmeof

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
)

// The target's side of the wire: decoding command capsules, the Connect
// data and the RDMA CM request, and encoding completions, the CM reply and
// reject, and the data structures the admin commands return. Layouts: NVMe
// base specification 2.0 ("Submission Queue Entry", "Completion Queue
// Entry", "Identify", "Get Log Page"), NVMe over Fabrics 1.1 ("Connect",
// "Property Get", "Discovery Log Page") and the RDMA transport binding
// ("RDMA_CM_REQUEST" and the rest); the kernel has the same structures in
// include/linux/nvme.h and include/linux/nvme-rdma.h.

// Status codes a target answers with: SCT << 8 | SC, the status field of a
// completion without its phase bit (include/linux/nvme.h NVME_SC_*).
const (
	scSuccess             = 0x000
	scInvalidOpcode       = 0x001
	scInvalidField        = 0x002
	scInternal            = 0x006
	scInvalidNS           = 0x00b
	scCmdSeqError         = 0x00c
	scSGLInvalidData      = 0x00f // data SGL length invalid
	scSGLInvalidType      = 0x011
	scSGLInvalidOffset    = 0x016
	scKATOInvalid         = 0x01a
	scNSWriteProtected    = 0x020
	scLBARange            = 0x080
	scCapacityExceeded    = 0x081
	scAsyncLimit          = 0x105
	scInvalidLogPage      = 0x109
	scFeatureNotSaveable  = 0x10d
	scConnectFormat       = 0x180
	scConnectCtrlBusy     = 0x181
	scConnectInvalidParam = 0x182
	scConnectInvalidHost  = 0x184
	scWriteFault          = 0x280
	scReadError           = 0x281

	// statusDNR is Do Not Retry: the same command fails again.
	statusDNR = 1 << 14
)

// More opcodes, Get Log Page identifiers and features the target serves,
// beyond the host's (wire.go).
const (
	opGetFeatures = 0x0a
	opAbort       = 0x08
	opAsyncEvent  = 0x0c

	logError        = 0x01
	logSMART        = 0x02
	logFirmwareSlot = 0x03
	logChangedNS    = 0x04
	logCmdEffects   = 0x05

	cnsNSDescList = 0x03
	cnsCSCtrl     = 0x06 // I/O command set specific Identify Controller

	featVolatileWC = 0x06
	featAsyncEvent = 0x0b
	featKATO       = 0x0f
	featHostID     = 0x81

	nsidAll = 0xffffffff
)

// sqe is a decoded submission queue entry: the fields every command has.
// Dwords 10 to 15 are cdw[10] to cdw[15].
type sqe struct {
	opcode uint8
	flags  uint8
	cid    uint16
	nsid   uint32
	sgl    sglDesc
	cdw    [16]uint32
}

// sglDesc is the data pointer as an SGL descriptor (NVMe base
// specification "SGL Descriptor"): a keyed one has a 24-bit length and a
// key, the others a 32-bit length.
type sglDesc struct {
	addr   uint64
	length uint32
	key    uint32
	typ    uint8 // descriptor type << 4 | sub type
}

func parseSGL(d []byte) sglDesc {
	s := sglDesc{addr: binary.LittleEndian.Uint64(d), typ: d[15]}
	if s.typ>>4 == sglKeyedAddress>>4 {
		s.length = uint32(d[8]) | uint32(d[9])<<8 | uint32(d[10])<<16
		s.key = binary.LittleEndian.Uint32(d[11:])
	} else {
		s.length = binary.LittleEndian.Uint32(d[8:])
	}
	return s
}

// parseSQE decodes the first 64 bytes of a command capsule.
func parseSQE(b []byte) (sqe, error) {
	if len(b) < sqeSize {
		return sqe{}, fmt.Errorf("%w: a command capsule of %d bytes (a submission queue entry has %d)", ErrProtocol, len(b), sqeSize)
	}
	s := sqe{
		opcode: b[0],
		flags:  b[1],
		cid:    binary.LittleEndian.Uint16(b[2:]),
		nsid:   binary.LittleEndian.Uint32(b[4:]),
		sgl:    parseSGL(b[24:40]),
	}
	for i := 10; i <= 15; i++ {
		s.cdw[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return s, nil
}

// Fabrics command fields (NVMe over Fabrics "Fabrics Command"), by byte
// offset in the entry: the command type, and Connect's and the property
// commands' own fields.
func fabricsType(b []byte) uint8 { return b[4] }

type connectCmd struct {
	recfmt uint16
	qid    uint16
	sqsize uint16 // 0-based
	cattr  uint8
	kato   uint32 // milliseconds
}

func parseConnectCmd(b []byte) connectCmd {
	return connectCmd{
		recfmt: binary.LittleEndian.Uint16(b[40:]),
		qid:    binary.LittleEndian.Uint16(b[42:]),
		sqsize: binary.LittleEndian.Uint16(b[44:]),
		cattr:  b[46],
		kato:   binary.LittleEndian.Uint32(b[48:]),
	}
}

// connectCattrNoSQFlow is Connect's "disable SQ flow control" attribute:
// the controller reports 0xFFFF as SQ head (NVME_CONNECT_DISABLE_SQFLOW).
const connectCattrNoSQFlow = 1 << 2

type propertyCmd struct {
	size8  bool // attrib bit 0: an 8-byte property
	offset uint32
	value  uint64
}

func parsePropertyCmd(b []byte) propertyCmd {
	return propertyCmd{
		size8:  b[40]&1 != 0,
		offset: binary.LittleEndian.Uint32(b[44:]),
		value:  binary.LittleEndian.Uint64(b[48:]),
	}
}

// connectInfo is the Connect command's data (struct nvmf_connect_data).
type connectInfo struct {
	hostID    [16]byte
	cntlid    uint16
	subsysNQN string
	hostNQN   string
}

// parseConnectData reads the 1024 bytes of Connect data; an NQN ends at
// its first NUL byte or at the end of its 256-byte field.
func parseConnectData(b []byte) (connectInfo, error) {
	if len(b) < connectDataSize {
		return connectInfo{}, fmt.Errorf("%w: connect data of %d bytes (%d expected)", ErrProtocol, len(b), connectDataSize)
	}
	var ci connectInfo
	copy(ci.hostID[:], b[0:16])
	ci.cntlid = binary.LittleEndian.Uint16(b[16:])
	ci.subsysNQN = cString(b[256:512])
	ci.hostNQN = cString(b[512:768])
	return ci, nil
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Connect's response, when it refuses a parameter, names it in dword 0
// (NVMe over Fabrics "Connect Response", IATTR and IPO): bit 16 set points
// into the Connect data, clear into the command.
func iattrData(off int) uint64 { return 1<<16 | uint64(off) }
func iattrSQE(off int) uint64  { return uint64(off) }

// Offsets of the Connect data and command fields named by iattr*.
const (
	connOffCntlid    = 16
	connOffSubsysNQN = 256
	connOffHostNQN   = 512
	connSQEOffQID    = 42
	connSQEOffSQSize = 44
)

// The RDMA CM private data of a queue's request as the target reads it
// (struct nvme_rdma_cm_req), and the statuses of its reject (enum
// nvme_rdma_cm_status).
type cmQueueRequest struct {
	qid     uint16
	hrqsize uint16 // responses the host can receive
	hsqsize uint16 // commands it may send, 0-based
	cntlid  uint16
}

const (
	cmRejInvalidLen     = 1
	cmRejInvalidRecfmt  = 2
	cmRejInvalidQID     = 3
	cmRejInvalidHSQSize = 4
	cmRejInvalidHRQSize = 5
	cmRejNoResources    = 6
)

// parseCMRequest checks a queue's connection request against the most
// I/O queues and the I/O queue depth the target takes; a request it
// refuses gives the reject status to answer with. The admin queue has at
// most 32 entries (NVME_AQ_DEPTH; the kernel's target rejects more,
// drivers/nvme/target/rdma.c nvmet_rdma_parse_cm_connect_req).
func parseCMRequest(b []byte, maxQID, maxDepth int) (cmQueueRequest, uint16) {
	if len(b) < 8 {
		return cmQueueRequest{}, cmRejInvalidLen
	}
	if binary.LittleEndian.Uint16(b) != 0 {
		return cmQueueRequest{}, cmRejInvalidRecfmt
	}
	r := cmQueueRequest{
		qid:     binary.LittleEndian.Uint16(b[2:]),
		hrqsize: binary.LittleEndian.Uint16(b[4:]),
		hsqsize: binary.LittleEndian.Uint16(b[6:]),
	}
	if len(b) >= 10 {
		r.cntlid = binary.LittleEndian.Uint16(b[8:])
	}
	depth := maxDepth
	if r.qid == 0 {
		depth = adminDepth
	}
	switch {
	case int(r.qid) > maxQID:
		return r, cmRejInvalidQID
	case int(r.hsqsize)+1 > depth:
		return r, cmRejInvalidHSQSize
	case r.hrqsize == 0:
		// A request with no private data reads as zeros: no receive
		// queue at all.
		return r, cmRejInvalidHRQSize
	}
	return r, 0
}

// cmAccept is the private data of the accept: record format 0 and crqsize,
// the commands the target takes at once (its receive queue).
func cmAccept(crqsize int) []byte {
	b := make([]byte, cmRepSize)
	binary.LittleEndian.PutUint16(b[2:], uint16(crqsize))
	return b
}

// cmReject is the private data of a reject (struct nvme_rdma_cm_rej).
func cmReject(status uint16) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint16(b[2:], status)
	return b
}

// putCQE writes a completion queue entry: the status field goes in bits
// 15:1 of the last word, bit 0 being the phase tag, which fabrics do not
// use.
func putCQE(b []byte, result uint64, sqhd, sqid, cid, status uint16) {
	binary.LittleEndian.PutUint64(b[0:], result)
	binary.LittleEndian.PutUint16(b[8:], sqhd)
	binary.LittleEndian.PutUint16(b[10:], sqid)
	binary.LittleEndian.PutUint16(b[12:], cid)
	binary.LittleEndian.PutUint16(b[14:], status<<1)
}

// putASCII fills a fixed-size text field, padded with spaces as the
// Identify strings are.
func putASCII(dst []byte, s string) {
	n := copy(dst, s)
	for i := n; i < len(dst); i++ {
		dst[i] = ' '
	}
}

// ctrlIdentity is what Identify Controller reports of a controller.
type ctrlIdentity struct {
	serial, model, firmware string
	nqn                     string
	cntlid                  uint16
	discovery               bool
	mdts                    uint8
	maxcmd                  uint16
	nn                      uint32
	ioccsz                  int // bytes: 64 + in-capsule data
	writeZeroes             bool
}

// Identify Controller fields (NVMe base specification "Identify Controller
// Data Structure"; struct nvme_id_ctrl), and the values this target gives.
const (
	targetVersion = 0x010300 // NVMe 1.3: Identify CNS 03h is there (the kernel's host asks for it from 1.3 on)

	ctrattHostID128 = 1 << 0 // 128-bit host identifier
	ctrattTBKAS     = 1 << 6 // traffic based keep alive: any command restarts the timer

	oaesNSAttr = 1 << 8 // namespace attribute notices

	lpaCmdEffects = 1 << 1
	lpaExtData    = 1 << 2 // Get Log Page's NUMDU and offset

	sglsSupported = 1 << 0
	sglsKeyed     = 1 << 2
	sglsOffset    = 1 << 20 // in-capsule data at an offset (SGL data block, offset sub type)

	aerLimit = 4 // AERL + 1: Async Event Requests held at once

	// kasUnits is KAS: the keep-alive timer's granularity, in 100 ms.
	kasUnits = 1
)

func identifyController(b []byte, id ctrlIdentity) {
	clear(b[:identifySize])
	putASCII(b[4:24], id.serial)
	putASCII(b[24:64], id.model)
	putASCII(b[64:72], id.firmware)
	b[72] = 6 // RAB
	b[76] = 1 << 1
	b[77] = id.mdts
	binary.LittleEndian.PutUint16(b[78:], id.cntlid)
	binary.LittleEndian.PutUint32(b[80:], targetVersion)
	if id.discovery {
		b[111] = 2 // CNTRLTYPE: discovery controller
	} else {
		b[111] = 1 // I/O controller
		binary.LittleEndian.PutUint32(b[92:], oaesNSAttr)
	}
	binary.LittleEndian.PutUint32(b[96:], ctrattHostID128|ctrattTBKAS)
	b[258] = 3            // ACL: 4 aborts
	b[259] = aerLimit - 1 // AERL
	b[260] = 1<<0 | 1<<1  // FRMW: slot 1 read-only, one slot
	b[261] = lpaExtData
	if !id.discovery {
		// Only an I/O controller has the Commands Supported and Effects
		// log (the kernel's host reads it when LPA says so).
		b[261] |= lpaCmdEffects
	}
	b[262] = errorLogEntries - 1 // ELPE
	binary.LittleEndian.PutUint16(b[320:], kasUnits)
	b[512] = 6<<4 | 6 // SQES: 64 bytes
	b[513] = 4<<4 | 4 // CQES: 16 bytes
	binary.LittleEndian.PutUint16(b[514:], id.maxcmd)
	binary.LittleEndian.PutUint32(b[516:], id.nn)
	if id.writeZeroes {
		binary.LittleEndian.PutUint16(b[520:], 1<<3) // ONCS: Write Zeroes
	}
	if !id.discovery {
		b[525] = 1 // VWC: a volatile write cache; Flush makes writes durable
	}
	sgls := uint32(sglsSupported | sglsKeyed)
	if id.ioccsz > sqeSize {
		sgls |= sglsOffset
	}
	binary.LittleEndian.PutUint32(b[536:], sgls)
	copy(b[768:1024], id.nqn)
	binary.LittleEndian.PutUint32(b[1792:], uint32(id.ioccsz/16))
	binary.LittleEndian.PutUint32(b[1796:], cqeSize/16) // IORCSZ
	// ICDOFF 0; FCATT 0: the dynamic controller model
	b[1803] = 1 // MSDBD: one SGL data block descriptor
}

// nsIdentity is what Identify Namespace and the descriptor list say of a
// namespace.
type nsIdentity struct {
	blocks    uint64
	blockSize int
	readOnly  bool
	nguid     [16]byte
	uuid      [16]byte
}

func identifyNamespace(b []byte, ns nsIdentity) {
	clear(b[:identifySize])
	binary.LittleEndian.PutUint64(b[0:], ns.blocks)  // NSZE
	binary.LittleEndian.PutUint64(b[8:], ns.blocks)  // NCAP
	binary.LittleEndian.PutUint64(b[16:], ns.blocks) // NUSE
	// NLBAF 0 (one format), FLBAS 0 (format 0, no metadata)
	b[30] = 1 // NMIC: may be shared by several controllers
	if ns.readOnly {
		b[99] = 1 // NSATTR: write protected
	}
	copy(b[104:120], ns.nguid[:])
	b[128+2] = uint8(log2(ns.blockSize)) // LBAF0.LBADS
}

// Namespace identifier descriptor types (NIDT).
const (
	nidtNGUID = 2
	nidtUUID  = 3
	nidtCSI   = 4
)

func nsDescriptors(b []byte, ns nsIdentity) {
	clear(b[:identifySize])
	off := 0
	put := func(typ uint8, id []byte) {
		b[off], b[off+1] = typ, uint8(len(id))
		copy(b[off+4:], id)
		off += 4 + len(id)
	}
	put(nidtNGUID, ns.nguid[:])
	put(nidtUUID, ns.uuid[:])
	put(nidtCSI, []byte{0}) // the NVM command set
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// discoveryRecord is one entry of the discovery log page this target
// writes.
type discoveryRecord struct {
	subtype uint8 // 2: NVM subsystem, 3: the current discovery subsystem
	nqn     string
	addr    netip.AddrPort
	portID  uint16
}

// discoveryLog builds the whole log: the header (generation counter,
// number of records, record format 0) and 1024 bytes per record
// (struct nvmf_disc_rsp_page_hdr and _entry).
func discoveryLog(gen uint64, recs []discoveryRecord) []byte {
	b := make([]byte, discoveryHdrSize+len(recs)*discoveryEntrySize)
	binary.LittleEndian.PutUint64(b[0:], gen)
	binary.LittleEndian.PutUint64(b[8:], uint64(len(recs)))
	for i, r := range recs {
		e := b[discoveryHdrSize+i*discoveryEntrySize:][:discoveryEntrySize]
		e[0] = 1 // TRTYPE: RDMA
		e[1] = 1 // ADRFAM: IPv4
		if !r.addr.Addr().Unmap().Is4() {
			e[1] = 2
		}
		e[2] = r.subtype
		e[3] = 0 // TREQ: not specified
		binary.LittleEndian.PutUint16(e[4:], r.portID)
		binary.LittleEndian.PutUint16(e[6:], 0xffff) // CNTLID: dynamic controllers
		binary.LittleEndian.PutUint16(e[8:], adminDepth)
		copy(e[32:64], strconv.Itoa(int(r.addr.Port())))
		copy(e[256:512], r.nqn)
		copy(e[512:768], r.addr.Addr().Unmap().String())
		e[768] = 1 // RDMA QP type: reliable connected
		e[769] = 1 // RDMA provider type: not specified
		e[770] = 1 // RDMA CM service: RDMA_IP_CM
	}
	return b
}

// getLogPageArgs are Get Log Page's fields: log identifier, log specific
// field, the byte count (NUMD, 0-based, in dwords) and the offset.
type getLogPageArgs struct {
	lid    uint8
	lsp    uint8
	length uint64
	offset uint64
	csi    uint8
}

func parseGetLogPage(s *sqe) getLogPageArgs {
	numd := uint64(s.cdw[10]>>16) | uint64(s.cdw[11]&0xffff)<<16
	return getLogPageArgs{
		lid:    uint8(s.cdw[10]),
		lsp:    uint8(s.cdw[10] >> 8 & 0x7f),
		length: (numd + 1) * 4,
		offset: uint64(s.cdw[12]) | uint64(s.cdw[13])<<32,
		csi:    uint8(s.cdw[14] >> 24),
	}
}

// rwArgs are the fields of Read, Write and Write Zeroes.
type rwArgs struct {
	slba   uint64
	blocks uint32 // NLB + 1
	fua    bool
}

func parseRW(s *sqe) rwArgs {
	return rwArgs{
		slba:   uint64(s.cdw[10]) | uint64(s.cdw[11])<<32,
		blocks: s.cdw[12]&0xffff + 1,
		fua:    s.cdw[12]&(1<<30) != 0,
	}
}

// errorLogEntries is how many Error Information entries a controller
// keeps (ELPE + 1); each is 64 bytes.
const errorLogEntries = 8

type errorEntry struct {
	count  uint64
	sqid   uint16
	cid    uint16
	status uint16
	nsid   uint32
	lba    uint64
}

func putErrorEntry(b []byte, e errorEntry) {
	binary.LittleEndian.PutUint64(b[0:], e.count)
	binary.LittleEndian.PutUint16(b[8:], e.sqid)
	binary.LittleEndian.PutUint16(b[10:], e.cid)
	binary.LittleEndian.PutUint16(b[12:], e.status<<1)
	binary.LittleEndian.PutUint16(b[14:], 0xffff) // parameter error location: not given
	binary.LittleEndian.PutUint64(b[16:], e.lba)
	binary.LittleEndian.PutUint32(b[24:], e.nsid)
}
