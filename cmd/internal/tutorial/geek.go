package tutorial

import (
	"context"
	"errors"
	"fmt"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// geek is tarickb/the-geek-in-the-corner: 02_read-write (modes write and
// read) and 01_basic-client-server (mode send).
//
// write/read (02_read-write/rdma-common.c): each side registers two
// 1024-byte regions: "local" and "remote" (the one it advertises). Write
// mode: the side's message is in local (access 0), the peer writes into
// remote (LOCAL_WRITE|REMOTE_WRITE). Read mode: the message is in remote
// (REMOTE_READ), the peer reads it into its local (LOCAL_WRITE). Once
// ESTABLISHED the client SENDs MSG_MR with its remote region; the server
// answers a received MSG_MR with its own. A side that has sent its MSG_MR
// and received the peer's posts the RDMA WRITE (or READ) of 1024 bytes and
// then a MSG_DONE. When its MSG_DONE is sent and the peer's received, it
// prints "remote buffer: <text>" (the peer's message as it arrived) and
// disconnects. Connection parameters (build_params): initiator depth and
// responder resources 1, RNR retry 7 (retry count 0; ours sends 7).
//
// The C programs post one receive, and another after MSG_MR, relying on
// RNR retries; ours posts both at once, and our server sends its MSG_DONE
// only after the client's (sendDone), which iWARP, without RNR retries,
// needs. The C client's retry count 0 is
// what both QPs then use: one lost or late packet ends the connection with
// IBV_WC_RETRY_EXC_ERR. In the lab on 6.12 (TCG) that was seen in about one
// run of six, with the C server as with ours; the server prints a note when
// a client connects so.
//
// send (01_basic-client-server): each side posts a 1024-byte RECV before
// connecting or accepting; once ESTABLISHED it SENDs 1024 bytes holding its
// message and prints "received message: <text>" for the peer's. The client
// disconnects after its SEND and RECV complete; the server waits for that.
// Connection parameters: all zero (ours sends RNR retry and retry count 7).
var geekProtocol = &Protocol{
	Name:    "geek",
	Source:  "tarickb/the-geek-in-the-corner 02_read-write (rdma-server, rdma-client) and 01_basic-client-server (server, client)",
	Summary: "exchange MRs in SEND messages, then RDMA WRITE or READ each other's 1024-byte buffer; or SEND a message each way",
	Modes: []Mode{
		{Name: "write", Port: 22222, Summary: "each side RDMA WRITEs its message into the peer's buffer",
			Param: geekParam, MaxMessage: geekBufferSize, newSession: newGeekRDMA},
		{Name: "read", Port: 22222, Summary: "each side RDMA READs the peer's message from the peer's buffer",
			Param: geekParam, MaxMessage: geekBufferSize, newSession: newGeekRDMA},
		{Name: "send", Port: 22222, Summary: "each side SENDs its message; the peer's RECV takes it",
			Param: geekParam, MaxMessage: geekBufferSize, newSession: newGeekSend},
	},
}

var geekParam = rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}

// Work request IDs of the geek sessions.
const (
	geekRecv0  = 1 // first receive (MSG_MR, or send mode's message)
	geekRecv1  = 2 // second receive (MSG_DONE)
	geekSendMR = 3
	geekOpID   = 4
	geekDone   = 5
	geekSendID = 6 // send mode's message
)

type geekRDMA struct {
	env
	read bool

	msgs   *Region // send area at 0, two receive areas after it
	local  *Region
	remote *Region

	mrSent, peerMR, rdmaDone, doneSent, doneRecv bool
	rdmaPosted                                   bool
	mrAgain                                      bool // the peer sent its MSG_MR twice
	donePosted                                   bool
	peer                                         geekMR
}

func newGeekRDMA(e env) session { return &geekRDMA{env: e, read: e.mode == "read"} }

func (s *geekRDMA) prepare(ep Endpoint) ([]byte, error) {
	var err error
	// One region for the three 56-byte messages: send at 0, receives at 56
	// and 112.
	if s.msgs, err = ep.Register("message", 3*geekMsgLen, uverbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	localAccess, remoteAccess := uverbs.Access(0), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite
	if s.read {
		localAccess, remoteAccess = uverbs.AccessLocalWrite, uverbs.AccessRemoteRead
	}
	if s.local, err = ep.Register("local", geekBufferSize, localAccess); err != nil {
		return nil, err
	}
	if s.remote, err = ep.Register("remote", geekBufferSize, remoteAccess); err != nil {
		return nil, err
	}
	// The message goes where the peer's operation finds it.
	msgBuf := s.local.Buf
	if s.read {
		msgBuf = s.remote.Buf
	}
	copy(msgBuf, s.message)
	s.tr.Data("own message in the %s buffer: %s", map[bool]string{false: "local", true: "remote"}[s.read], printable(msgBuf))
	for i, id := range []uint64{geekRecv0, geekRecv1} {
		if err := ep.PostRecv(uverbs.RecvWR{ID: id, SGEs: []uverbs.SGE{s.msgs.SGE((i+1)*geekMsgLen, geekMsgLen)}}); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (s *geekRDMA) sendMsg(ep Endpoint, id uint64, m geekMsg) error {
	m.encode(s.msgs.Buf[:geekMsgLen])
	what := map[uint32]string{geekMsgMR: "MSG_MR", geekMsgDone: "MSG_DONE"}[m.Type]
	s.tr.Data("send %s: addr=%#x length=%d rkey=%#x", what, m.MR.Addr, m.MR.Length, m.MR.RKey)
	return ep.PostSend(uverbs.SendWR{ID: id, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{s.msgs.SGE(0, geekMsgLen)}})
}

func (s *geekRDMA) sendMR(ep Endpoint) error {
	return s.sendMsg(ep, geekSendMR, geekMsg{Type: geekMsgMR, MR: geekMR{
		Addr: s.remote.Addr, Length: geekBufferSize, LKey: s.remote.LKey, RKey: s.remote.RKey}})
}

func (s *geekRDMA) run(ctx context.Context, ep Endpoint) error {
	if s.client {
		if err := s.sendMR(ep); err != nil {
			return err
		}
	}
	for !(s.doneSent && s.doneRecv) {
		wc, err := ep.Next(ctx)
		if errors.Is(err, errPeerGone) || err == nil && wc.Status == uverbs.WCFlushError {
			// The peer disconnects once it has our MSG_DONE, possibly before
			// our SEND's completion is reported: then that completion is
			// flushed, and that is the normal end.
			if s.doneRecv && s.rdmaDone {
				break
			}
			return s.incomplete()
		}
		if err != nil {
			return err
		}
		if wc.Status != uverbs.WCSuccess {
			return wcError(geekWRName(wc.ID), wc)
		}
		if err := s.completed(ep, wc); err != nil {
			return err
		}
	}
	region := s.remote // write: where the peer wrote
	if s.read {
		region = s.local // read: where we read the peer's into
	}
	s.tr.Data("remote buffer: %s", printable(region.Buf))
	s.out("remote buffer: %s", cstring(region.Buf))
	return nil
}

// completed advances the exchange by one successful completion.
func (s *geekRDMA) completed(ep Endpoint, wc uverbs.WC) error {
	switch wc.ID {
	case geekRecv0, geekRecv1:
		off := geekMsgLen
		if wc.ID == geekRecv1 {
			off = 2 * geekMsgLen
		}
		if wc.ByteLen != geekMsgLen {
			return fmt.Errorf("received %d bytes, a geek message is %d: is the peer speaking --proto geek?", wc.ByteLen, geekMsgLen)
		}
		m, err := decodeGeekMsg(s.msgs.Buf[off : off+geekMsgLen])
		if err != nil {
			return err
		}
		switch {
		case m.Type == geekMsgMR && !s.peerMR:
			s.tr.Data("received MSG_MR: addr=%#x length=%d rkey=%#x", m.MR.Addr, m.MR.Length, m.MR.RKey)
			if m.MR.Length < geekBufferSize {
				return fmt.Errorf("the peer's buffer is %d bytes, the geek exchange moves %d", m.MR.Length, geekBufferSize)
			}
			s.peer, s.peerMR = m.MR, true
			if !s.client {
				if err := s.sendMR(ep); err != nil {
					return err
				}
			}
		case m.Type == geekMsgMR && s.peerMR && !s.mrAgain && m.MR == s.peer:
			// The C client sends its MSG_MR twice when our MSG_MR's
			// completion reaches it before its own SEND's: on_completion
			// (02_read-write/rdma-common.c) answers a received MSG_MR with
			// send_mr while send_state is still SS_INIT, which it is until
			// that SEND's completion has been polled. The C receiver counts
			// it as one of its two messages and re-arms a receive after
			// every MSG_MR; ours re-arms too and still waits for MSG_DONE.
			s.tr.Data("received MSG_MR again (the same region): receive re-posted for MSG_DONE")
			s.mrAgain = true
			return ep.PostRecv(uverbs.RecvWR{ID: wc.ID, SGEs: []uverbs.SGE{s.msgs.SGE(off, geekMsgLen)}})
		case m.Type == geekMsgDone && s.peerMR:
			s.tr.Data("received MSG_DONE")
			s.doneRecv = true
			if err := s.sendDone(ep); err != nil {
				return err
			}
		default:
			return fmt.Errorf("received geek message type %d out of order", m.Type)
		}
	case geekSendMR:
		s.mrSent = true
	case geekOpID:
		s.rdmaDone = true
		if err := s.sendDone(ep); err != nil {
			return err
		}
	case geekDone:
		s.doneSent = true
	default:
		return fmt.Errorf("completion of unknown work request %d", wc.ID)
	}
	if s.mrSent && s.peerMR && !s.rdmaPosted {
		s.rdmaPosted = true
		op, verb := uverbs.OpWrite, "writing message to"
		if s.read {
			op, verb = uverbs.OpRead, "reading message from"
		}
		s.tr.Data("%s remote memory", verb)
		// The DONE follows once the operation has completed (the C
		// programs post it right after), so the peer's buffer is final
		// when the peer hears DONE.
		return ep.PostSend(uverbs.SendWR{ID: geekOpID, Op: op, Flags: uverbs.SendSignaled,
			SGEs: []uverbs.SGE{s.local.SGE(0, geekBufferSize)}, RemoteAddr: s.peer.Addr, RKey: s.peer.RKey})
	}
	return nil
}

// sendDone sends MSG_DONE once our operation on the peer's buffer has
// completed and, on the server, once the client's MSG_DONE has arrived. The
// C client posts the receive for our MSG_DONE only when it handles our
// MSG_MR (02_read-write/rdma-common.c on_completion re-arms after each
// MSG_MR), relying on RNR retries for a MSG_DONE that comes sooner; iWARP
// has none, and there such a SEND ends the connection. The client's
// MSG_DONE is posted after that re-arm, so once it is here the receive is.
func (s *geekRDMA) sendDone(ep Endpoint) error {
	if !s.rdmaDone || s.donePosted || !s.client && !s.doneRecv {
		return nil
	}
	s.donePosted = true
	return s.sendMsg(ep, geekDone, geekMsg{Type: geekMsgDone})
}

func (s *geekRDMA) incomplete() error {
	switch {
	case !s.peerMR:
		return errors.New("the peer disconnected before sending its MSG_MR")
	case !s.doneRecv:
		return errors.New("the peer disconnected before sending MSG_DONE")
	}
	return errors.New("the peer disconnected before our MSG_DONE was sent")
}

func geekWRName(id uint64) string {
	switch id {
	case geekRecv0, geekRecv1:
		return "RECV"
	case geekSendMR:
		return "SEND of MSG_MR"
	case geekOpID:
		return "RDMA operation on the peer's buffer"
	case geekDone:
		return "SEND of MSG_DONE"
	case geekSendID:
		return "SEND of the message"
	}
	return fmt.Sprintf("work request %d", id)
}

// geekSend is 01_basic-client-server.
type geekSend struct {
	env
	send, recv         *Region
	sendDone, recvDone bool
}

func newGeekSend(e env) session { return &geekSend{env: e} }

func (s *geekSend) prepare(ep Endpoint) ([]byte, error) {
	var err error
	if s.send, err = ep.Register("send", geekBufferSize, 0); err != nil {
		return nil, err
	}
	if s.recv, err = ep.Register("recv", geekBufferSize, uverbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	copy(s.send.Buf, s.message)
	return nil, ep.PostRecv(uverbs.RecvWR{ID: geekRecv0, SGEs: []uverbs.SGE{s.recv.SGE(0, geekBufferSize)}})
}

func (s *geekSend) run(ctx context.Context, ep Endpoint) error {
	s.tr.Data("send message: %s", printable(s.send.Buf))
	if err := ep.PostSend(uverbs.SendWR{ID: geekSendID, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{s.send.SGE(0, geekBufferSize)}}); err != nil {
		return err
	}
	for !(s.sendDone && s.recvDone) {
		wc, err := ep.Next(ctx)
		if errors.Is(err, errPeerGone) || err == nil && wc.Status == uverbs.WCFlushError {
			// A peer that has our message may disconnect before our SEND's
			// completion is reported: its flush is the normal end. Without
			// the peer's message it is not.
			if s.recvDone {
				return nil
			}
			return errors.New("the peer disconnected before its message arrived")
		}
		if err != nil {
			return err
		}
		if wc.Status != uverbs.WCSuccess {
			return wcError(geekWRName(wc.ID), wc)
		}
		switch wc.ID {
		case geekSendID:
			s.sendDone = true
		case geekRecv0:
			s.recvDone = true
			msg := s.recv.Buf[:min(int(wc.ByteLen), len(s.recv.Buf))]
			s.tr.Data("received message: %s", printable(msg))
			s.out("received message: %s", cstring(msg))
		default:
			return fmt.Errorf("completion of unknown work request %d", wc.ID)
		}
	}
	return nil
}
