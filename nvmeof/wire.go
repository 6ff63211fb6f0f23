package nvmeof

import (
	"encoding/binary"
	"fmt"
)

// The bytes on the wire: command capsules (a 64-byte submission queue
// entry), response capsules (a 16-byte completion queue entry), SGL
// descriptors and the RDMA CM private data. docs/nvmeof.md §2 gives the
// layouts with the sections of the specifications they come from; the
// kernel's include/linux/nvme.h and include/linux/nvme-rdma.h have the same
// structures (struct nvme_common_command, nvme_completion, nvme_sgl_desc,
// nvme_keyed_sgl_desc, nvme_rdma_cm_req/_rep/_rej, nvmf_connect_data).

const (
	sqeSize = 64 // a submission queue entry: the command capsule without data
	cqeSize = 16 // a completion queue entry: the whole response capsule

	// adminDepth is the admin queue's size, as the kernel's host makes it
	// (NVME_AQ_DEPTH), and the most the kernel's target accepts there
	// (drivers/nvme/target/rdma.c nvmet_rdma_parse_cm_connect_req).
	adminDepth = 32

	// DefaultPort is the port the RDMA transport's controllers listen on
	// (NVME_RDMA_IP_PORT).
	DefaultPort = 4420

	// DiscoveryNQN is the well-known NQN of a discovery controller.
	DiscoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"
)

// Opcodes (NVMe base specification, Figure "Opcodes for Admin Commands";
// NVM command set specification; NVMe over Fabrics "Fabrics Command").
const (
	opFlush       = 0x00
	opWrite       = 0x01
	opRead        = 0x02
	opWriteZeroes = 0x08

	opGetLogPage = 0x02
	opIdentify   = 0x06
	opSetFeature = 0x09
	opKeepAlive  = 0x18

	opFabrics = 0x7f

	fctPropertySet = 0x00
	fctConnect     = 0x01
	fctPropertyGet = 0x04
)

// Identify CNS values, the Number of Queues feature and the discovery log.
const (
	cnsNamespace       = 0x00
	cnsController      = 0x01
	cnsActiveNSList    = 0x02
	featNumQueues      = 0x07
	logDiscovery       = 0x70
	identifySize       = 4096
	discoveryHdrSize   = 1024
	discoveryEntrySize = 1024
)

// Controller properties (the registers of a PCIe controller): offsets and
// fields (NVMe base specification, "Controller Registers").
const (
	propCAP  = 0x00 // 8 bytes
	propVS   = 0x08
	propCC   = 0x14
	propCSTS = 0x1c

	ccEnable     = 1 << 0
	ccShnNormal  = 1 << 14
	ccShnMask    = 3 << 14
	ccIOSQES     = 6 << 16 // 2^6 = 64-byte SQ entries
	ccIOCQES     = 4 << 20 // 2^4 = 16-byte CQ entries
	cstsReady    = 1 << 0
	cstsFatal    = 1 << 1
	cstsShstMask = 3 << 2
	cstsShstDone = 2 << 2
)

// SGL descriptor types: the type byte is the descriptor type in bits 7:4
// and the sub type in bits 3:0 (include/linux/nvme.h NVME_SGL_FMT_*).
const (
	sglDataBlockOffset = 0x01 // data block, offset sub type: in-capsule data
	sglKeyedAddress    = 0x40 // keyed data block, address: the target reads or writes our memory
	sglKeyedInvalidate = 0x4f // the same, and invalidate the key when done

	// flagSGL in a command's flags byte says its data pointer is an SGL
	// (PSDT 01b), as every fabrics command's must be.
	flagSGL = 0x40
)

// command is a submission queue entry under construction. Fields not set
// are zero. Multi-byte fields are little endian.
type command [sqeSize]byte

func (c *command) setOpcode(op byte) { c[0] = op }
func (c *command) setCID(id uint16)  { binary.LittleEndian.PutUint16(c[2:], id) }
func (c *command) setNSID(ns uint32) { binary.LittleEndian.PutUint32(c[4:], ns) }

// dword sets command dword n (10 to 15): bytes 4n to 4n+3.
func (c *command) dword(n int, v uint32) { binary.LittleEndian.PutUint32(c[4*n:], v) }

// setKeyedSGL points the command at length bytes of our memory at addr,
// which the target reaches with key (NVMe over Fabrics RDMA transport:
// "Keyed SGL Data Block descriptor"): 8-byte address, 3-byte length, 4-byte
// key, type. The sub type is Address, never Invalidate: the key is the
// queue's standing one, which must outlive the command.
func (c *command) setKeyedSGL(addr uint64, length int, key uint32) {
	c[1] |= flagSGL
	d := c[24:40]
	binary.LittleEndian.PutUint64(d[0:], addr)
	d[8], d[9], d[10] = byte(length), byte(length>>8), byte(length>>16)
	binary.LittleEndian.PutUint32(d[11:], key)
	d[15] = sglKeyedAddress
}

// setInlineSGL says length bytes of data follow the entry in the capsule,
// at offset 0 ("Data Block descriptor" with the Offset sub type).
func (c *command) setInlineSGL(length int) {
	c[1] |= flagSGL
	d := c[24:40]
	binary.LittleEndian.PutUint64(d[0:], 0)
	binary.LittleEndian.PutUint32(d[8:], uint32(length))
	d[15] = sglDataBlockOffset
}

// newFabrics starts a Fabrics command: opcode 7Fh, its type in byte 4.
func newFabrics(fctype byte) command {
	var c command
	c.setOpcode(opFabrics)
	c[4] = fctype
	return c
}

// propertyGet reads a property: size 8 (attrib 1) for CAP, 4 otherwise.
func propertyGet(offset uint32) command {
	c := newFabrics(fctPropertyGet)
	if offset == propCAP {
		c[40] = 1
	}
	binary.LittleEndian.PutUint32(c[44:], offset)
	return c
}

// propertySet writes a 4-byte property.
func propertySet(offset, value uint32) command {
	c := newFabrics(fctPropertySet)
	binary.LittleEndian.PutUint32(c[44:], offset)
	binary.LittleEndian.PutUint64(c[48:], uint64(value))
	return c
}

// connectCommand asks for queue qid of sqsize entries (0-based in the
// command); kato is the keep-alive timeout in milliseconds, admin queue
// only. Its 1024 bytes of data are connectData's.
func connectCommand(qid uint16, depth int, kato uint32) command {
	c := newFabrics(fctConnect)
	binary.LittleEndian.PutUint16(c[40:], 0) // RECFMT 0
	binary.LittleEndian.PutUint16(c[42:], qid)
	binary.LittleEndian.PutUint16(c[44:], uint16(depth-1))
	binary.LittleEndian.PutUint32(c[48:], kato)
	return c
}

const connectDataSize = 1024

// connectData fills the Connect command's data: host identifier, the
// controller to join (0xFFFF on the admin queue: any, the target picks),
// the subsystem's NQN and ours.
func connectData(b []byte, hostID [16]byte, cntlid uint16, subsysNQN, hostNQN string) {
	clear(b[:connectDataSize])
	copy(b[0:16], hostID[:])
	binary.LittleEndian.PutUint16(b[16:], cntlid)
	copy(b[256:511], subsysNQN)
	copy(b[512:767], hostNQN)
}

func identifyCommand(cns byte, nsid uint32) command {
	var c command
	c.setOpcode(opIdentify)
	c.setNSID(nsid)
	c.dword(10, uint32(cns))
	return c
}

// getLogPage reads n bytes (a multiple of 4) of log lid from offset off.
func getLogPage(lid byte, off uint64, n int) command {
	var c command
	c.setOpcode(opGetLogPage)
	numd := uint32(n/4 - 1)
	c.dword(10, uint32(lid)|(numd&0xffff)<<16)
	c.dword(11, numd>>16)
	c.dword(12, uint32(off))
	c.dword(13, uint32(off>>32))
	return c
}

// setNumQueues asks for n I/O submission and completion queues (0-based
// counts in the feature's dword 11).
func setNumQueues(n int) command {
	var c command
	c.setOpcode(opSetFeature)
	c.dword(10, featNumQueues)
	c.dword(11, uint32(n-1)|uint32(n-1)<<16)
	return c
}

func keepAlive() command {
	var c command
	c.setOpcode(opKeepAlive)
	return c
}

// rwCommand reads or writes blocks blocks from slba (at most 65536).
func rwCommand(op byte, nsid uint32, slba uint64, blocks int) command {
	var c command
	c.setOpcode(op)
	c.setNSID(nsid)
	c.dword(10, uint32(slba))
	c.dword(11, uint32(slba>>32))
	c.dword(12, uint32(blocks-1))
	return c
}

func flushCommand(nsid uint32) command {
	var c command
	c.setOpcode(opFlush)
	c.setNSID(nsid)
	return c
}

// completion is a decoded completion queue entry.
type completion struct {
	result uint64 // command specific (dwords 0 and 1)
	sqHead uint16
	sqID   uint16
	cid    uint16
	status uint16 // the status field without the phase bit: SC in bits 7:0, SCT 10:8, CRD 12:11, M 13, DNR 14
}

func parseCompletion(b []byte) (completion, error) {
	if len(b) != cqeSize {
		return completion{}, fmt.Errorf("%w: a response capsule of %d bytes (a completion queue entry has %d)", ErrProtocol, len(b), cqeSize)
	}
	return completion{
		result: binary.LittleEndian.Uint64(b[0:]),
		sqHead: binary.LittleEndian.Uint16(b[8:]),
		sqID:   binary.LittleEndian.Uint16(b[10:]),
		cid:    binary.LittleEndian.Uint16(b[12:]),
		status: binary.LittleEndian.Uint16(b[14:]) >> 1,
	}, nil
}

// The RDMA CM private data of a queue's connection (NVMe over Fabrics RDMA
// transport, "RDMA_CM_REQUEST", "_ACCEPT" and "_REJECT" private data).
const (
	cmReqSize = 32
	cmRepSize = 32
)

// cmRequest says which queue the connection is for: qid, how many
// responses we can receive (hrqsize) and how many commands we send at most
// (hsqsize, 0-based).
func cmRequest(qid uint16, depth int) []byte {
	b := make([]byte, cmReqSize)
	binary.LittleEndian.PutUint16(b[0:], 0) // RECFMT 0
	binary.LittleEndian.PutUint16(b[2:], qid)
	binary.LittleEndian.PutUint16(b[4:], uint16(depth))
	binary.LittleEndian.PutUint16(b[6:], uint16(depth-1))
	return b
}

// parseCMAccept returns the controller's receive queue size (crqsize).
func parseCMAccept(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("%w: the target accepted the queue with %d bytes of private data (the RDMA transport's accept has 32)", ErrProtocol, len(b))
	}
	if f := binary.LittleEndian.Uint16(b); f != 0 {
		return 0, fmt.Errorf("%w: the target's accept has record format %d (only 0 is defined)", ErrProtocol, f)
	}
	return int(binary.LittleEndian.Uint16(b[2:])), nil
}

// cmRejectReason reads the status of an RDMA_CM_REJECT's private data, if
// it has the transport's format.
func cmRejectReason(b []byte) (string, bool) {
	if len(b) < 4 || binary.LittleEndian.Uint16(b) != 0 {
		return "", false
	}
	st := binary.LittleEndian.Uint16(b[2:])
	reasons := map[uint16]string{
		1: "invalid private data length",
		2: "invalid record format",
		3: "invalid queue ID",
		4: "invalid host send queue size",
		5: "invalid host receive queue size",
		6: "no resources",
		7: "invalid IRD",
		8: "invalid ORD",
	}
	if r, ok := reasons[st]; ok {
		return fmt.Sprintf("%s (status %d)", r, st), true
	}
	return fmt.Sprintf("status %d", st), true
}
