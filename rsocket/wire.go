package rsocket

import (
	"encoding/binary"
	"fmt"
)

// The wire format of rdma-core's rsocket streams (librdmacm/rsocket.c);
// docs/rsocket.md describes it and names the C functions each fact comes from.

const (
	// protocolVersion is the first byte of every rs_conn_data; rsocket has
	// never sent another (docs/rsocket.md §1).
	protocolVersion = 1
	// connDataLen is the size of struct rs_conn_data in the CM private data.
	connDataLen = 40

	connFlagNet   = 1 << 0 // RS_CONN_FLAG_NET: the sender is big-endian
	connFlagIOMap = 1 << 1 // RS_CONN_FLAG_IOMAP: byte 7 holds the iomap size

	sgeSize    = 16 // struct rs_sge: addr u64, key u32, length u32
	iomapSize  = 24 // struct rs_iomap: offset u64, then an rs_sge
	targetSGEs = 2  // RS_SGL_SIZE: slots the peer publishes segments into

	ctrlInFlight = 4    // RS_QP_CTRL_SIZE: control messages in flight at most
	ctrlMsgSize  = 16   // RS_MAX_CTRL_MSG: scratch per control message
	sndLowat     = 2048 // RS_SNDLOWAT: free send buffer needed to send
	olapStart    = 2048 // RS_OLAP_START_SIZE: first write of a long send
	maxTransfer  = 65536

	minQueueSize = 16     // RS_QP_MIN_SIZE
	maxQueueSize = 0xFFFE // RS_QP_MAX_SIZE: sequence numbers are u16
)

// Operations in the top 3 bits of the immediate (rs_msg_op); the other 29
// bits are the value (rs_msg_data). The immediate travels big-endian, which
// uverbs.SendWR.Imm and uverbs.WC.Imm already handle.
const (
	opData     = 0 // value: bytes written into the receive buffer
	opWrite    = 2 // never on the wire: rsocket's local tag for riowrite
	opSGL      = 4 // value: the sender's new send limit (low 16 bits)
	opIOMapSGL = 6 // value: the iomap slot the sender just wrote
	opCtrl     = 7 // value: one of the ctrl* codes

	// Ops 1, 3 and 5 are reserved; rsocket's receiver takes them as data.
)

// Control codes of opCtrl. SHUTDOWN was 1 before mid-2014, when keepalive
// took that number; current rsocket ignores 1 in an immediate.
const (
	ctrlDisconnect = 0
	ctrlKeepalive  = 1
	ctrlShutdown   = 2
)

func immediate(op, value uint32) uint32 { return op<<29 | value&(1<<29-1) }
func immOp(imm uint32) uint32           { return imm >> 29 }
func immValue(imm uint32) uint32        { return imm & (1<<29 - 1) }

// rsSGE is struct rs_sge. Beware the order: address, key, then length.
type rsSGE struct {
	Addr   uint64
	Key    uint32
	Length uint32
}

func (s rsSGE) put(b []byte, o binary.ByteOrder) {
	o.PutUint64(b[0:], s.Addr)
	o.PutUint32(b[8:], s.Key)
	o.PutUint32(b[12:], s.Length)
}

// connData is struct rs_conn_data, the 40 bytes each side puts first in its
// CM private data (CONNECT and ACCEPT); every field is big-endian.
type connData struct {
	Version uint8
	Flags   uint8
	// Credits is the sender's receive queue depth: data messages the peer
	// may send before the first credit update.
	Credits uint16
	// IOMapSlots is the decoded number of iomap slots (byte 7, scaled).
	IOMapSlots int
	// TargetSGL is the sender's target slot array; its Length counts
	// entries, not bytes.
	TargetSGL rsSGE
	// DataBuf is the sender's receive buffer; its Length is the first
	// segment the peer may write (half the buffer).
	DataBuf rsSGE
}

func (d *connData) marshal(b []byte) {
	_ = b[connDataLen-1]
	clear(b[:connDataLen])
	b[0] = d.Version
	b[1] = d.Flags
	binary.BigEndian.PutUint16(b[2:], d.Credits)
	b[7] = scaleIOMap(d.IOMapSlots)
	d.TargetSGL.put(b[8:], binary.BigEndian)
	d.DataBuf.put(b[24:], binary.BigEndian)
}

// parseConnData reads the peer's rs_conn_data from the first 40 bytes of
// its private data (the CM pads what arrives to 56 or 196 bytes).
func parseConnData(b []byte) (connData, error) {
	var d connData
	if len(b) < connDataLen {
		return d, fmt.Errorf("%w: the peer's private data has %d bytes, an rsocket connection carries %d", ErrProtocol, len(b), connDataLen)
	}
	d.Version = b[0]
	d.Flags = b[1]
	d.Credits = binary.BigEndian.Uint16(b[2:])
	if d.Flags&connFlagIOMap != 0 {
		d.IOMapSlots = unscaleIOMap(b[7])
	}
	be := binary.BigEndian
	d.TargetSGL = rsSGE{Addr: be.Uint64(b[8:]), Key: be.Uint32(b[16:]), Length: be.Uint32(b[20:])}
	d.DataBuf = rsSGE{Addr: be.Uint64(b[24:]), Key: be.Uint32(b[32:]), Length: be.Uint32(b[36:])}
	switch {
	case d.Version != protocolVersion:
		return d, fmt.Errorf("%w: the peer speaks rsocket protocol version %d, this package version %d", ErrProtocol, d.Version, protocolVersion)
	case d.Credits == 0:
		return d, fmt.Errorf("%w: the peer grants no credits (receive queue depth 0)", ErrProtocol)
	case d.TargetSGL.Length == 0 || d.TargetSGL.Length > 1<<16:
		return d, fmt.Errorf("%w: the peer offers %d target slots", ErrProtocol, d.TargetSGL.Length)
	}
	return d, nil
}

// peerOrder is the byte order of the SGEs we write into the peer's memory:
// the order the peer declared with RS_CONN_FLAG_NET (docs/rsocket.md §1.2).
func (d *connData) peerOrder() binary.ByteOrder {
	if d.Flags&connFlagNet != 0 {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// scaleIOMap and unscaleIOMap are rs_value_to_scale and rs_scale_to_value
// with 8 bits: values up to 128 as they are, larger ones in units of 256.
func scaleIOMap(v int) uint8 {
	if v <= 128 {
		return uint8(v)
	}
	return 0x80 | uint8(v>>8)
}

func unscaleIOMap(e uint8) int {
	if e <= 128 {
		return int(e)
	}
	return int(e&0x7F) << 8
}
