package tutorial

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The wire formats of the three tutorials. Each fact names the C source it
// comes from; the C programs were read at these commits:
//   - tarickb/the-geek-in-the-corner fb2358c (01_basic-client-server,
//     02_read-write)
//   - animeshtrivedi/rdma-example 615b85d (src/)
//   - montybeatnik/rdma-roce-lab bb6c025 (examples/c/minimal, src/)

// geek: 02_read-write/rdma-common.c struct message is
//
//	struct message { enum { MSG_MR, MSG_DONE } type; union { struct ibv_mr mr; } data; };
//
// sent whole (sizeof(struct message)) with IBV_WR_SEND, in the host's byte
// order. On x86_64 (and arm64) that is 56 bytes, little-endian: the enum at
// 0, 4 bytes of padding (the union holds pointers), then struct ibv_mr
// (infiniband/verbs.h): context pointer at 8, pd pointer at 16, addr at 24,
// length (size_t) at 32, handle at 40, lkey at 44, rkey at 48, and 4 bytes of
// tail padding. The receiver uses only addr and rkey
// (rdma-common.c on_completion: wr.wr.rdma.remote_addr = peer_mr.addr,
// rkey = peer_mr.rkey); the pointers mean nothing to it, and ours sends
// zeros there.
const (
	geekMsgLen     = 56
	geekMsgMR      = 0    // MSG_MR
	geekMsgDone    = 1    // MSG_DONE
	geekBufferSize = 1024 // RDMA_BUFFER_SIZE (02) and BUFFER_SIZE (01)
)

// geekMR is the part of struct ibv_mr the geek messages carry.
type geekMR struct {
	Addr   uint64
	Length uint64
	Handle uint32
	LKey   uint32
	RKey   uint32
}

// geekMsg is struct message.
type geekMsg struct {
	Type uint32 // geekMsgMR or geekMsgDone
	MR   geekMR // MSG_MR only; zero in MSG_DONE
}

func (m geekMsg) encode(b []byte) {
	clear(b[:geekMsgLen])
	binary.LittleEndian.PutUint32(b[0:], m.Type)
	binary.LittleEndian.PutUint64(b[24:], m.MR.Addr)
	binary.LittleEndian.PutUint64(b[32:], m.MR.Length)
	binary.LittleEndian.PutUint32(b[40:], m.MR.Handle)
	binary.LittleEndian.PutUint32(b[44:], m.MR.LKey)
	binary.LittleEndian.PutUint32(b[48:], m.MR.RKey)
}

func decodeGeekMsg(b []byte) (geekMsg, error) {
	if len(b) < geekMsgLen {
		return geekMsg{}, fmt.Errorf("a geek message is %d bytes, got %d: is the peer speaking --proto geek?", geekMsgLen, len(b))
	}
	m := geekMsg{
		Type: binary.LittleEndian.Uint32(b[0:]),
		MR: geekMR{
			Addr:   binary.LittleEndian.Uint64(b[24:]),
			Length: binary.LittleEndian.Uint64(b[32:]),
			Handle: binary.LittleEndian.Uint32(b[40:]),
			LKey:   binary.LittleEndian.Uint32(b[44:]),
			RKey:   binary.LittleEndian.Uint32(b[48:]),
		},
	}
	if m.Type != geekMsgMR && m.Type != geekMsgDone {
		return m, fmt.Errorf("geek message of type %d (0 is MSG_MR, 1 MSG_DONE): is the peer speaking --proto geek?", m.Type)
	}
	return m, nil
}

// geekMessage is the text each side puts in its buffer
// (02_read-write/rdma-client.c on_addr_resolved, rdma-server.c
// on_connect_request; 01_basic-client-server client.c and server.c
// on_connection).
func geekMessage(client bool, pid int) string {
	if client {
		return fmt.Sprintf("message from active/client side with pid %d", pid)
	}
	return fmt.Sprintf("message from passive/server side with pid %d", pid)
}

// rdma-example: src/rdma_common.h struct rdma_buffer_attr is
//
//	struct __attribute((packed)) rdma_buffer_attr { uint64_t address; uint32_t length; union stag { uint32_t local_stag; uint32_t remote_stag; } stag; };
//
// 16 bytes in the host's byte order (little-endian on x86_64), sent with
// IBV_WR_SEND. The C programs put the MR's lkey in stag (rdma_client.c
// client_xchange_metadata_with_server, rdma_server.c
// send_server_metadata_to_client) and the peer uses it as the rkey of its
// RDMA WRITE and READ; rxe gives an MR with remote access the same lkey
// and rkey (kernel: sw/rxe/rxe_mr.c), so ours sends the rkey, which is what
// the peer needs on any device.
const rdmaExampleAttrLen = 16

type rdmaExampleAttr struct {
	Addr   uint64
	Length uint32
	STag   uint32
}

func (a rdmaExampleAttr) encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], a.Addr)
	binary.LittleEndian.PutUint32(b[8:], a.Length)
	binary.LittleEndian.PutUint32(b[12:], a.STag)
}

func decodeRDMAExampleAttr(b []byte) (rdmaExampleAttr, error) {
	if len(b) != rdmaExampleAttrLen {
		return rdmaExampleAttr{}, fmt.Errorf("an rdma-example buffer attribute is %d bytes, got %d: is the peer speaking --proto rdma-example?", rdmaExampleAttrLen, len(b))
	}
	return rdmaExampleAttr{
		Addr:   binary.LittleEndian.Uint64(b[0:]),
		Length: binary.LittleEndian.Uint32(b[8:]),
		STag:   binary.LittleEndian.Uint32(b[12:]),
	}, nil
}

// roce-lab: src/common.h struct remote_buf_info is
//
//	struct remote_buf_info { uint64_t addr; uint32_t rkey; } __attribute__((packed));
//
// filled by pack_remote_buf_info with htonll_u64(addr) and htonl(rkey): 12
// bytes, big-endian. The server sends it as the private data of its
// rdma_accept (rdma_cm_helpers.c cm_server_accept_with_priv); the client
// reads it from the ESTABLISHED event's private data, which must hold at
// least 12 bytes (client_min.c, client_imm.c). The CM pads it with zeros to
// 196 bytes.
const roceLabInfoLen = 12

// roce-lab buffer sizes: BUF_SZ 4096 for the server's exposed buffer and the
// client's TX/RX buffers (server_min.c, client_min.c, server_imm.c,
// client_imm.c); the imm server's RECV buffer is 64 bytes, posted with
// wr_id 100 (server_imm.c).
const (
	roceLabBufSize  = 4096
	roceLabRecvSize = 64
	roceLabRecvID   = 100
)

type roceLabInfo struct {
	Addr uint64
	RKey uint32
}

func (i roceLabInfo) encode() []byte {
	b := make([]byte, roceLabInfoLen)
	binary.BigEndian.PutUint64(b[0:], i.Addr)
	binary.BigEndian.PutUint32(b[8:], i.RKey)
	return b
}

func decodeRoceLabInfo(b []byte) (roceLabInfo, error) {
	if len(b) < roceLabInfoLen {
		return roceLabInfo{}, fmt.Errorf("the server's accept carried %d bytes of private data, the roce-lab address and rkey need %d: is the server speaking --proto roce-lab?", len(b), roceLabInfoLen)
	}
	i := roceLabInfo{Addr: binary.BigEndian.Uint64(b[0:]), RKey: binary.BigEndian.Uint32(b[8:])}
	if i.Addr == 0 && i.RKey == 0 {
		return i, fmt.Errorf("the server's accept carried no buffer address and rkey: is the server speaking --proto roce-lab?")
	}
	return i, nil
}

// cstring returns b up to its first 0 byte, as printf's %s reads a C
// string.
func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
