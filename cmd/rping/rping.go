package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// The protocol of rping.c. Each ping:
//
//	client: SEND source info {addr, rkey, size} of its ping buffer
//	server: RDMA READ of that buffer, then a SEND "go ahead"
//	client: SEND sink info of its second buffer
//	server: RDMA WRITE of what it read (strlen + 1 bytes), then a SEND "go ahead"
//
// The info message is struct rping_rdma_info: __be64 buf, __be32 rkey,
// __be32 size, 16 bytes in network order. The go-ahead is a SEND of the same
// 16-byte buffer, whose content the client ignores; both sides take a
// receive that is not exactly 16 bytes as an error ("Received bogus data").
const infoLen = 16

// rdmaInfo is struct rping_rdma_info.
type rdmaInfo struct {
	addr uint64
	rkey uint32
	size uint32
}

func (i rdmaInfo) put(b []byte) {
	binary.BigEndian.PutUint64(b[0:], i.addr)
	binary.BigEndian.PutUint32(b[8:], i.rkey)
	binary.BigEndian.PutUint32(b[12:], i.size)
}

func getInfo(b []byte) rdmaInfo {
	return rdmaInfo{
		addr: binary.BigEndian.Uint64(b[0:]),
		rkey: binary.BigEndian.Uint32(b[8:]),
		size: binary.BigEndian.Uint32(b[12:]),
	}
}

// Queue sizes of rping.c: RPING_SQ_DEPTH (16) sends, 2 receives (one posted
// at a time), a CQ of twice RPING_SQ_DEPTH, one SGE each.
const (
	sqDepth = 16
	rqDepth = 2
)

// fillPing writes ping number ping into buf as rping_test_client does:
// "rdma-ping-%d: " (cut to fit, as snprintf does), then the letters from
// start on, each one more than the last, from 'A' (65) to 'z' (122) and
// round again; the last byte is 0.
func fillPing(buf []byte, ping int, start byte) {
	n := copy(buf, "rdma-ping-"+strconv.Itoa(ping)+": ")
	c := start
	for i := n; i < len(buf); i++ {
		buf[i] = c
		if c++; c > 'z' {
			c = 'A'
		}
	}
	buf[len(buf)-1] = 0
}

// nextStart is the first letter of the following ping: one more, from 'z'
// back to 'A'.
func nextStart(start byte) byte {
	if start++; start > 'z' {
		return 'A'
	}
	return start
}

// cstr returns b up to its first 0, as printf's %s reads it.
func cstr(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// errDisconnected: the connection ended (DISCONNECTED, or the QP flushed
// what was posted).
var errDisconnected = errors.New("disconnected")

// Work request IDs.
const (
	wrRecv  = 1
	wrSend  = 2
	wrRDMA  = 3
	wrNudge = 4 // a zero-length RDMA READ or WRITE (see siwNudgeEvery)
)

// siw, the soft-iWARP driver, can leave the client's first message unread
// in the server's socket until the client sends again (docs/siw.md §10):
// kernel siw_cm.c siw_accept sends the MPA reply before it hands the
// socket to the QP (siw_qp_socket_assoc), data that lands in between meets
// the CM's data_ready callback, which ignores it, and nothing looks at the
// socket again before the next segment. rping's client sends first and
// then waits, so both sides would wait for good; rdma-core's rping does.
// Any later segment from the client makes siw read what waits, and a
// zero-length RDMA WRITE or READ is one that touches no memory (siw checks
// no key of a zero-length SGE: siw_qp_tx.c siw_check_sgl_tx; siw_qp_rx.c
// siw_proc_write and siw_proc_rresp place nothing for zero bytes). So, on
// a siw device, a side that waits for its peer's first message nudges:
//
//   - the client RDMA WRITEs zero bytes each siwNudgeEvery. It cannot
//     tell when the server's socket was handed over, and only the server's
//     first message proves it was.
//   - the server RDMA READs zero bytes, after siwServerNudgeEvery, which
//     the client's kernel answers. It must not send earlier: what it sends
//     before the client's siw has taken the MPA reply breaks the connect
//     (docs/siw.md §9: "peer sent extra data"; also seen when the READ
//     went out as soon as Accept returned), and the client's siw either
//     takes the reply or gives the connection up within MPAREQ_TIMEOUT,
//     10 s from its request (siw_cm.c siw_cm_queue_work, state
//     SIW_EPSTATE_AWAIT_MPAREP). That covers clients that do not nudge,
//     such as rdma-core's rping.
const (
	siwNudgeEvery       = time.Second
	siwServerNudgeEvery = 15 * time.Second
)

// session is one connection: its buffers and completion handling.
type session struct {
	o    options
	name string // "server" or "client", as rping prints it
	conn *rdmacm.Conn
	out  *cmdline.LockedWriter
	errw *cmdline.LockedWriter

	// One buffer holds the 16-byte receive and send areas, the RDMA buffer
	// (the client's sink, the server's READ target and WRITE source) and
	// the client's ping source; each is a separate MR with the access
	// rping.c gives it.
	// The MRs are the connection's (Conn.RegMR): Shutdown deregisters them.
	buf     *uverbs.Buffer
	ctlMR   *uverbs.MR // receive (0..15) and send (16..31) areas: local write
	rdmaMR  *uverbs.MR // local write, remote read and write
	startMR *uverbs.MR // client only: local write, remote read and write

	// Done closes when the connection ends; dctx ends with it so that a
	// wait on the completion channel stops.
	dctx   context.Context
	cancel context.CancelFunc

	wcs      [8]uverbs.WC
	queued   []uverbs.WC
	recvCopy [infoLen]byte // the last message received

	// awaitingPeer: a session on a siw device that has not yet received
	// the peer's first message, which it nudges every nudgeEvery (see
	// siwNudgeEvery).
	awaitingPeer bool
	nudgeEvery   time.Duration
}

const (
	recvOff = 0
	sendOff = infoLen
	ctlLen  = 2 * infoLen
	rdmaOff = 64
)

func newSession(ctx context.Context, o options, name string, conn *rdmacm.Conn, out, errw *cmdline.LockedWriter) (*session, error) {
	s := &session{o: o, name: name, conn: conn, out: out, errw: errw}
	if dev, ok := conn.DeviceInfo(); ok && dev.DriverID == uverbs.DriverSIW {
		s.awaitingPeer, s.nudgeEvery = true, siwNudgeEvery
		if o.server {
			s.nudgeEvery = siwServerNudgeEvery
		}
	}
	s.dctx, s.cancel = context.WithCancel(ctx)
	go func() {
		select {
		case <-conn.Done():
		case <-s.dctx.Done():
		}
		s.cancel()
	}()
	total := rdmaOff + o.size
	if !o.server {
		total += o.size
	}
	buf, err := uverbs.AllocBuffer(total)
	if err != nil {
		return s, err
	}
	s.buf = buf
	remote := uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite
	b := buf.Bytes()
	if s.ctlMR, err = conn.RegMR(b[:ctlLen], uverbs.AccessLocalWrite); err != nil {
		return s, err
	}
	if s.rdmaMR, err = conn.RegMR(b[rdmaOff:rdmaOff+o.size], remote); err != nil {
		return s, err
	}
	if !o.server {
		if s.startMR, err = conn.RegMR(b[rdmaOff+o.size:rdmaOff+2*o.size], remote); err != nil {
			return s, err
		}
	}
	s.debugf("allocated & registered buffers...")
	return s, s.postRecv()
}

// shutdownWait bounds how long close waits for the CM to confirm the
// disconnect: a peer that is gone never answers, and the CM's own
// retries are not worth waiting for at exit.
const shutdownWait = 2 * time.Second

// close tears down in the order that never frees memory under work in
// flight: Shutdown (disconnect, flush the QP, deregister the MRs), then
// the buffer, then the rest of the connection.
func (s *session) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	err := s.conn.Shutdown(ctx)
	if errors.Is(err, rdmacm.ErrNotConnected) || errors.Is(err, context.DeadlineExceeded) {
		err = nil // never connected, or a peer that does not answer
	}
	err = errors.Join(err, s.buf.Close(), s.conn.Close())
	s.cancel()
	return err
}

func (s *session) debugf(format string, a ...any) {
	if s.o.debug {
		s.out.Printf(format+"\n", a...)
	}
}

func (s *session) recvArea() []byte { return s.buf.Bytes()[recvOff : recvOff+infoLen] }
func (s *session) sendArea() []byte { return s.buf.Bytes()[sendOff : sendOff+infoLen] }
func (s *session) rdmaBuf() []byte  { return s.buf.Bytes()[rdmaOff : rdmaOff+s.o.size] }
func (s *session) startBuf() []byte {
	return s.buf.Bytes()[rdmaOff+s.o.size : rdmaOff+2*s.o.size]
}

func (s *session) postRecv() error {
	return s.conn.QP().PostRecv([]uverbs.RecvWR{{ID: wrRecv, SGEs: []uverbs.SGE{s.ctlMR.SGE(recvOff, infoLen)}}})
}

// send posts the 16-byte send area as a signaled SEND.
func (s *session) send() error {
	return s.conn.QP().PostSend([]uverbs.SendWR{{ID: wrSend, Op: uverbs.OpSend, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{s.ctlMR.SGE(sendOff, infoLen)}}})
}

// sendInfo sends the address, rkey and size of mr (rping_format_send).
func (s *session) sendInfo(mr *uverbs.MR) error {
	i := rdmaInfo{addr: mr.Addr(), rkey: mr.RKey(), size: uint32(s.o.size)}
	i.put(s.sendArea())
	s.debugf("RDMA addr %x rkey %x len %d", i.addr, i.rkey, i.size)
	return s.send()
}

// rdma posts a signaled RDMA READ or WRITE of n bytes of the RDMA buffer.
func (s *session) rdma(op uverbs.WROpcode, n int, peer rdmaInfo) error {
	return s.conn.QP().PostSend([]uverbs.SendWR{{ID: wrRDMA, Op: op, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{s.rdmaMR.SGE(0, n)}, RemoteAddr: peer.addr, RKey: peer.rkey}})
}

// nudge posts the zero-length operation of siwNudgeEvery: an RDMA WRITE
// from the client, an RDMA READ from the server. Neither names remote
// memory; the READ's sink is an SGE of zero bytes (siw gives a READ
// exactly one: siw_qp.c siw_activate_tx_from_sq).
func (s *session) nudge() error {
	op, what := uverbs.OpWrite, "write"
	if s.o.server {
		op, what = uverbs.OpRead, "read"
	}
	s.debugf("siw: zero-length rdma %s, so that the peer's siw reads what waits in its socket", what)
	return s.conn.QP().PostSend([]uverbs.SendWR{{ID: wrNudge, Op: op, Flags: uverbs.SendSignaled,
		SGEs: []uverbs.SGE{s.rdmaMR.SGE(0, 0)}}})
}

// next returns the next completion, sleeping on the completion channel
// when the CQ is empty (CQ.PollWait). It returns errDisconnected once the
// connection has ended and the CQ is empty. On siw, until the peer's first
// message it nudges the peer (siwNudgeEvery) each nudgeEvery that passes
// without a completion.
func (s *session) next(ctx context.Context) (uverbs.WC, error) {
	for len(s.queued) == 0 {
		if err := ctx.Err(); err != nil {
			return uverbs.WC{}, err
		}
		wctx, cancel := s.dctx, context.CancelFunc(nil)
		nudging := s.awaitingPeer
		if nudging {
			wctx, cancel = context.WithTimeout(s.dctx, s.nudgeEvery)
		}
		n, err := s.conn.CQ().PollWait(wctx, s.wcs[:])
		if cancel != nil {
			cancel()
		}
		if err != nil {
			if s.dctx.Err() != nil && ctx.Err() == nil {
				return uverbs.WC{}, errDisconnected
			}
			if nudging && s.dctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				// A QP already in the error state refuses the post
				// (docs/siw.md §9), and one that siw is taking out
				// of RTS (the peer going away) refuses its doorbell
				// with ENOTCONN: the flush or the disconnect that
				// comes next ends the wait.
				if err := s.nudge(); err != nil && !errors.Is(err, uverbs.ErrQPState) && !errors.Is(err, syscall.ENOTCONN) {
					return uverbs.WC{}, err
				}
				continue
			}
			return uverbs.WC{}, err
		}
		s.queued = s.wcs[:n]
	}
	wc := s.queued[0]
	s.queued = s.queued[1:]
	return wc, nil
}

// wait returns the completion of kind want (RECV, RDMA_READ or
// RDMA_WRITE), taking SEND completions on the way. A receive is posted
// again at once, as rping's completion handler does, so the peer's next
// message always finds one. A failed completion is an error; a flushed one
// means the connection ended.
func (s *session) wait(ctx context.Context, want uverbs.WCOpcode) (uverbs.WC, error) {
	for {
		wc, err := s.next(ctx)
		if err != nil {
			return wc, err
		}
		if wc.Status == uverbs.WCFlushError {
			return wc, errDisconnected
		}
		if wc.Status != uverbs.WCSuccess {
			err := fmt.Errorf("cq completion failed status %d (%v) on work request %d", uint32(wc.Status), wc.Status, wc.ID)
			s.debugf("%v", err)
			if s.peerWent(ctx, wc) {
				s.debugf("the peer went")
				return wc, errDisconnected
			}
			return wc, err
		}
		if wc.ID == wrNudge {
			s.debugf("zero-length rdma completion")
			continue
		}
		switch wc.Opcode {
		case uverbs.WCOpSend:
			s.debugf("send completion")
		case uverbs.WCOpRDMARead:
			s.debugf("rdma read completion")
		case uverbs.WCOpRDMAWrite:
			s.debugf("rdma write completion")
		case uverbs.WCOpRecv:
			s.debugf("recv completion")
			if wc.ByteLen != infoLen {
				return wc, fmt.Errorf("received bogus data, size %d (the rping messages are %d bytes)", wc.ByteLen, infoLen)
			}
		default:
			return wc, fmt.Errorf("unexpected completion %v", wc.Opcode)
		}
		if wc.Opcode == want {
			if want == uverbs.WCOpRecv {
				s.awaitingPeer = false
				// The message is read before the next receive can land.
				copy(s.recvCopy[:], s.recvArea())
				if err := s.postRecv(); err != nil {
					return wc, err
				}
			}
			return wc, nil
		}
		if wc.Opcode != uverbs.WCOpSend {
			return wc, fmt.Errorf("got a %v completion while waiting for %v", wc.Opcode, want)
		}
	}
}

// peerGoneWait bounds how long a failed completion waits for the CM to
// confirm that the peer went.
const peerGoneWait = 5 * time.Second

// peerWent tells whether the failed completion wc came from the peer going
// away under work in flight: its status is one that a vanished peer causes
// and the CM confirms the disconnect, now or within peerGoneWait. A process
// that exits frees its MRs and QP with its uverbs file and disconnects with
// its rdma_cm file, in either order. With its MRs gone first, a SEND into
// its posted receive fails to land (kernel rxe_resp.c send_data_in:
// RESPST_ERR_MALFORMED_WQE, answered with a remote operational error NAK,
// which rxe_comp.c completes as IB_WC_REM_OP_ERR), and an RDMA READ or
// WRITE fails its rkey check (rxe_resp.c check_rkey: a remote access error
// NAK, IB_WC_REM_ACCESS_ERR); with its QP gone first, nothing answers until
// the retries run out (IB_WC_RETRY_EXC_ERR). rping.c's
// rping_cq_event_handler prints "cq completion failed status N" for such a
// completion and the run exits -1, as it also does for a disconnect in the
// middle of a ping. Here both are the peer going, which is how an endless
// (-C 0) client stops; without the disconnect the error stands.
func (s *session) peerWent(ctx context.Context, wc uverbs.WC) bool {
	switch wc.Status {
	case uverbs.WCRemoteAccessError, uverbs.WCRemoteOpError, uverbs.WCRetryExceededError:
	default:
		return false
	}
	t := time.NewTimer(peerGoneWait)
	defer t.Stop()
	select {
	case <-s.conn.Done():
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// ended reports the end of the connection as rping does ("server
// DISCONNECT EVENT..." on stderr) once the CM confirms it.
func (s *session) ended() {
	select {
	case <-s.conn.Done():
		s.errw.Printf("%s DISCONNECT EVENT...\n", s.name)
	case <-time.After(5 * time.Second):
	}
}

// cmConfig is the connection's configuration: rping.c's queue sizes and,
// with -d, the CM's steps on stdout.
func cmConfig(o options, out *cmdline.LockedWriter) *rdmacm.Config {
	cfg := &rdmacm.Config{
		SendDepth: sqDepth,
		RecvDepth: rqDepth,
		CQDepth:   2 * sqDepth,
		// rping.c: rdma_resolve_addr and rdma_resolve_route with 2000 ms.
		ResolveTimeout: 2 * time.Second,
		// rping_bind_server: rdma_listen(cm_id, 3).
		Backlog: 3,
	}
	if !o.server {
		// rping_init_conn_param: one READ each way, 7 retries of each kind.
		cfg.ConnParam = &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	}
	if o.debug {
		cfg.Logf = func(format string, a ...any) { out.Printf("cm: "+format+"\n", a...) }
	}
	return cfg
}

// rping runs the client or the server.
func rping(ctx context.Context, o options, out, errw *cmdline.LockedWriter) error {
	// librdmacm refuses to start without a device ("No RDMA devices were
	// detected"); without this check a server would listen for nothing.
	if _, err := o.devices(); err != nil {
		return err
	}
	if o.server {
		return runServer(ctx, o, out, errw)
	}
	return runClient(ctx, o, out, errw)
}

func runClient(ctx context.Context, o options, out, errw *cmdline.LockedWriter) (err error) {
	cfg := cmConfig(o, out)
	if o.source != "" {
		src, err := rdmacm.ParseAddress(ctx, net.JoinHostPort(o.source, "0"))
		if err != nil {
			return fmt.Errorf("source address -I %s: %w", o.source, err)
		}
		cfg.Source = src.Addr()
	}
	addr := net.JoinHostPort(o.addr, strconv.Itoa(o.port))
	conn, err := rdmacm.Resolve(ctx, addr, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	s, err := newSession(ctx, o, "client", conn, out, errw)
	defer func() { err = errors.Join(err, s.close()) }()
	if err != nil {
		return err
	}
	if err := conn.Connect(ctx, nil); err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	s.debugf("rdma_connect successful")
	if testHookConnected != nil {
		testHookConnected()
	}
	err = s.client(ctx)
	if errors.Is(err, errDisconnected) {
		s.ended()
		if o.count == 0 {
			return nil // pinging until the server goes is the normal end
		}
		return fmt.Errorf("the server disconnected before the %d pings were done", o.count)
	}
	if err != nil {
		return err
	}
	// rping_disconnect, and rping's "client DISCONNECT EVENT..." once the
	// CM confirms.
	if err := conn.Disconnect(); err != nil {
		return err
	}
	s.ended()
	return nil
}

// client is rping_test_client.
func (s *session) client(ctx context.Context) error {
	start := byte('A')
	src, sink := s.startBuf(), s.rdmaBuf()
	for ping := 0; s.o.count == 0 || ping < s.o.count; ping++ {
		fillPing(src, ping, start)
		start = nextStart(start)
		if err := s.sendInfo(s.startMR); err != nil {
			return err
		}
		// The server READs the ping and says go ahead.
		if _, err := s.wait(ctx, uverbs.WCOpRecv); err != nil {
			return err
		}
		if err := s.sendInfo(s.rdmaMR); err != nil {
			return err
		}
		// The server WRITEs it back and says go ahead.
		if _, err := s.wait(ctx, uverbs.WCOpRecv); err != nil {
			return err
		}
		if s.o.validate {
			if i := firstDiff(src, sink); i >= 0 {
				return fmt.Errorf("data mismatch in ping %d: byte %d is %#02x, %#02x was sent", ping, i, sink[i], src[i])
			}
		}
		if s.o.verbose {
			s.out.Printf("ping data: %s\n", cstr(sink))
		}
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func runServer(ctx context.Context, o options, out, errw *cmdline.LockedWriter) error {
	host := o.addr
	if host == "" {
		host = "0.0.0.0" // rping.c: sin is AF_INET, INADDR_ANY, unless -a
	}
	addr := net.JoinHostPort(host, strconv.Itoa(o.port))
	l, err := rdmacm.Listen(ctx, addr, cmConfig(o, out))
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer l.Close()
	if o.debug {
		out.Printf("rdma_bind_addr successful\nrdma_listen\n")
	}
	if o.persistent {
		return persistentServer(ctx, o, l, out, errw)
	}
	conn, err := l.GetRequest(ctx)
	if err != nil {
		return err
	}
	// One connection: later requests are refused rather than left waiting.
	l.Close()
	return serve(ctx, o, conn, out, errw)
}

// persistentServer is rping -P: each connection is served on its own until
// the program is stopped.
func persistentServer(ctx context.Context, o options, l *rdmacm.Listener, out, errw *cmdline.LockedWriter) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.GetRequest(ctx)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := conn.RemoteAddr()
			if err := serve(ctx, o, conn, out, errw); err != nil && ctx.Err() == nil {
				errw.Printf("rping: connection from %v: %v\n", from, err)
			}
		}()
	}
}

// Hooks that only tests set. testHookAccept runs in serve just before the
// accept (the connection request has reached the program, its receive is
// posted), testHookAccepted just after it, testHookConnected in the client
// once connected, before its first message.
var testHookAccept, testHookAccepted, testHookConnected func()

// serve accepts conn and answers its pings until it ends (rping_test_server).
func serve(ctx context.Context, o options, conn *rdmacm.Conn, out, errw *cmdline.LockedWriter) (err error) {
	s, err := newSession(ctx, o, "server", conn, out, errw)
	defer func() { err = errors.Join(err, s.close()) }()
	if err != nil {
		conn.Reject(nil)
		return err
	}
	s.debugf("accepting client connection request")
	if testHookAccept != nil {
		testHookAccept()
	}
	if err := conn.Accept(ctx, nil); err != nil {
		return err
	}
	if testHookAccepted != nil {
		testHookAccepted()
	}
	err = s.server(ctx)
	if errors.Is(err, errDisconnected) {
		s.ended()
		return nil
	}
	return err
}

func (s *session) server(ctx context.Context) error {
	buf := s.rdmaBuf()
	for {
		// The client's ping source.
		if _, err := s.wait(ctx, uverbs.WCOpRecv); err != nil {
			return err
		}
		src := getInfo(s.recvCopy[:])
		s.debugf("Received rkey %x addr %x len %d from peer", src.rkey, src.addr, src.size)
		if int(src.size) > len(buf) {
			return fmt.Errorf("the client pings with %d bytes, more than this server's %d: start it with -S %d or more", src.size, len(buf), src.size)
		}
		if err := s.rdma(uverbs.OpRead, int(src.size), src); err != nil {
			return err
		}
		s.debugf("server posted rdma read req")
		if _, err := s.wait(ctx, uverbs.WCOpRDMARead); err != nil {
			return err
		}
		s.debugf("server received read complete")
		if s.o.verbose {
			s.out.Printf("server ping data: %s\n", cstr(buf))
		}
		if s.o.corrupt {
			buf[0] ^= 1
		}
		if err := s.send(); err != nil {
			return err
		}
		s.debugf("server posted go ahead")

		// The client's sink: write the ping back, its string and the 0.
		if _, err := s.wait(ctx, uverbs.WCOpRecv); err != nil {
			return err
		}
		sink := getInfo(s.recvCopy[:])
		s.debugf("Received rkey %x addr %x len %d from peer", sink.rkey, sink.addr, sink.size)
		n := min(len(cstr(buf))+1, len(buf))
		if n > int(sink.size) {
			return fmt.Errorf("the client's sink holds %d bytes, the ping has %d", sink.size, n)
		}
		s.debugf("rdma write from lkey %x laddr %x len %d", s.rdmaMR.LKey(), s.rdmaMR.Addr(), n)
		if err := s.rdma(uverbs.OpWrite, n, sink); err != nil {
			return err
		}
		if _, err := s.wait(ctx, uverbs.WCOpRDMAWrite); err != nil {
			return err
		}
		s.debugf("server rdma write complete")
		if err := s.send(); err != nil {
			return err
		}
		s.debugf("server posted go ahead")
	}
}
