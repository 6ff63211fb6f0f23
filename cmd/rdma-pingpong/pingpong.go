package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"time"

	"github.com/goverbs/rdma/cmd/internal/device"
	"github.com/goverbs/rdma/uverbs"
)

// Work request IDs, and the bits of what one exchange still waits for
// (rdma-core: PINGPONG_RECV_WRID, PINGPONG_SEND_WRID).
const (
	recvID = 1
	sendID = 2
)

const (
	// udQKey is the QKey of both UD QPs (ud_pingpong.c).
	udQKey = 0x11111111
	// grhLen is the room a UD receive needs before the message for the GRH.
	grhLen = 40
	// Fill byte of the buffers (rc_pingpong.c: memset(ctx->buf, 0x7b, size)).
	fillByte = 0x7b
)

// session is one side of a ping-pong: the verbs objects and the counters.
type session struct {
	o      options
	ctx    *uverbs.Device
	ch     *uverbs.CompChannel
	pd     *uverbs.PD
	buf    *uverbs.Buffer
	mr     *uverbs.MR
	cq     *uverbs.CQ
	qp     *uverbs.QP
	ah     *uverbs.AH // UD
	port   uverbs.PortAttr
	grh    bool // the port needs a GRH on every path (RoCE)
	sgid   int  // local GID index of the path
	data   []byte
	inline bool

	recvs    []uverbs.RecvWR
	sends    []uverbs.SendWR
	routs    int // receives posted and not completed
	pending  int // recvID|sendID bits the current exchange waits for
	rcnt     int
	scnt     int
	peer     dest
	wcs      [16]uverbs.WC
	spinning int
}

// pingpong runs one side with options o.
func pingpong(ctx context.Context, o options, stdout io.Writer) (err error) {
	s := &session{o: o}
	defer func() { err = errors.Join(err, s.close()) }()
	if err := s.setup(); err != nil {
		return err
	}

	me := dest{LID: s.port.LID, QPN: s.qp.QPN(), PSN: rand.Uint32() & 0xffffff}
	known := false
	switch {
	case o.gidIdx >= 0:
		e, err := s.ctx.QueryGID(uint8(o.ibPort), o.gidIdx)
		if err != nil {
			return fmt.Errorf("can't read GID index %d of %s port %d: %w", o.gidIdx, s.ctx.Name(), o.ibPort, err)
		}
		me.GID, s.sgid, known = e.GID, o.gidIdx, true
	case !s.grh:
		known = true // InfiniBand: LIDs suffice, as with rdma-core's default
	}
	if known {
		fmt.Fprintf(stdout, "  local address:  %v\n", me)
	}
	// local completes this side's address once the TCP connection is up:
	// without -g on RoCE, the GID is that of the connection's local address.
	local := func(a net.Addr) (dest, error) {
		if known {
			return me, nil
		}
		ip := a.(*net.TCPAddr).AddrPort().Addr().Unmap()
		idx, err := s.ctx.GIDIndexForIP(uint8(o.ibPort), ip)
		if err != nil {
			return dest{}, fmt.Errorf("no GID for the local address %v of the TCP connection (%w); pass -g with a GID index of %s port %d (rdma-devinfo -v lists them)", ip, err, s.ctx.Name(), o.ibPort)
		}
		me.GID, s.sgid = uverbs.GIDFromIP(ip), idx
		fmt.Fprintf(stdout, "  local address:  %v\n", me)
		return me, nil
	}

	if o.server != "" {
		s.peer, err = clientExchange(ctx, o.server, o.port, local)
	} else {
		s.peer, err = serverExchange(ctx, o.port, local, func(peer dest) error { return s.connect(me, peer) })
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "  remote address: %v\n", s.peer)
	if o.server != "" {
		if err := s.connect(me, s.peer); err != nil {
			return err
		}
	}

	elapsed, err := s.loop(ctx)
	if err != nil {
		return err
	}
	usec := float64(elapsed.Microseconds())
	if usec == 0 {
		usec = 1
	}
	bytes := int64(o.size) * int64(o.iters) * 2
	fmt.Fprintf(stdout, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec/1e6, float64(bytes)*8/usec)
	fmt.Fprintf(stdout, "%d iters in %.2f seconds = %.2f usec/iter\n", o.iters, usec/1e6, usec/float64(o.iters))
	if o.check {
		if o.server != "" {
			return checkPattern(s.data)
		}
		return checkReceived(s.data)
	}
	return nil
}

// setup creates the verbs objects, moves the QP to INIT and posts the
// receives (rdma-core: pp_init_ctx and the first pp_post_recv).
func (s *session) setup() error {
	o := s.o
	if err := refuseIWARP(o.dev); err != nil {
		return err
	}
	var err error
	if s.ctx, s.port, err = device.OpenPort(o.dev, o.ibPort); err != nil {
		return err
	}
	s.grh = s.port.GRHRequired() || s.port.LinkLayer == uverbs.LinkLayerEthernet
	if !s.grh && s.port.LID == 0 {
		return fmt.Errorf("port %d of %s has no LID: is a subnet manager running?", o.ibPort, s.ctx.Name())
	}
	active := s.port.ActiveMTU
	if o.qpType == uverbs.UD && o.size > active.Bytes() {
		return fmt.Errorf("a UD message must fit in the port's active MTU: -s %d is larger than %d (%s port %d)", o.size, active.Bytes(), s.ctx.Name(), o.ibPort)
	}
	if o.qpType == uverbs.RC && o.mtu > active {
		return fmt.Errorf("path MTU %d is larger than the active MTU %d of %s port %d: pass -m %d or less", o.mtu.Bytes(), active.Bytes(), s.ctx.Name(), o.ibPort, active.Bytes())
	}

	if o.events {
		if s.ch, err = s.ctx.NewCompChannel(); err != nil {
			return err
		}
	}
	if s.pd, err = s.ctx.AllocPD(); err != nil {
		return err
	}
	// One buffer both sends and receives, as in the C programs: the server
	// sends back what it last received. UD receives put the GRH first.
	head := 0
	if o.qpType == uverbs.UD {
		head = grhLen
	}
	if s.buf, err = uverbs.AllocBuffer(head + o.size); err != nil {
		return err
	}
	mem := s.buf.Bytes()
	for i := range mem {
		mem[i] = fillByte
	}
	s.data = mem[head:]
	if s.mr, err = s.pd.RegMR(mem, uverbs.AccessLocalWrite); err != nil {
		return err
	}
	if s.cq, err = s.ctx.CreateCQ(uverbs.CQInit{Depth: o.rxDepth + 1, Channel: s.ch}); err != nil {
		return err
	}
	s.qp, err = s.pd.CreateQP(uverbs.QPInit{
		Type: o.qpType, SendCQ: s.cq, RecvCQ: s.cq,
		Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: o.rxDepth, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	if err != nil {
		return err
	}
	// Send inline when the QP can carry the whole message (rdma-core does).
	s.inline = s.qp.Cap().MaxInline >= o.size

	init := uverbs.InitAttr{Port: uint8(o.ibPort)}
	if o.qpType == uverbs.UD {
		init.QKey = udQKey
	}
	if err := s.qp.ToInit(init); err != nil {
		return err
	}

	recv := []uverbs.SGE{s.mr.SGE(0, head+o.size)}
	s.recvs = make([]uverbs.RecvWR, o.rxDepth)
	for i := range s.recvs {
		s.recvs[i] = uverbs.RecvWR{ID: recvID, SGEs: recv}
	}
	flags := uverbs.SendSignaled
	if s.inline {
		flags |= uverbs.SendInline
	}
	s.sends = []uverbs.SendWR{{ID: sendID, Op: uverbs.OpSend, Flags: flags, SGEs: []uverbs.SGE{s.mr.SGE(head, o.size)}}}
	if err := s.postRecvs(o.rxDepth); err != nil {
		return err
	}
	if s.ch != nil {
		if err := s.cq.ReqNotify(false); err != nil {
			return err
		}
	}
	return nil
}

// connect addresses the QP to the peer and moves it to RTS; for UD it
// creates the address handle instead (rdma-core: pp_connect_ctx).
func (s *session) connect(me, peer dest) error {
	o := s.o
	if !peer.hasInterfaceID() && s.grh {
		return fmt.Errorf("the peer sent no GID, but %s port %d needs one (RoCE): start the peer with -g and the index of its GID for the address it talks over", s.ctx.Name(), o.ibPort)
	}
	// rdma-core sends with a hop limit of 1; rxe uses the route's for RoCE v2.
	av := uverbs.AHAttr{DLID: peer.LID, SL: uint8(o.sl), Port: uint8(o.ibPort)}
	if peer.hasInterfaceID() {
		av.DGID, av.SGIDIndex, av.HopLimit = peer.GID, s.sgid, 1
	}

	if o.qpType == uverbs.UD {
		if err := s.qp.ToRTR(uverbs.RTRAttr{}); err != nil {
			return err
		}
		if err := s.qp.ToRTS(uverbs.RTSAttr{SQPSN: me.PSN}); err != nil {
			return err
		}
		ah, err := s.pd.CreateAH(av)
		if err != nil {
			return fmt.Errorf("address handle for %v: %w", peer.GID, err)
		}
		s.ah = ah
		s.sends[0].AH, s.sends[0].RemoteQPN, s.sends[0].RemoteQKey = ah, peer.QPN, udQKey
		return nil
	}

	const maxRDAtomic, minRNRTimer = 1, 12 // rc_pingpong.c
	if av.DGID.IsZero() {
		// A LID-routed InfiniBand path: ToRTR insists on a GID, so set the
		// same attributes by hand.
		attr := uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: o.mtu, DestQPN: peer.QPN, RQPSN: peer.PSN,
			MaxDestRDAtomic: maxRDAtomic, MinRNRTimer: minRNRTimer, AH: av}
		mask := uverbs.QPAttrState | uverbs.QPAttrAV | uverbs.QPAttrPathMTU | uverbs.QPAttrDestQPN |
			uverbs.QPAttrRQPSN | uverbs.QPAttrMaxDestRDAtomic | uverbs.QPAttrMinRNRTimer
		if err := s.qp.Modify(&attr, mask); err != nil {
			return err
		}
	} else if err := s.qp.ToRTR(uverbs.RTRAttr{PathMTU: o.mtu, DestQPN: peer.QPN, RQPSN: peer.PSN,
		MaxDestRDAtomic: maxRDAtomic, MinRNRTimer: minRNRTimer, AH: av}); err != nil {
		return err
	}
	return s.qp.ToRTS(uverbs.RTSAttr{SQPSN: me.PSN, Timeout: 14, RetryCount: 7, RNRRetry: 7, MaxRDAtomic: maxRDAtomic})
}

func (s *session) postRecvs(n int) error {
	if err := s.qp.PostRecv(s.recvs[:n]); err != nil {
		return fmt.Errorf("couldn't post %d receives: %w", n, err)
	}
	s.routs += n
	return nil
}

func (s *session) postSend() error {
	if err := s.qp.PostSend(s.sends); err != nil {
		return fmt.Errorf("couldn't post send: %w", err)
	}
	s.pending = recvID | sendID
	return nil
}

// loop runs the exchanges and returns their duration: the client sends
// first; each side sends again once its last send and a receive completed,
// until it has sent and received -n messages.
func (s *session) loop(ctx context.Context) (time.Duration, error) {
	s.pending = recvID
	if s.o.server != "" {
		if s.o.check {
			fillPattern(s.data)
		}
		if err := s.postSend(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for s.rcnt < s.o.iters || s.scnt < s.o.iters {
		if s.ch != nil {
			// Wait, re-arm, then poll: a completion that came before the
			// re-arm is polled now, a later one raises the next event.
			cq, err := s.ch.Wait(ctx)
			if err != nil {
				return 0, fmt.Errorf("waiting for a completion event: %w", err)
			}
			if cq != s.cq {
				return 0, errors.New("completion event for an unknown CQ")
			}
			if err := s.cq.ReqNotify(false); err != nil {
				return 0, err
			}
			for {
				n, err := s.poll()
				if err != nil || n == 0 {
					if err != nil {
						return 0, err
					}
					break
				}
			}
			continue
		}
		n, err := s.poll()
		if err != nil {
			return 0, err
		}
		if n == 0 {
			// Busy polling, as the C programs do; look at ctx now and
			// then so that a lost peer can be given up on.
			if s.spinning++; s.spinning%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return 0, fmt.Errorf("after %d sends and %d receives: %w", s.scnt, s.rcnt, err)
				}
				runtime.Gosched()
			}
		}
	}
	return time.Since(start), nil
}

// poll handles the completions the CQ holds (rdma-core: parse_single_wc).
func (s *session) poll() (int, error) {
	n, err := s.cq.Poll(s.wcs[:])
	if err != nil {
		return 0, err
	}
	for _, wc := range s.wcs[:n] {
		if wc.Status != uverbs.WCSuccess {
			return n, fmt.Errorf("failed status %v (%d) for wr_id %d after %d sends and %d receives", wc.Status, wc.Status, wc.ID, s.scnt, s.rcnt)
		}
		switch wc.ID {
		case sendID:
			s.scnt++
		case recvID:
			// Refill when one receive is left, as the C programs do.
			if s.routs--; s.routs <= 1 {
				if err := s.postRecvs(s.o.rxDepth - s.routs); err != nil {
					return n, err
				}
			}
			s.rcnt++
		default:
			return n, fmt.Errorf("completion for unknown wr_id %d", wc.ID)
		}
		s.pending &^= int(wc.ID)
		if s.scnt < s.o.iters && s.pending == 0 {
			if err := s.postSend(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// close destroys everything, the QP first (its Close flushes the receives
// still posted), as rdma-core's pp_close_ctx does.
func (s *session) close() error {
	return errors.Join(
		s.qp.Close(),
		s.ah.Close(),
		s.cq.Close(),
		s.mr.Close(),
		s.buf.Close(),
		s.pd.Close(),
		s.ch.Close(),
		s.ctx.Close(),
	)
}

// fillPattern writes what the client sends with -c. rdma-core's client
// writes 0 at the start of every page of its 0x7b-filled buffer and its
// server checks those bytes (rc_pingpong.c, ud_pingpong.c validate_buf);
// this pattern has the same zeros, and differs from the fill byte almost
// everywhere else, so that a server that sent back its own buffer instead of
// what it received is caught too.
func fillPattern(b []byte) {
	for i := range b {
		b[i] = patternByte(i)
	}
}

const checkPage = 4096 // rdma-core checks every page_size bytes: 4 KiB on x86

func patternByte(i int) byte {
	if i%checkPage == 0 {
		return 0
	}
	return byte(i%251) ^ 0x5a
}

// checkPattern verifies, on the client, that the server sent back the
// pattern.
func checkPattern(b []byte) error {
	bad, first := 0, -1
	for i, c := range b {
		if c != patternByte(i) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("invalid data: %d of the %d bytes received differ from those sent, the first at offset %d (got %#02x, sent %#02x)", bad, len(b), first, b[first], patternByte(first))
	}
	return nil
}

// checkReceived verifies, on the server, that the last message received is
// what a client with -c sends: this program's pattern, or rdma-core's (zeros
// at page starts, the fill byte elsewhere).
func checkReceived(b []byte) error {
	for i := 0; i < len(b); i += checkPage {
		if b[i] != 0 {
			return fmt.Errorf("invalid data in page %d: byte %d is %#02x, the client sent 0 (was it started with -c?)", i/checkPage, i, b[i])
		}
	}
	ours, theirs := true, true
	for i, c := range b {
		ours = ours && c == patternByte(i)
		theirs = theirs && (c == fillByte || i%checkPage == 0)
	}
	if !ours && !theirs {
		return errors.New("invalid data: the last message received is neither this program's -c pattern nor rdma-core's")
	}
	return nil
}

// refuseIWARP fails at once on an iWARP device, before anything is opened
// or the exchange waits for a peer. An iWARP QP reaches RTS only through the
// iWARP CM, which hands the driver the connection's TCP socket after the MPA
// exchange; a modify_qp to RTS from user space carries no socket and fails
// (kernel: drivers/infiniband/sw/siw/siw_qp.c siw_qp_nextstate_from_idle,
// "no socket"), so the out-of-band connect of this protocol (rdma-core:
// libibverbs/examples/rc_pingpong.c pp_connect_ctx) cannot work. iWARP has
// no UD either.
func refuseIWARP(name string) error {
	info, err := uverbs.LookupDevice(name)
	if err != nil {
		return err
	}
	if info.Transport() == uverbs.TransportIWARP {
		return fmt.Errorf("%s is an iWARP device (%s): its QPs are connected only through the RDMA CM, not by the address exchange of rdma-pingpong; use rping or rdma-perf -R on it instead", info.Name, info.Driver)
	}
	return nil
}
