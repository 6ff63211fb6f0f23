package tutorial

import (
	"context"
	"fmt"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// roce-lab is montybeatnik/rdma-roce-lab: examples/c/minimal (mode write,
// port 7471) and src/server_imm.c + src/client_imm.c (mode imm, port 7472).
//
// Both: the server registers a 4096-byte buffer
// (LOCAL_WRITE|REMOTE_READ|REMOTE_WRITE) holding "server-initial" and
// accepts with its address and rkey as private data (struct
// remote_buf_info, 12 bytes, big-endian); accept parameters responder
// resources and initiator depth 1, retry and RNR retry 7
// (rdma_cm_helpers.c cm_server_accept_with_priv).
//
// write (server_min.c, client_min.c): the client connects (initiator depth
// and responder resources 1, retries 7), RDMA WRITEs its NUL-terminated
// string (wr_id 1), RDMA READs 4096 bytes back (wr_id 2), prints "Client
// read back: '<text>'" and disconnects. The C server sleeps 2 s after
// ESTABLISHED, prints "Server buffer after client ops: '<text>'" and
// disconnects; ours prints it when the client disconnects.
//
// imm (server_imm.c, client_imm.c): the server also posts a 64-byte RECV
// (wr_id 100) before accepting; the client (initiator depth and responder
// resources 0) does an RDMA WRITE_WITH_IMM (wr_id 1) of its NUL-terminated
// string with imm_data = htonl(length), so the server's RECV completes as
// RECV_RDMA_WITH_IMM carrying the length; the server prints the immediate
// value and the buffer.
var roceLabProtocol = &Protocol{
	Name:    "roce-lab",
	Source:  "montybeatnik/rdma-roce-lab examples/c/minimal (rdma_min_server, rdma_min_client) and src/server_imm.c, src/client_imm.c (rdma_server_imm, rdma_client_imm)",
	Summary: "the server's buffer address and rkey travel in the CM's private data; the client RDMA WRITEs, READs, or WRITEs with immediate data",
	Modes: []Mode{
		{Name: "write", Port: 7471, Summary: "the client WRITEs -s into the server's buffer and READs 4096 bytes back",
			Param: roceLabParam, MaxMessage: roceLabBufSize, DefaultMessage: "client-wrote-this", newSession: newRoceLab},
		{Name: "imm", Port: 7472, Summary: "the client does a WRITE_WITH_IMM of -s, imm_data = its length; the server's RECV reports it",
			Param: roceLabParam, MaxMessage: roceLabBufSize, DefaultMessage: "client-wrote-with-imm", Imm: true, newSession: newRoceLab},
	},
}

var roceLabParam = rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}

const (
	roceLabWrite = 1 // client_min.c post_write wr_id; client_imm.c's WRITE_WITH_IMM
	roceLabRead  = 2 // client_min.c post_read wr_id
)

type roceLab struct {
	env
	imm bool

	buf  *Region // server: the exposed buffer
	note *Region // imm server: the RECV buffer
	tx   *Region // client
	rx   *Region // client, write mode
}

func newRoceLab(e env) session { return &roceLab{env: e, imm: e.mode == "imm"} }

func (s *roceLab) prepare(ep Endpoint) ([]byte, error) {
	var err error
	if s.client {
		if len(s.message)+1 > roceLabBufSize {
			return nil, fmt.Errorf("the string is %d bytes; with its NUL it must fit the server's %d-byte buffer", len(s.message), roceLabBufSize)
		}
		if s.tx, err = ep.Register("tx", roceLabBufSize, uverbs.AccessLocalWrite); err != nil {
			return nil, err
		}
		copy(s.tx.Buf, s.message)
		if !s.imm {
			if s.rx, err = ep.Register("rx", roceLabBufSize, uverbs.AccessLocalWrite); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if s.buf, err = ep.Register("remote", roceLabBufSize, uverbs.AccessLocalWrite|uverbs.AccessRemoteRead|uverbs.AccessRemoteWrite); err != nil {
		return nil, err
	}
	copy(s.buf.Buf, "server-initial")
	if s.imm {
		if s.note, err = ep.Register("notification", roceLabRecvSize, uverbs.AccessLocalWrite); err != nil {
			return nil, err
		}
		if err := ep.PostRecv(uverbs.RecvWR{ID: roceLabRecvID, SGEs: []uverbs.SGE{s.note.SGE(0, roceLabRecvSize)}}); err != nil {
			return nil, err
		}
	}
	info := roceLabInfo{Addr: s.buf.Addr, RKey: s.buf.RKey}
	s.tr.Slow("accept private data: addr=%#x rkey=%#x (12 bytes, big-endian)", info.Addr, info.RKey)
	return info.encode(), nil
}

func (s *roceLab) run(ctx context.Context, ep Endpoint) error {
	if s.client {
		return s.runClient(ctx, ep)
	}
	if s.imm {
		wc, err := waitOne(ctx, ep, roceLabRecvID, "RECV of the WRITE_WITH_IMM notification")
		if err != nil {
			return err
		}
		if wc.Opcode != uverbs.WCOpRecvRDMAWithImm || wc.Flags&uverbs.WCWithImm == 0 {
			return fmt.Errorf("the RECV completed as %v without immediate data; the roce-lab client sends RDMA_WRITE_WITH_IMM", wc.Opcode)
		}
		n := min(int(wc.ByteLen), len(s.buf.Buf))
		s.tr.Data("got RECV with IMM: imm_data host=%d, %d bytes: %s", wc.Imm, wc.ByteLen, printable(s.buf.Buf[:n]))
		s.out("imm_data=%d, %d bytes arrived: '%s'", wc.Imm, wc.ByteLen, cstring(s.buf.Buf[:n]))
	}
	// The client disconnects when done.
	select {
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if !s.imm {
		s.tr.Data("after client ops, buf=%s", printable(s.buf.Buf))
		s.out("Server buffer after client ops: '%s'", cstring(s.buf.Buf))
	}
	return nil
}

func (s *roceLab) runClient(ctx context.Context, ep Endpoint) error {
	info, err := decodeRoceLabInfo(ep.PeerPrivateData())
	if err != nil {
		return err
	}
	s.tr.Slow("private data: remote addr=%#x rkey=%#x", info.Addr, info.RKey)
	n := len(s.message) + 1
	if s.imm {
		s.tr.Data("RDMA_WRITE_WITH_IMM of %s, imm_data=%d", printable(s.tx.Buf), n)
		if err := postWait(ctx, ep, uverbs.SendWR{ID: roceLabWrite, Op: uverbs.OpWriteImm, Imm: uint32(n),
			SGEs: []uverbs.SGE{s.tx.SGE(0, n)}, RemoteAddr: info.Addr, RKey: info.RKey}, "RDMA WRITE_WITH_IMM"); err != nil {
			return err
		}
		s.out("RDMA_WRITE_WITH_IMM completed: %d bytes, imm_data=%d", n, n)
		return nil
	}
	s.tr.Data("RDMA_WRITE of %s", printable(s.tx.Buf))
	if err := postWait(ctx, ep, uverbs.SendWR{ID: roceLabWrite, Op: uverbs.OpWrite,
		SGEs: []uverbs.SGE{s.tx.SGE(0, n)}, RemoteAddr: info.Addr, RKey: info.RKey}, "RDMA WRITE"); err != nil {
		return err
	}
	if err := postWait(ctx, ep, uverbs.SendWR{ID: roceLabRead, Op: uverbs.OpRead,
		SGEs: []uverbs.SGE{s.rx.SGE(0, roceLabBufSize)}, RemoteAddr: info.Addr, RKey: info.RKey}, "RDMA READ"); err != nil {
		return err
	}
	s.tr.Data("readback %s", printable(s.rx.Buf))
	s.out("Client read back: '%s'", cstring(s.rx.Buf))
	return nil
}
