package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"time"
	"unsafe"

	"github.com/goverbs/rdma/cmd/internal/device"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// session is one side of a test: the verbs objects, the peer's address and
// the preallocated state of the measured loops.
type session struct {
	o      options
	out    io.Writer
	errOut io.Writer
	ctx    context.Context
	m      *comm

	vdev *uverbs.Device // opened by this side (not with -R)
	conn *rdmacm.Conn   // -R
	pd   *uverbs.PD
	ch   *uverbs.CompChannel
	cq   *uverbs.CQ // one CQ for sends and receives
	qp   *uverbs.QP
	buf  *uverbs.Buffer
	mr   *uverbs.MR

	port    uverbs.PortAttr
	mtu     uverbs.MTU
	gidIdx  int
	me      dest
	peer    dest
	half    int    // bytes of each half of the buffer: sends from the first, the peer writes to the second
	local   uint64 // address of the first half
	recvBuf uint64 // address of the second half

	// qps are the test's QPs (-q), each with its own part of the buffer;
	// the first is qp, me, peer, local and recvBuf above.
	qps []*qpState

	// Preallocated for the loops: nothing below allocates per iteration.
	swr   [1]uverbs.SendWR
	sge   [1]uverbs.SGE
	wcs   [16]uverbs.WC
	posts []int64 // time of each post (tposted)
	comps []int64 // time of each signaled completion (tcompleted)

	// Completion counters of the running test.
	ccnt    int   // sends known complete (the ID of the last signaled one + 1)
	rcnt    int   // receives completed
	size    int   // message size of the running test
	spin    int   // empty polls, to look at the clock now and then
	yieldAt int64 // cycles() after which a polling loop yields (see idle)

	// Duration mode (perftest's catch_alarm states) and progress.
	clk                    clock
	sampleStart, sampleEnd time.Time
	deadline               time.Time
	sampleFrom, sampleTo   int // s.count at the window's ends; -1 before
	sampleT0, sampleT1     time.Time
	ibPort                 int
	nextPrint              int64 // cycles() after which the progress line is due
	tickEvery              int64
	started                time.Time
	count                  int // iterations done, for the progress line
	printed                bool
	// credits: send_bw over iWARP, where a SEND that finds no receive
	// posted ends the connection (there are no RNR retries), paces the
	// sender by the receiver's credits as perftest does (send_bw.c sets
	// send_rcredit for IBV_TRANSPORT_IWARP; perftest_resources.c
	// ctx_alloc_credit, run_iter_bw, run_iter_bw_server, run_iter_bi):
	// each side's address in the exchange is its credit word; the receiver
	// RDMA WRITEs its count of completed receives there every creditEvery
	// receives (rx_depth/3), and the sender keeps fewer than rx_depth
	// messages beyond that count.
	credits     bool
	creditEvery int
	// noProgress leaves the progress line out: TestHotPathAllocs counts
	// the allocations of the measured loops, and a slow run (over 2 s, as
	// under the arm64 lab's TCG) would count the line's formatting too.
	noProgress bool
}

// qpState is one QP of a test and what its loops keep of it: perftest
// keeps the same per QP (my_dest, rem_dest, scnt, ccnt and the work
// request of each index).
type qpState struct {
	qp       *uverbs.QP
	me, peer dest
	local    uint64 // this QP's send half of the buffer
	recvBuf  uint64 // its receive half, where the peer writes
	swr      [1]uverbs.SendWR
	sge      [1]uverbs.SGE
	rwr      [1]uverbs.RecvWR
	rsge     [1]uverbs.SGE
	scnt     int    // sends posted in this run
	ccnt     int    // sends known complete
	rposted  int    // receives posted in this run
	off      uint64 // where the addresses are in their page (runBW)

	// Receive credits (session.credits): the peer writes into credIn how
	// many of its receives it took; this side writes its own count from
	// credOut into the peer's word with cwr.
	rcnt       int     // receives completed in this run
	credIn     *uint32 // in the buffer, at credInAddr
	credOut    *uint32
	credInAddr uint64
	cwr        [1]uverbs.SendWR
	csge       [1]uverbs.SGE
	scredit    int  // credit WRITEs not completed yet
	creditDue  bool // a credit is to be sent when the send queue has room
}

// perf runs one side of the test described by o.
func perf(ctx context.Context, o options, stdout, stderr io.Writer) (err error) {
	s := &session{o: o, out: stdout, errOut: stderr, ctx: ctx, clk: startClock(), ibPort: o.ibPort}
	defer func() { err = errors.Join(err, s.close()) }()

	// The device, port and GID index first, so that a wrong -d, -i or -x
	// fails at once rather than after the peer came (with -R the CM picks
	// the device, and a -d, when given, must still exist).
	if !o.cm || o.dev != "" {
		gid := o.gidIdx
		if o.cm {
			gid = -1
		}
		if err := device.Check(o.dev, o.ibPort, gid); err != nil {
			return err
		}
	}
	if o.server == "" {
		fmt.Fprintf(stdout, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
	}
	var l *rdmacm.Listener
	if o.cm && o.server == "" {
		// One listener takes both of perftest's CM connections: the
		// exchange's, then the test's.
		if l, err = rdmacm.Listen(ctx, ":"+strconv.Itoa(o.port), s.cmConfig()); err != nil {
			return fmt.Errorf("RDMA CM listen on port %d: %w", o.port, err)
		}
		defer l.Close()
	}
	switch {
	case o.cm && o.server != "":
		s.m, err = dialRDMAComm(ctx, o.server, o.port)
	case o.cm:
		s.m, err = acceptRDMAComm(ctx, l)
	case o.server != "":
		s.m, err = dialComm(ctx, o.server, o.port)
	default:
		s.m, err = acceptComm(ctx, o.port)
	}
	if err != nil {
		return err
	}
	defer s.m.watch(ctx)()

	if !o.cm {
		if err := s.openDevice(); err != nil {
			return err
		}
		s.m.withGID = s.port.LinkLayer == uverbs.LinkLayerEthernet
	}
	mtu := s.mtu
	if o.cm {
		mtu = uverbs.MTU4096 // the CM picks the path MTU
	}
	if mtu, err = s.m.preamble(mtu); err != nil {
		return err
	}
	if !o.cm {
		s.mtu = mtu
		if err := s.createQP(); err != nil {
			return err
		}
	} else {
		// perftest -R: a handshake, the CM connection, a handshake. The
		// key messages before set_up_connection carry a GID field.
		s.m.withGID = true
		if _, err := s.m.handshake(dest{}); err != nil {
			return err
		}
		if err := s.cmConnect(l); err != nil {
			return err
		}
		if _, err := s.m.handshake(dest{}); err != nil {
			return err
		}
		s.m.withGID = s.port.LinkLayer == uverbs.LinkLayerEthernet
	}
	if err := s.fillDest(); err != nil {
		return err
	}
	return s.sequence()
}

// cmConfig is the connection of -R: perftest's conn_param (READ depths only
// for READ and atomic tests, 7 retries of each kind).
func (s *session) cmConfig() *rdmacm.Config {
	o := s.o
	cp := rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}
	if o.verb == read || o.verb == atomicOp {
		n := o.outReads
		if n == 0 {
			n = 255 // the device's maximum
		}
		cp.ResponderResources, cp.InitiatorDepth = uint8(n), uint8(n)
	}
	recv := 1
	if o.verb == send {
		recv = o.rxDepth
	}
	return &rdmacm.Config{
		SendDepth: o.txDepth, RecvDepth: recv, MaxInline: o.inline,
		CQDepth: o.txDepth + recv + 1, ConnParam: &cp,
		ACKTimeout: uint8(o.timeout),
	}
}

// openDevice opens the device of -d and reads its port (not with -R).
func (s *session) openDevice() (err error) {
	o := s.o
	if s.vdev, s.port, err = device.OpenPort(o.dev, o.ibPort); err != nil {
		return err
	}
	s.mtu = s.port.ActiveMTU
	if o.mtu != 0 {
		m := uverbs.MTUFromBytes(o.mtu)
		if m > s.port.ActiveMTU {
			return fmt.Errorf("-m %d is larger than the active MTU %d of %s port %d", o.mtu, s.port.ActiveMTU.Bytes(), s.vdev.Name(), o.ibPort)
		}
		s.mtu = m
	}
	s.gidIdx = o.gidIdx
	if s.gidIdx < 0 && s.port.LinkLayer == uverbs.LinkLayerEthernet {
		// perftest picks a GID itself; here it is the one of the local
		// address of the exchange's connection, which reaches the peer.
		ip := s.m.c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		if s.gidIdx, err = s.vdev.GIDIndexForIP(uint8(o.ibPort), ip); err != nil {
			return fmt.Errorf("no GID for the local address %v of the TCP connection (%w); pass -x with a GID index of %s port %d", ip, err, s.vdev.Name(), o.ibPort)
		}
	}
	if s.pd, err = s.vdev.AllocPD(); err != nil {
		return err
	}
	return nil
}

// outReads is this side's READ/atomic depth: -o, else the device's
// maximum (perftest: ctx_set_out_reads).
func (s *session) outReads(c *uverbs.Device) (int, error) {
	if s.o.verb != read && s.o.verb != atomicOp {
		return 1, nil // perftest sends 1 for other tests
	}
	attr, err := c.Query()
	if err != nil {
		return 0, err
	}
	n := attr.MaxQPRDAtom
	if s.o.outReads > 0 && s.o.outReads < n {
		n = s.o.outReads
	}
	return n, nil
}

// allocMemory allocates and registers the buffer: two halves of
// max(size, page) plus a page, so that a perftest peer may step its remote
// address through a page (increase_rem_addr) and a write_lat peer may poll
// the last byte of a message.
func (s *session) allocMemory() (err error) {
	s.half = roundUp(max(s.o.size, 4096), 4096) + 4096
	if s.buf, err = uverbs.AllocBuffer(2 * s.half * len(s.qps)); err != nil {
		return err
	}
	s.mr, err = s.pd.RegMR(s.buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead|uverbs.AccessRemoteAtomic)
	if err != nil {
		return err
	}
	mem := s.buf.Bytes()
	for i, st := range s.qps {
		st.local = s.buf.Addr() + uint64(2*s.half*i)
		st.recvBuf = st.local + uint64(s.half)
		// The credit words are the last 8 bytes of the receive half, which
		// a message (at most -s bytes, at its start) never reaches.
		in := 2*s.half*(i+1) - 8
		st.credIn = (*uint32)(unsafe.Pointer(&mem[in]))
		st.credOut = (*uint32)(unsafe.Pointer(&mem[in+4]))
		st.credInAddr = s.buf.Addr() + uint64(in)
	}
	s.local, s.recvBuf = s.qps[0].local, s.qps[0].recvBuf
	return nil
}

// createQP builds the CQ, QP and memory of a test without -R and moves the
// QP to INIT.
func (s *session) createQP() (err error) {
	o := s.o
	if o.events {
		if s.ch, err = s.vdev.NewCompChannel(); err != nil {
			return err
		}
	}
	s.qps = make([]*qpState, o.qps)
	for i := range s.qps {
		s.qps[i] = &qpState{}
	}
	if err := s.allocMemory(); err != nil {
		return err
	}
	recv := 1
	if o.verb == send {
		recv = o.rxDepth
	}
	// One CQ for every QP's sends and receives (perftest: tx_depth and
	// rx_depth times the number of QPs, create_reg_cqs).
	if s.cq, err = s.vdev.CreateCQ(uverbs.CQInit{Depth: (o.txDepth+recv)*o.qps + 1, Channel: s.ch}); err != nil {
		return err
	}
	for _, st := range s.qps {
		st.qp, err = s.pd.CreateQP(uverbs.QPInit{Type: uverbs.RC, SendCQ: s.cq, RecvCQ: s.cq,
			Cap: uverbs.QPCap{MaxSendWR: o.txDepth, MaxRecvWR: recv, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: o.inline}})
		if err != nil {
			return err
		}
		if err := st.qp.ToInit(uverbs.InitAttr{Port: uint8(o.ibPort),
			Access: uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic}); err != nil {
			return err
		}
	}
	s.qp = s.qps[0].qp
	return nil
}

// cmConnect connects the QP through the CM: the server takes the request
// from l and accepts it, the client resolves and connects (retrying while
// the server does not listen yet, as perftest's client does; up to 5 s: an
// iWARP peer refuses at once, where perftest's tries take longer).
func (s *session) cmConnect(l *rdmacm.Listener) (err error) {
	o := s.o
	if o.server == "" {
		if s.conn, err = l.GetRequest(s.ctx); err != nil {
			return err
		}
	} else {
		addr := net.JoinHostPort(o.server, strconv.Itoa(o.port))
		for try := 0; ; try++ {
			s.conn, err = rdmacm.Resolve(s.ctx, addr, s.cmConfig())
			if err == nil {
				break
			}
			if try == 10 || s.ctx.Err() != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	s.pd, s.qp, s.cq = s.conn.PD(), s.conn.QP(), s.conn.CQ()
	s.qps = []*qpState{{qp: s.qp}}
	if o.events {
		s.ch = s.conn.Channel()
	}
	s.ibPort = int(s.conn.Port())
	if s.port, err = s.pd.Device().QueryPort(uint8(s.ibPort)); err != nil {
		return err
	}
	if err := s.allocMemory(); err != nil {
		return err
	}
	if o.server == "" {
		return s.conn.Accept(s.ctx, nil)
	}
	for try := 0; ; try++ {
		err = s.conn.Connect(s.ctx, nil)
		if err == nil || !errors.Is(err, rdmacm.ErrConnRefused) || try == 50 {
			return err
		}
		// Nothing listens yet: a new ID for the next try.
		s.qp.Close()
		s.mr.Close()
		s.buf.Close()
		s.conn.Close()
		time.Sleep(100 * time.Millisecond)
		if s.conn, err = rdmacm.Resolve(s.ctx, net.JoinHostPort(o.server, strconv.Itoa(o.port)), s.cmConfig()); err != nil {
			return err
		}
		s.pd, s.qp, s.cq = s.conn.PD(), s.conn.QP(), s.conn.CQ()
		s.qps = []*qpState{{qp: s.qp}}
		if o.events {
			s.ch = s.conn.Channel()
		}
		if err := s.allocMemory(); err != nil {
			return err
		}
	}
}

// fillDest fills this side's address (perftest: set_up_connection).
func (s *session) fillDest() error {
	vdev := s.pd.Device()
	n, err := s.outReads(vdev)
	if err != nil {
		return err
	}
	s.me = dest{LID: s.port.LID, OutReads: uint16(n), RKey: s.mr.RKey()}
	if s.o.cm {
		if s.o.gidIdx >= 0 {
			s.gidIdx = s.o.gidIdx
		} else {
			s.gidIdx, _ = vdev.GIDIndexForIP(uint8(s.ibPort), s.conn.LocalAddr().Addr())
		}
	}
	if s.port.LinkLayer == uverbs.LinkLayerEthernet && s.gidIdx >= 0 {
		e, err := vdev.QueryGID(uint8(s.ibPort), s.gidIdx)
		if err == nil {
			s.me.GID = e.GID
		} else if !s.o.cm {
			return fmt.Errorf("GID index %d: %w", s.gidIdx, err)
		}
	}
	// Per QP its number, a PSN and its receive half (set_up_connection),
	// or with credits its credit word (ctx_alloc_credit).
	info := vdev.Info()
	s.credits = s.o.verb == send && !s.o.lat && info.Transport() == uverbs.TransportIWARP
	s.creditEvery = max(s.o.rxDepth/3, 1) // perftest divides by rx_depth/3, so needs -r 3 or more
	for _, st := range s.qps {
		st.me = s.me
		st.me.QPN, st.me.PSN, st.me.VAddr = st.qp.QPN(), rand.Uint32()&0xffffff, st.recvBuf
		if s.credits {
			st.me.VAddr = st.credInAddr
		}
	}
	s.me = s.qps[0].me
	return nil
}

// connect moves the QP to RTR and RTS with perftest's attributes
// (ctx_modify_qp_to_rtr/rts: hop limit 0xFF, min RNR timer 12, 7 retries
// of each kind, the peer's READ depth).
func (s *session) connect() error {
	for _, st := range s.qps {
		p := st.peer
		av := uverbs.AHAttr{DLID: p.LID, Port: uint8(s.o.ibPort)}
		if s.port.LinkLayer == uverbs.LinkLayerEthernet || !p.GID.IsZero() {
			av.DGID, av.SGIDIndex, av.HopLimit = p.GID, max(s.gidIdx, 0), 0xff
		}
		if err := st.qp.ToRTR(uverbs.RTRAttr{PathMTU: s.mtu, DestQPN: p.QPN, RQPSN: p.PSN,
			MaxDestRDAtomic: uint8(min(int(st.me.OutReads), 255)), MinRNRTimer: minRNRTimer, AH: av}); err != nil {
			return err
		}
		if err := st.qp.ToRTS(uverbs.RTSAttr{SQPSN: st.me.PSN, Timeout: uint8(s.o.timeout), RetryCount: 7, RNRRetry: 7,
			MaxRDAtomic: uint8(min(max(int(p.OutReads), 1), 255))}); err != nil {
			return err
		}
	}
	return nil
}

// handshakes runs n key exchanges, the i-th with the address of QP i
// (then of the first QP again): with keep the answers are the peer's QPs'
// addresses, in the same order (perftest: ctx_hand_shake per QP).
func (s *session) handshakes(n int, keep bool) error {
	for i := 0; i < n; i++ {
		me := s.me
		if i < len(s.qps) {
			me = s.qps[i].me
		}
		p, err := s.m.handshake(me)
		if err != nil {
			return err
		}
		if keep && i < len(s.qps) {
			s.qps[i].peer = p
		}
	}
	s.peer = s.qps[0].peer
	return nil
}

// sequence runs perftest's steps for the test, in its order (the main() of
// each of write_bw.c, read_bw.c, send_bw.c, write_lat.c, read_lat.c,
// send_lat.c, atomic_lat.c): handshakes before and after the QP's
// connection, the test, and the closing exchange.
func (s *session) sequence() error {
	o := s.o
	pre := o.qps // handshakes before connecting: one per QP
	if o.lat && o.verb != send {
		pre = max(2, o.qps)
	}
	if err := s.handshakes(pre, true); err != nil {
		return err
	}
	if !o.cm {
		if err := s.connect(); err != nil {
			return err
		}
	}
	s.printHeader()
	if err := s.handshakes(o.qps+1, false); err != nil {
		return err
	}
	if o.events {
		if err := s.cq.ReqNotify(false); err != nil {
			return err
		}
	}
	sizes := []int{o.size}
	if o.all {
		sizes = sizes[:0]
		for i := 1; i < 24; i++ {
			sizes = append(sizes, 1<<i)
		}
	}
	server := o.server == ""
	switch {
	case !o.lat && o.verb != send && server && !o.duplex:
		// write_bw, read_bw: the server only waits for the client.
		if _, err := s.m.handshake(s.me); err != nil {
			return err
		}
		if _, err := s.m.xchgBWReports(bwReport{}); err != nil {
			return err
		}
		return s.m.closeConnection(s.me)
	case o.lat && (o.verb == read || o.verb == atomicOp) && server:
		return s.m.closeConnection(s.me)
	}

	s.allocTimes()
	if o.beforeRuns != nil {
		if err := o.beforeRuns(s); err != nil {
			return err
		}
	}
	var last bwResult
	for _, size := range sizes {
		if o.verb == send {
			// Receives: both sides of send_lat, the server of send_bw
			// (ctx_set_recv_wqes).
			n := min(o.rxDepth, s.iters())
			if !o.lat && !server && !o.duplex {
				n = 0
			}
			if err := s.postRecvs(size, n); err != nil {
				return err
			}
			if _, err := s.m.handshake(s.me); err != nil {
				return err
			}
		} else if o.duplex {
			// Both sides start each size together (write_bw.c, read_bw.c).
			if _, err := s.m.handshake(s.me); err != nil {
				return err
			}
		}
		r, err := s.runOne(size)
		if err != nil {
			return err
		}
		last = r
		if o.duplex {
			if err := s.duplexReport(r); err != nil {
				return err
			}
		}
		if o.all && !o.lat && o.verb == send {
			if _, err := s.m.handshake(s.me); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(s.out, resultLine)
	switch {
	case o.lat && o.verb == write:
		return nil // write_lat ends without an exchange
	case !o.lat && o.verb != send && !o.duplex:
		if _, err := s.m.handshake(s.me); err != nil {
			return err
		}
		if _, err := s.m.xchgBWReports(bwReport{size: uint64(last.size), iters: uint64(last.iters), peak: last.peak, avg: last.avg, msgRate: last.msgRate}); err != nil {
			return err
		}
	}
	return s.m.closeConnection(s.me)
}

// duplexReport ends a size of a -b run as perftest does: write_bw and
// read_bw with -a first meet once more, then the sides swap their reports
// and each prints the sum of both (print_full_bw_report with the remote
// report).
func (s *session) duplexReport(r bwResult) error {
	if s.o.all && s.o.verb != send {
		if _, err := s.m.handshake(s.me); err != nil {
			return err
		}
	}
	rem, err := s.m.xchgBWReports(bwReport{size: uint64(r.size), iters: uint64(r.iters), peak: r.peak, avg: r.avg, msgRate: r.msgRate})
	if err != nil {
		return err
	}
	r.peak += rem.peak
	r.avg += rem.avg
	r.msgRate += rem.msgRate
	r.print(s.out)
	return nil
}

// iters is the number of iterations of one run; in duration mode the
// arrays hold what a run can do in the duration at most (they are only
// used for the progress count there).
func (s *session) iters() int {
	if s.o.duration > 0 {
		return 1 << 62
	}
	return s.o.iters
}

// qpIters is how many messages QP i carries in one run: -n in a bandwidth
// test (perftest's -n counts per QP); in a latency test the -n exchanges
// are shared out round-robin (lane), QP i taking the i-th, the (i+q)-th...
func (s *session) qpIters(i int) int {
	n := s.iters()
	if s.o.lat && s.o.duration == 0 {
		return (n - i + len(s.qps) - 1) / len(s.qps)
	}
	return n
}

func (s *session) allocTimes() {
	if s.o.duration > 0 {
		return
	}
	n := s.o.iters // latency: one sample per exchange, whatever the QP
	if !s.o.lat {
		n *= s.o.qps
	}
	s.posts = make([]int64, n)
	s.comps = make([]int64, n)
}

// printHeader prints a short description and the table's header.
func (s *session) printHeader() {
	o := s.o
	kind := "BW"
	if o.lat {
		kind = "Latency"
	}
	names := map[verb]string{write: "RDMA_Write", send: "Send", read: "RDMA_Read", atomicOp: "Atomic FETCH_AND_ADD"}
	w := s.out
	fmt.Fprintln(w, resultLine)
	fmt.Fprintf(w, "                    %s %s Test (rdma-perf)\n", names[o.verb], kind)
	fmt.Fprintf(w, " Number of qps   : %d\t\tConnection type : RC\n", o.qps)
	fmt.Fprintf(w, " Using RDMA CM   : %s\n", onOff(o.cm))
	fmt.Fprintf(w, " Device          : %s\t\tEvents         : %s\n", s.pd.Device().Name(), onOff(o.events))
	fmt.Fprintf(w, " TX depth        : %d\t\tCQ Moderation  : %d\n", o.txDepth, o.cqMod)
	if o.verb == send {
		fmt.Fprintf(w, " RX depth        : %d\n", o.rxDepth)
	}
	fmt.Fprintf(w, " Mtu             : %d[B]\t\tMax inline data: %d[B]\n", s.mtu.Bytes(), o.inline)
	if o.verb == read || o.verb == atomicOp {
		fmt.Fprintf(w, " Outstand reads  : %d\n", s.me.OutReads)
	}
	fmt.Fprintln(w, resultLine)
	for _, st := range s.qps {
		fmt.Fprintf(w, " local address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x GID %v\n", st.me.LID, st.me.QPN, st.me.PSN, st.me.RKey, st.me.VAddr, st.me.GID)
	}
	for _, st := range s.qps {
		fmt.Fprintf(w, " remote address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x GID %v\n", st.peer.LID, st.peer.QPN, st.peer.PSN, st.peer.RKey, st.peer.VAddr, st.peer.GID)
	}
	fmt.Fprintln(w, resultLine)
	switch {
	case o.lat && o.duration > 0:
		fmt.Fprintln(w, resultFmtDur)
	case o.lat:
		fmt.Fprintln(w, resultFmtLat)
	case o.gbits:
		fmt.Fprintln(w, resultFmtG)
	default:
		fmt.Fprintln(w, resultFmt)
	}
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// close destroys everything, the QP first.
func (s *session) close() error {
	var errs []error
	if s.conn != nil {
		// The QP first: it flushes the receives that hold the MR.
		errs = append(errs, s.conn.Disconnect(), s.qp.Close())
		errs = append(errs, s.mr.Close(), s.buf.Close(), s.conn.Close())
	} else {
		for _, st := range s.qps {
			errs = append(errs, st.qp.Close())
		}
		errs = append(errs, s.cq.Close(), s.mr.Close(), s.buf.Close(), s.pd.Close(), s.ch.Close(), s.vdev.Close())
	}
	if s.m != nil {
		s.m.Close()
	}
	// A peer that disconnected first is no error of this side.
	for i, e := range errs {
		if errors.Is(e, rdmacm.ErrClosed) || errors.Is(e, uverbs.ErrClosed) {
			errs[i] = nil
		}
	}
	return errors.Join(errs...)
}
