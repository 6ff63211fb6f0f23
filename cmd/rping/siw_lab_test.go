package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// The siw tests below put our rping against a peer that speaks iWARP
// itself over a plain TCP socket of the test (MPA, DDP and RDMAP as
// drivers/infiniband/sw/siw/iwarp.h lays them out): siw carries iWARP over
// the kernel's TCP, so such a peer can stand for a siw device on the other
// side, and it can send or keep back what siw never would. They show the
// kernel's behaviour that siwNudgeEvery (rping.go) works around, and the
// work-around, without depending on timing.

// MPA (RFC 5044) and DDP/RDMAP (RFC 5041, 5040) as siw speaks them (kernel:
// siw/iwarp.h).
const (
	mpaKeyReq      = "MPA ID Req Frame"
	mpaKeyRep      = "MPA ID Rep Frame"
	mpaFlagMarkers = 0x8000
	mpaFlagCRC     = 0x4000
	mpaFlagReject  = 0x2000
	mpaFlagEnh     = 0x1000 // MPA_RR_FLAG_ENHANCED: private data starts with struct mpa_v2_data
	mpaRevMask     = 0x00ff
	mpaIRDORDMask  = 0x3fff

	ddpTagged   = 0x8000
	ddpLast     = 0x4000
	ddpVersion1 = 0x0100 // DDP_VERSION 1 in DDP_MASK_VERSION
	rdmapVer1   = 0x0040 // RDMAP_VERSION 1 in RDMAP_MASK_VERSION
	rdmapOpMask = 0x000f

	rdmapWrite    = 0 // RDMAP_RDMA_WRITE
	rdmapReadReq  = 1 // RDMAP_RDMA_READ_REQ
	rdmapReadResp = 2 // RDMAP_RDMA_READ_RESP
	rdmapSend     = 3 // RDMAP_SEND
)

// iwarpPeer is one end of an iWARP connection on a TCP socket, without MPA
// markers or CRC (siw uses neither unless asked: its mpa_crc_required and
// mpa_crc_strict are off by default; the CRC field is still sent, as 0).
type iwarpPeer struct {
	c   net.Conn
	r   *bufio.Reader
	msn uint32 // the next untagged SEND's message sequence number (DDP's start at 1)
}

// newIWARPPeer speaks iWARP on c until the test ends. Its reads end at
// ctx's deadline, with the connection left open: a hang is reported as
// it is (closing it would end the peer's wait: siw reads the socket
// again when the FIN comes).
func newIWARPPeer(t *testing.T, ctx context.Context, c net.Conn) *iwarpPeer {
	if dl, ok := ctx.Deadline(); ok {
		c.SetReadDeadline(dl)
	}
	t.Cleanup(func() { c.Close() })
	return &iwarpPeer{c: c, r: bufio.NewReader(c), msn: 1}
}

// mpaRR is an MPA request or reply (struct mpa_rr and its private data).
type mpaRR struct {
	key  string
	bits uint16
	pd   []byte
}

func (p *iwarpPeer) writeMPA(m mpaRR) error {
	b := make([]byte, 20+len(m.pd))
	copy(b, m.key)
	binary.BigEndian.PutUint16(b[16:], m.bits)
	binary.BigEndian.PutUint16(b[18:], uint16(len(m.pd)))
	copy(b[20:], m.pd)
	_, err := p.c.Write(b)
	return err
}

func (p *iwarpPeer) readMPA() (mpaRR, error) {
	var h [20]byte
	if _, err := io.ReadFull(p.r, h[:]); err != nil {
		return mpaRR{}, fmt.Errorf("reading the MPA frame: %w", err)
	}
	m := mpaRR{key: string(h[:16]), bits: binary.BigEndian.Uint16(h[16:])}
	m.pd = make([]byte, binary.BigEndian.Uint16(h[18:]))
	if _, err := io.ReadFull(p.r, m.pd); err != nil {
		return mpaRR{}, fmt.Errorf("reading the MPA private data: %w", err)
	}
	return m, nil
}

// writeFPDU sends one DDP segment (a whole message: DDP's Last flag) as
// an MPA FPDU: its length, the segment, padding to 4 bytes and the CRC
// field (0).
func (p *iwarpPeer) writeFPDU(ulpdu []byte) error {
	n := 2 + len(ulpdu)
	pad := (4 - n%4) % 4
	b := make([]byte, n+pad+4)
	binary.BigEndian.PutUint16(b, uint16(len(ulpdu)))
	copy(b[2:], ulpdu)
	_, err := p.c.Write(b)
	return err
}

// readFPDU returns the next DDP segment.
func (p *iwarpPeer) readFPDU() ([]byte, error) {
	var l [2]byte
	if _, err := io.ReadFull(p.r, l[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(l[:]))
	b := make([]byte, n+(4-(2+n)%4)%4+4)
	if _, err := io.ReadFull(p.r, b); err != nil {
		return nil, err
	}
	u := b[:n]
	if len(u) < 2 {
		return nil, fmt.Errorf("a DDP segment of %d bytes", len(u))
	}
	return u, nil
}

func ddpCtrl(tagged bool, op int) []byte {
	c := uint16(ddpLast | ddpVersion1 | rdmapVer1 | op)
	if tagged {
		c |= ddpTagged
	}
	return binary.BigEndian.AppendUint16(nil, c)
}

func opcode(u []byte) int { return int(binary.BigEndian.Uint16(u) & rdmapOpMask) }

// send sends an untagged SEND (struct iwarp_send, queue 0) of payload.
func (p *iwarpPeer) send(payload []byte) error {
	u := ddpCtrl(false, rdmapSend)
	u = binary.BigEndian.AppendUint32(u, 0) // rsvd
	u = binary.BigEndian.AppendUint32(u, 0) // ddp_qn: RDMAP_UNTAGGED_QN_SEND
	u = binary.BigEndian.AppendUint32(u, p.msn)
	u = binary.BigEndian.AppendUint32(u, 0) // ddp_mo
	p.msn++
	return p.writeFPDU(append(u, payload...))
}

// answerRead answers the READ request u (struct iwarp_rdma_rreq) with a
// READ RESPONSE of its size, into its sink.
func (p *iwarpPeer) answerRead(u []byte) error {
	if len(u) < 46 {
		return fmt.Errorf("a READ request of %d bytes", len(u))
	}
	sinkSTag, sinkTO, size := u[18:22], u[22:30], binary.BigEndian.Uint32(u[30:])
	r := ddpCtrl(true, rdmapReadResp)
	r = append(append(r, sinkSTag...), sinkTO...)
	return p.writeFPDU(append(r, make([]byte, size)...))
}

// tcpRecvQ returns how many bytes the TCP socket from local to remote has
// received that nobody read yet (/proc/net/tcp rx_queue), and whether it
// exists.
func tcpRecvQ(t *testing.T, local, remote netip.AddrPort) (int, bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	hex := func(a netip.AddrPort) string {
		ip := a.Addr().As4()
		return fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(ip[:]), a.Port())
	}
	l, r := hex(local), hex(remote)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || f[1] != l || f[2] != r {
			continue
		}
		_, rx, ok := strings.Cut(f[4], ":")
		n, err := strconv.ParseUint(rx, 16, 32)
		if !ok || err != nil {
			t.Fatalf("/proc/net/tcp: %q", line)
		}
		return int(n), true
	}
	return 0, false
}

// hold makes the hook hold whoever runs it until release is called, or
// the test ends (t.Context ends before the cleanups that stop our rpings
// run); held closes when it is reached.
func hold(t *testing.T, hook *func()) (held <-chan struct{}, release func()) {
	h, r := make(chan struct{}), make(chan struct{})
	end := t.Context()
	*hook = func() {
		close(h)
		select {
		case <-r:
		case <-end.Done():
		}
	}
	t.Cleanup(func() { *hook = nil })
	return h, func() { close(r) }
}

// siwEnv is the siw pair's env with a deadline of its own: one connection
// each, so a hang is reported well before the package's limit.
func siwEnv(t *testing.T) *rpingEnv {
	e := newEnvOn(t, testutil.SiwPair(t))
	ctx, cancel := context.WithTimeout(e.ctx, 3*time.Minute)
	t.Cleanup(cancel)
	e.ctx = ctx
	return e
}

// TestSiwEarlyMessage: siw leaves a message that reaches the server's
// socket before the accept unread, and reads the socket again only when
// more data comes (kernel: siw_cm.c siw_cm_llp_data_ready ignores data in
// every state but those awaiting an MPA frame; siw_accept hands the socket
// to the QP with siw_qp_socket_assoc, which reads nothing). A siw client
// sends its first message only after the MPA reply, but in the kernel's
// siw_accept the reply goes out before siw_qp_socket_assoc, and a message
// that lands between the two is left the same way (docs/siw.md §10). Here
// the client, an iWARP peer of the test that does not nudge (as
// rdma-core's rping does not), sends its first message while our server is
// held just before its accept, so that it is queued unread (/proc/net/tcp
// shows it) when the accept runs. Our server must still receive it: its
// zero-length READ, siwServerNudgeEvery after the accept, makes the client
// answer, and the answer makes siw read the socket. Without that READ the
// server waits for good.
func TestSiwEarlyMessage(t *testing.T) {
	e := siwEnv(t)
	held, release := hold(t, &testHookAccept)
	port := e.port()
	srv := e.startOurs(t, nil, "-s", "-d", "-a", e.addr, "-p", port)
	e.waitListening(t, srv, port)

	var d net.Dialer
	c, err := d.DialContext(e.ctx, "tcp", net.JoinHostPort(e.addr, port))
	if err != nil {
		t.Fatal(err)
	}
	peer := newIWARPPeer(t, e.ctx, c)
	// An enhanced MPA revision 2 request, as siw's siw_connect sends: IRD
	// and ORD 1, as rping's client asks (rping_init_conn_param), no RTR
	// mode. The server's CM takes them as the request's READ depths
	// (kernel: siw_cm.c siw_proc_mpareq), and our server accepts with those.
	v2 := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 1), 1)
	if err := peer.writeMPA(mpaRR{key: mpaKeyReq, bits: mpaFlagEnh | 2, pd: v2}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case code := <-srv.done:
		t.Fatalf("the server ended (%d) before the accept:\n%s", code, dump(srv))
	case <-e.ctx.Done():
		t.Fatalf("the connection request did not reach the server%s", e.hangReport(srv))
	}
	// The client's first message: its ping buffer, as rping's client sends
	// it (rdmaInfo); 40 bytes on the wire.
	var info [infoLen]byte
	rdmaInfo{addr: 0x1000, rkey: 0x1234, size: 64}.put(info[:])
	if err := peer.send(info[:]); err != nil {
		t.Fatal(err)
	}
	srvEnd := netip.MustParseAddrPort(net.JoinHostPort(e.addr, port))
	cliEnd := netip.MustParseAddrPort(c.LocalAddr().String())
	for {
		n, ok := tcpRecvQ(t, srvEnd, cliEnd)
		if ok && n == 40 {
			break
		}
		select {
		case <-e.ctx.Done():
			t.Fatalf("the server's socket never held the 40 bytes sent (receive queue %d, found %v)", n, ok)
		case <-time.After(20 * time.Millisecond):
		}
	}
	release()

	rep, err := peer.readMPA()
	if err != nil {
		t.Fatalf("%v%s", err, e.hangReport(srv))
	}
	if rep.key != mpaKeyRep || rep.bits&(mpaFlagReject|mpaFlagMarkers|mpaFlagCRC) != 0 {
		t.Fatalf("MPA reply %q, flags %#x", rep.key, rep.bits)
	}
	// Answer the server's READs (the zero-length one, then the ping's)
	// until it shows it has the message.
	answered := make(chan error, 1)
	go func() {
		for {
			u, err := peer.readFPDU()
			if err != nil {
				answered <- err
				return
			}
			if opcode(u) == rdmapReadReq {
				if err := peer.answerRead(u); err != nil {
					answered <- err
					return
				}
			}
		}
	}()
	want := fmt.Sprintf("Received rkey %x addr %x len %d from peer", 0x1234, 0x1000, 64)
	for !strings.Contains(srv.out.String(), want) {
		select {
		case code := <-srv.done:
			srv.code, srv.ended = code, true
			t.Fatalf("the server ended without the message:\n%s", dump(srv))
		case err := <-answered:
			if !errors.Is(err, net.ErrClosed) {
				t.Logf("the client's reader stopped: %v", err)
			}
			answered = nil
		case <-e.ctx.Done():
			n, _ := tcpRecvQ(t, srvEnd, cliEnd)
			t.Fatalf("the server never received the message that reached its socket before the accept (%d bytes still unread there)\nstdout:\n%s%s",
				n, srv.out.String(), e.hangReport(srv))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !strings.Contains(srv.out.String(), "siw: zero-length rdma read") {
		t.Errorf("the server's debug output has no zero-length READ:\n%s", srv.out.String())
	}
}

// TestSiwClientNudges: a server whose siw left the client's first message
// unread (see TestSiwEarlyMessage) answers nothing until more data comes.
// The server here, an iWARP peer of the test, reads the first message and
// then waits, as such a server does; our client must send something more
// on its own: a zero-length RDMA WRITE (siwNudgeEvery).
func TestSiwClientNudges(t *testing.T) {
	e := siwEnv(t)
	port := e.port()
	l, err := (&net.ListenConfig{}).Listen(e.ctx, "tcp", net.JoinHostPort(e.addr, port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cli := e.startOurs(t, nil, "-c", "-d", "-V", "-a", e.addr, "-p", port, "-C", "1")
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			close(accepted)
			return
		}
		accepted <- c
	}()
	var c net.Conn
	select {
	case c = <-accepted:
	case code := <-cli.done:
		t.Fatalf("the client ended (%d) without connecting:\n%s", code, dump(cli))
	case <-e.ctx.Done():
		t.Fatalf("the client did not connect%s", e.hangReport(cli))
	}
	if c == nil {
		t.FailNow()
	}
	peer := newIWARPPeer(t, e.ctx, c)
	req, err := peer.readMPA()
	if err != nil {
		t.Fatal(err)
	}
	if req.key != mpaKeyReq || req.bits&(mpaFlagMarkers|mpaFlagCRC) != 0 {
		t.Fatalf("MPA request %q, flags %#x: this peer speaks neither markers nor CRC", req.key, req.bits)
	}
	// The reply as siw's siw_accept makes it: the request's revision and,
	// for an enhanced request, IRD and ORD mirrored (kernel: siw_cm.c
	// siw_proc_mpareq, siw_proc_mpareply), no RTR mode.
	rep := mpaRR{key: mpaKeyRep, bits: req.bits & (mpaRevMask | mpaFlagEnh)}
	if req.bits&mpaFlagEnh != 0 {
		if len(req.pd) < 4 {
			t.Fatalf("enhanced MPA request with %d bytes of private data", len(req.pd))
		}
		ird, ord := binary.BigEndian.Uint16(req.pd)&mpaIRDORDMask, binary.BigEndian.Uint16(req.pd[2:])&mpaIRDORDMask
		rep.pd = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, ord), ird)
	}
	if err := peer.writeMPA(rep); err != nil {
		t.Fatal(err)
	}
	first, err := peer.readFPDU()
	if err != nil {
		t.Fatalf("the client's first message: %v%s", err, e.hangReport(cli))
	}
	if opcode(first) != rdmapSend || len(first) != 18+infoLen {
		t.Fatalf("the client's first message is opcode %d, %d bytes: want a SEND of %d", opcode(first), len(first), infoLen)
	}
	next, err := peer.readFPDU()
	if err != nil {
		t.Fatalf("nothing came after the client's first message, which was not answered: %v\nclient stdout:\n%s%s", err, cli.out.String(), e.hangReport(cli))
	}
	// struct iwarp_rdma_write: the DDP control, sink STag and offset, no
	// data.
	if opcode(next) != rdmapWrite || binary.BigEndian.Uint16(next)&ddpTagged == 0 || len(next) != 14 {
		t.Fatalf("after its first message the client sent opcode %d, %d bytes: want a zero-length RDMA WRITE", opcode(next), len(next))
	}
	if !strings.Contains(cli.out.String(), "siw: zero-length rdma write") {
		t.Errorf("the client's debug output has no zero-length WRITE:\n%s", cli.out.String())
	}
	// Going away ends the client: its connection was lost before its ping.
	c.Close()
	if code := e.wait(t, cli); code != exitFailed {
		t.Errorf("client exit %d after the server went, want %d:\n%s", code, exitFailed, dump(cli))
	}
}

// TestSiwNudgesBetweenRpings: our client and server nudge each other on
// real siw devices, and the pings go on as usual after. Each side is held
// where its peer nudges (the server just after its accept, the client
// just before its first message) until its peer's debug output shows the
// nudge posted and completed; then both must finish the run cleanly. The
// client's nudge is a zero-length RDMA WRITE with no memory key, the
// server's a zero-length READ that the client's kernel answers.
func TestSiwNudgesBetweenRpings(t *testing.T) {
	for _, c := range []struct {
		name string
		hook *func()
		// who nudges, and what its -d output shows
		nudger, line string
	}{
		{"client_nudges", &testHookAccepted, "client", "siw: zero-length rdma write"},
		{"server_nudges", &testHookConnected, "server", "siw: zero-length rdma read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := siwEnv(t)
			held, release := hold(t, c.hook)
			port := e.port()
			srv := e.startOurs(t, nil, "-s", "-d", "-a", e.addr, "-p", port)
			e.waitListening(t, srv, port)
			cli := e.startOurs(t, nil, "-c", "-d", "-V", "-a", e.addr, "-p", port, "-C", "20")
			nudger := map[string]*proc{"server": srv, "client": cli}[c.nudger]
			select {
			case <-held:
			case <-e.ctx.Done():
				t.Fatalf("the hook was never reached%s", e.hangReport(cli))
			}
			// The nudge, and its completion after it.
			for {
				out := nudger.out.String()
				i := strings.Index(out, c.line)
				if i >= 0 && strings.Contains(out[i:], "zero-length rdma completion") {
					break
				}
				select {
				case <-e.ctx.Done():
					t.Fatalf("our %s did not nudge its peer:\n%s%s", c.nudger, out, e.hangReport(cli))
				case <-time.After(20 * time.Millisecond):
				}
			}
			release()
			for _, p := range []*proc{cli, srv} {
				if code := e.wait(t, p); code != 0 {
					t.Errorf("%s", dump(p))
				}
			}
		})
	}
}
