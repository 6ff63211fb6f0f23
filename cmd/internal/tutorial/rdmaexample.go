package tutorial

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// rdma-example is animeshtrivedi/rdma-example (src/rdma_client.c,
// src/rdma_server.c), one mode, port 20886 (DEFAULT_RDMA_PORT).
//
// The client registers its string (-s, without the NUL) as the source
// buffer, pre-posts a 16-byte RECV, connects, and SENDs the source
// buffer's rdma_buffer_attr. The server, which posted its RECV before
// accepting, registers a buffer of the length asked for
// (LOCAL_WRITE|REMOTE_READ|REMOTE_WRITE) and SENDs its own attribute. The
// client RDMA WRITEs the string there, RDMA READs it back into a second
// buffer of the same length, compares the two and prints "SUCCESS, source
// and destination buffers match", then disconnects; the server waits for
// that. Connection parameters: client initiator depth and responder
// resources 3, retry count 3; server 3 and 3 (ours sends retry and RNR
// retry 7).
var rdmaExampleProtocol = &Protocol{
	Name:    "rdma-example",
	Source:  "animeshtrivedi/rdma-example (rdma_server, rdma_client)",
	Summary: "exchange buffer attributes in SEND messages; the client RDMA WRITEs its string to the server and READs it back",
	Modes: []Mode{
		{Name: "write-read", Port: 20886, Summary: "the client WRITEs -s into the server's buffer and READs it back",
			Param: rdmacm.ConnParam{ResponderResources: 3, InitiatorDepth: 3, RetryCount: 7, RNRRetryCount: 7},
			// The server registers the length the client asks for; ours
			// refuses more than this.
			MaxMessage: maxRDMAExampleLen, DefaultMessage: "hello world", newSession: newRDMAExample},
	},
}

// maxRDMAExampleLen bounds the buffer our server registers for a client.
const maxRDMAExampleLen = 1 << 20

const (
	rexRecv  = 1
	rexSend  = 2
	rexWrite = 3
	rexRead  = 4
)

type rdmaExample struct {
	env
	meta *Region // receive area at 0, send area at 16
	src  *Region // client: the string
	dst  *Region // client: what is read back
	buf  *Region // server: the buffer the client asked for
}

func newRDMAExample(e env) session { return &rdmaExample{env: e} }

func (s *rdmaExample) prepare(ep Endpoint) ([]byte, error) {
	var err error
	if s.meta, err = ep.Register("metadata", 2*rdmaExampleAttrLen, uverbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	if s.client {
		if len(s.message) == 0 {
			return nil, errors.New("rdma-example needs a string to write: give -s STRING")
		}
		remote := uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite
		if s.src, err = ep.Register("source", len(s.message), remote); err != nil {
			return nil, err
		}
		copy(s.src.Buf, s.message)
		if s.dst, err = ep.Register("destination", len(s.message), remote); err != nil {
			return nil, err
		}
	}
	return nil, ep.PostRecv(uverbs.RecvWR{ID: rexRecv, SGEs: []uverbs.SGE{s.meta.SGE(0, rdmaExampleAttrLen)}})
}

func (s *rdmaExample) sendAttr(ep Endpoint, r *Region) error {
	a := rdmaExampleAttr{Addr: r.Addr, Length: uint32(len(r.Buf)), STag: r.RKey}
	a.encode(s.meta.Buf[rdmaExampleAttrLen:])
	s.tr.Data("send buffer attr: addr=%#x len=%d stag=%#x", a.Addr, a.Length, a.STag)
	return ep.PostSend(uverbs.SendWR{ID: rexSend, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{s.meta.SGE(rdmaExampleAttrLen, rdmaExampleAttrLen)}})
}

func (s *rdmaExample) recvAttr(wc uverbs.WC) (rdmaExampleAttr, error) {
	a, err := decodeRDMAExampleAttr(s.meta.Buf[:min(int(wc.ByteLen), rdmaExampleAttrLen+1)])
	if err == nil {
		s.tr.Data("received buffer attr: addr=%#x len=%d stag=%#x", a.Addr, a.Length, a.STag)
	}
	return a, err
}

func (s *rdmaExample) run(ctx context.Context, ep Endpoint) error {
	if s.client {
		return s.runClient(ctx, ep)
	}
	return s.runServer(ctx, ep)
}

func (s *rdmaExample) runClient(ctx context.Context, ep Endpoint) error {
	if err := s.sendAttr(ep, s.src); err != nil {
		return err
	}
	// Two completions in either order: our SEND and the server's answer.
	var server rdmaExampleAttr
	for sent, got := false, false; !(sent && got); {
		wc, err := ep.Next(ctx)
		if errors.Is(err, errPeerGone) || err == nil && wc.Status == uverbs.WCFlushError {
			return fmt.Errorf("the server disconnected before sending its buffer's attributes (it may refuse %d bytes)", len(s.message))
		}
		if err != nil {
			return err
		}
		if wc.Status != uverbs.WCSuccess {
			return wcError(map[uint64]string{rexSend: "SEND of the buffer attributes", rexRecv: "RECV"}[wc.ID], wc)
		}
		switch wc.ID {
		case rexSend:
			sent = true
		case rexRecv:
			if server, err = s.recvAttr(wc); err != nil {
				return err
			}
			got = true
		default:
			return fmt.Errorf("completion of unknown work request %d", wc.ID)
		}
	}
	if int(server.Length) < len(s.message) {
		return fmt.Errorf("the server's buffer is %d bytes, the string %d", server.Length, len(s.message))
	}
	n := len(s.message)
	if err := postWait(ctx, ep, uverbs.SendWR{ID: rexWrite, Op: uverbs.OpWrite,
		SGEs: []uverbs.SGE{s.src.SGE(0, n)}, RemoteAddr: server.Addr, RKey: server.STag}, "RDMA WRITE to the server"); err != nil {
		return err
	}
	if err := postWait(ctx, ep, uverbs.SendWR{ID: rexRead, Op: uverbs.OpRead,
		SGEs: []uverbs.SGE{s.dst.SGE(0, n)}, RemoteAddr: server.Addr, RKey: server.STag}, "RDMA READ from the server"); err != nil {
		return err
	}
	s.tr.Data("source %s, destination %s", printable(s.src.Buf), printable(s.dst.Buf))
	if !bytes.Equal(s.src.Buf, s.dst.Buf) {
		return fmt.Errorf("source and destination buffers differ: source %q, destination %q", s.src.Buf, s.dst.Buf)
	}
	s.out("SUCCESS, source and destination buffers match")
	return nil
}

func (s *rdmaExample) runServer(ctx context.Context, ep Endpoint) error {
	wc, err := waitOne(ctx, ep, rexRecv, "RECV of the client's buffer attributes")
	if err != nil {
		return err
	}
	client, err := s.recvAttr(wc)
	if err != nil {
		return err
	}
	if client.Length == 0 || client.Length > maxRDMAExampleLen {
		return fmt.Errorf("the client asks for a %d-byte buffer; this server gives 1 to %d", client.Length, maxRDMAExampleLen)
	}
	s.out("client buffer: addr=%#x len=%d stag=%#x", client.Addr, client.Length, client.STag)
	remote := uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite
	if s.buf, err = ep.Register("server", int(client.Length), remote); err != nil {
		return err
	}
	if err := s.sendAttr(ep, s.buf); err != nil {
		return err
	}
	if _, err := waitOne(ctx, ep, rexSend, "SEND of the buffer attributes"); err != nil {
		return err
	}
	// The client WRITEs and READs; it disconnects when done.
	select {
	case <-ep.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	s.tr.Data("server buffer after the client's operations: %s", printable(s.buf.Buf))
	s.out("buffer after the client's operations: %s", cstring(s.buf.Buf))
	return nil
}
