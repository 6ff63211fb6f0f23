package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// Interop with rdma-core's rping on the lab's veth pair: the server listens
// on the first end's address, clients connect to it (the CM then uses that
// end's rxe device for both sides). Ours runs in the test binary, rping as
// a process.

// rpingEnv is what every lab test needs: the server address, the C rping,
// and fresh ports.
type rpingEnv struct {
	addr  string
	cping string
	ctx   context.Context
	procs []*proc // every rping started, for the report of a hang
}

var nextPort = 7500

func newEnv(t *testing.T) *rpingEnv {
	t.Helper()
	return newEnvOn(t, testutil.VethPair(t))
}

// newEnvOn is newEnv on the server end of a given device pair
// (testutil.EachLabPair: rxe, siw).
func newEnvOn(t *testing.T, ends [2]testutil.VethEnd) *rpingEnv {
	t.Helper()
	p, err := exec.LookPath("rping")
	if err != nil {
		if testutil.InLab() {
			t.Fatalf("rping (rdma-core's rdmacm-utils) is not installed in the lab: %v", err)
		}
		t.Skip("rping not installed (Debian: rdmacm-utils)")
	}
	if _, err := exec.LookPath("rdma"); err != nil {
		if testutil.InLab() {
			t.Fatalf("rdma (iproute2) is not installed in the lab: %v", err)
		}
		t.Skip("rdma not installed (Debian: iproute2)")
	}
	// The timeout only turns a hang into a failure. It is one for every
	// test of the device pair: TestInterop's take 6 minutes together in a
	// race build on a busy host (make lab-race), and 3 were too few there.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return &rpingEnv{addr: ends[0].Addr, cping: p, ctx: ctx}
}

func (e *rpingEnv) port() string {
	nextPort++
	return strconv.Itoa(nextPort)
}

// proc is one running rping, ours or rdma-core's.
type proc struct {
	who   string // "ours" or "rping"
	args  []string
	out   testutil.SyncBuffer
	errb  testutil.SyncBuffer
	done  <-chan int // the exit code
	code  int
	ended bool // code was received
	pid   int  // rdma-core's rping: its process
	stop  context.CancelFunc
}

func (p *proc) String() string { return p.who + " " + strings.Join(p.args, " ") }

// startOurs runs our rping in a goroutine with options o (parsed from args
// and then changed by edit, if not nil).
func (e *rpingEnv) startOurs(t *testing.T, edit func(*options), args ...string) *proc {
	t.Helper()
	o, err := parseArgs(args)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if edit != nil {
		edit(&o)
	}
	done := make(chan int, 1)
	p := &proc{who: "ours", args: args, done: done}
	e.procs = append(e.procs, p)
	// Not under e.ctx: a hang is reported (wait) while the rpings still
	// run as they hung; the test's end stops them.
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- execute(ctx, o, &p.out, &p.errb)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(time.Minute):
			t.Errorf("%v still running a minute after being stopped", p)
		}
	})
	return p
}

// startC runs rdma-core's rping.
func (e *rpingEnv) startC(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{who: "rping", args: args}
	ctx, cancel := context.WithCancel(context.Background()) // as in startOurs
	p.stop = cancel
	cmd := exec.CommandContext(ctx, e.cping, args...)
	cmd.Stdout, cmd.Stderr = &p.out, &p.errb
	p.done = testutil.StartProcess(t, cmd)
	p.pid = cmd.Process.Pid
	e.procs = append(e.procs, p)
	return p
}

func (e *rpingEnv) start(t *testing.T, who string, args ...string) *proc {
	t.Helper()
	if who == "ours" {
		return e.startOurs(t, nil, args...)
	}
	return e.startC(t, args...)
}

// wait returns p's exit code, with rping's teardown race (see
// rpingTeardownRace) counted as the exit 0 it stands for.
func (e *rpingEnv) wait(t *testing.T, p *proc) int {
	t.Helper()
	select {
	case p.code = <-p.done:
		p.ended = true
		if rpingTeardownRace(p) {
			t.Logf("%v lost its teardown race after a clean run (exit %d, \"rdma_get_cm_event: Bad file descriptor\"): counted as exit 0", p, p.code)
			p.code = 0
		}
		return p.code
	case <-e.ctx.Done():
		t.Fatalf("%v did not end\nstdout:\n%s\nstderr:\n%s%s", p, p.out.String(), p.errb.String(), e.hangReport(p))
	}
	return -1
}

// hangReport tells what the rpings still running were doing when p did
// not end: their output, the kernel stacks of rdma-core's (ours run in
// this process: the goroutines show them) and the lab's state
// (testutil.HangReport).
func (e *rpingEnv) hangReport(p *proc) string {
	var b strings.Builder
	var pids []int
	for _, q := range e.procs {
		if q == p || q.ended {
			continue
		}
		fmt.Fprintf(&b, "\n\nalso running: %v\nstdout:\n%s\nstderr:\n%s", q, q.out.String(), q.errb.String())
	}
	for _, q := range e.procs {
		if !q.ended && q.pid != 0 {
			pids = append(pids, q.pid)
		}
	}
	return b.String() + testutil.HangReport(pids...)
}

// waitListening waits until server listens on port.
func (e *rpingEnv) waitListening(t *testing.T, server *proc, port string) {
	t.Helper()
	n, err := strconv.Atoi(port)
	if err == nil {
		err = testutil.WaitListening(e.ctx, n, true, server.done)
	}
	if err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", server, err, server.out.String(), server.errb.String())
	}
}

// pair runs a server and a client to the end and returns them.
func (e *rpingEnv) pair(t *testing.T, srvWho, cliWho string, srvArgs, cliArgs []string) (srv, cli *proc) {
	t.Helper()
	port := e.port()
	srv = e.start(t, srvWho, append([]string{"-s", "-a", e.addr, "-p", port}, srvArgs...)...)
	e.waitListening(t, srv, port)
	cli = e.start(t, cliWho, append([]string{"-c", "-a", e.addr, "-p", port}, cliArgs...)...)
	e.wait(t, cli)
	e.wait(t, srv)
	return srv, cli
}

// rpingTeardownRace tells whether rdma-core's rping failed only in its own
// teardown. Without rdma-core commit f3ae6534a ("rping: terminate CM
// event thread before exiting": v59, and stable releases such as v44.11;
// the lab's Debian packages lack it), rping's main thread destroys the CM event channel while its CM
// thread may be about to read it again: that thread then prints
// "rdma_get_cm_event: Bad file descriptor" and exits -1 (255), after the
// disconnect and after every ping was printed. Such a run counts when the
// rest of its stderr is what a clean run prints (the disconnect, and the
// server's note that the client went); its output is judged as a clean
// run's is. Any other failure stands.
func rpingTeardownRace(p *proc) bool {
	if p.who != "rping" || p.code != exitFailed {
		return false
	}
	l := lines(p.errb.String())
	if len(l) < 2 || l[len(l)-1] != "rdma_get_cm_event: Bad file descriptor" {
		return false
	}
	for _, s := range l[:len(l)-1] {
		switch s {
		case "client DISCONNECT EVENT...", "server DISCONNECT EVENT...", "wait for RDMA_READ_ADV state 10":
		default:
			return false
		}
	}
	return true
}

func dump(p *proc) string {
	return fmt.Sprintf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", p, p.code, p.out.String(), p.errb.String())
}

// TestInterop runs, on each device pair of the lab (rxe and siw), each
// option set with rping on both sides first: that
// gives the reference output. Then ours as the server, as the client, and
// on both sides must exit 0 and print the same lines as rping did in the
// same role; our stderr holds only rping's DISCONNECT line.
func TestInterop(t *testing.T) {
	testutil.EachLabPair(t, func(t *testing.T, p testutil.LabPair) { testInterop(t, newEnvOn(t, p.Ends)) })
}

func testInterop(t *testing.T, e *rpingEnv) {
	sets := []struct {
		name     string
		srv, cli []string
		pings    int // -v lines each side prints
	}{
		{"default", []string{"-v"}, []string{"-v", "-V", "-C", "10"}, 10},
		// The smallest size, and more pings than there are letters (58), so
		// the first letter runs round from 'z' to 'A'.
		{"size23", []string{"-v", "-S", "23"}, []string{"-v", "-V", "-S", "23", "-C", "60"}, 60},
		{"size65535", []string{"-v", "-S", "65535"}, []string{"-vV", "-S65535", "-C3"}, 3},
		// No -V; the server larger than the client.
		{"size100", []string{"-v", "-S", "200"}, []string{"-v", "-S", "100", "-C", "5"}, 5},
		// Not verbose: nothing on stdout.
		{"quiet", []string{}, []string{"-V", "-C", "20"}, 0},
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			refSrv, refCli := e.pair(t, "rping", "rping", set.srv, set.cli)
			if refSrv.code != 0 || refCli.code != 0 {
				t.Fatalf("rping against rping failed:\n%s\n%s", dump(refSrv), dump(refCli))
			}
			ref := map[string][]string{"server": lines(refSrv.out.String()), "client": lines(refCli.out.String())}
			for role, l := range ref {
				if len(l) != set.pings {
					t.Fatalf("rping's %s printed %d lines, want %d:\n%s", role, len(l), set.pings, strings.Join(l, "\n"))
				}
			}
			for _, c := range [][2]string{{"ours", "rping"}, {"rping", "ours"}, {"ours", "ours"}} {
				t.Run(c[0]+"-server_"+c[1]+"-client", func(t *testing.T) {
					srv, cli := e.pair(t, c[0], c[1], set.srv, set.cli)
					for _, x := range []struct {
						role string
						p    *proc
					}{{"server", srv}, {"client", cli}} {
						if x.p.code != 0 {
							t.Errorf("%s failed:\n%s", x.role, dump(x.p))
							continue
						}
						compareLines(t, x.role, lines(x.p.out.String()), ref[x.role])
						if x.p.who == "ours" {
							if want := x.role + " DISCONNECT EVENT...\n"; x.p.errb.String() != want {
								t.Errorf("our %s's stderr is %q, want %q", x.role, x.p.errb.String(), want)
							}
						}
					}
				})
			}
		})
	}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func compareLines(t *testing.T, role string, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%s: line %d is\n%.200q\nrping printed\n%.200q\n(%d lines, rping %d)", role, i+1, g, w, len(got), len(want))
			return
		}
	}
}

// TestPersistentServer: our -P server serves rping clients and ours at the
// same time, then stops on cancel.
func TestPersistentServer(t *testing.T) {
	e := newEnv(t)
	port := e.port()
	srv := e.startOurs(t, nil, "-s", "-P", "-v", "-a", e.addr, "-p", port)
	e.waitListening(t, srv, port)
	args := func(n int) []string {
		return []string{"-c", "-v", "-V", "-a", e.addr, "-p", port, "-C", strconv.Itoa(n)}
	}
	clients := []*proc{
		e.startC(t, args(8)...),
		e.startOurs(t, nil, args(5)...),
		e.startC(t, args(3)...),
	}
	var want []string
	for _, c := range clients {
		if code := e.wait(t, c); code != 0 {
			t.Fatalf("client failed:\n%s\nserver:\n%s", dump(c), dump(srv))
		}
		for _, l := range lines(c.out.String()) {
			want = append(want, "server "+l)
		}
	}
	// A client after the others: the server still serves.
	late := e.startOurs(t, nil, args(2)...)
	if code := e.wait(t, late); code != 0 {
		t.Fatalf("late client failed:\n%s", dump(late))
	}
	for _, l := range lines(late.out.String()) {
		want = append(want, "server "+l)
	}
	// The server's lines interleave; each connection's DISCONNECT line
	// comes once it ends, just after the client's ending.
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(srv.errb.String(), "server DISCONNECT EVENT...\n") < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	srv.stop() // as SIGINT does
	if code := e.wait(t, srv); code != exitInterrupted {
		t.Errorf("stopped server exit code %d, want %d", code, exitInterrupted)
	}
	got := lines(srv.out.String())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("server printed (sorted):\n%s\nwant the clients' lines:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := srv.errb.String(); got != strings.Repeat("server DISCONNECT EVENT...\n", 4) {
		t.Errorf("server stderr %q, want 4 DISCONNECT lines", got)
	}
}

// TestErrors: each failure is one line on stderr and exit code 255, as
// rping's; rping's own outcome in the same case is checked where it helps.
func TestErrors(t *testing.T) {
	e := newEnv(t)
	oneLine := func(t *testing.T, p *proc, want ...string) {
		t.Helper()
		if p.code != exitFailed {
			t.Errorf("exit code %d, want %d\n%s", p.code, exitFailed, dump(p))
		}
		// rping's line on the end of the connection may come first.
		msg, _ := strings.CutPrefix(p.errb.String(), "client DISCONNECT EVENT...\n")
		if !strings.HasPrefix(msg, "rping: ") || strings.Count(msg, "\n") != 1 {
			t.Errorf("stderr %q, want one line starting \"rping: \"", msg)
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("stderr %q does not say %q", msg, w)
			}
		}
	}

	t.Run("no_listener", func(t *testing.T) {
		p := e.startOurs(t, nil, "-c", "-a", e.addr, "-p", e.port(), "-C", "1")
		e.wait(t, p)
		oneLine(t, p, "nothing listens on that port")
		c := e.startC(t, "-c", "-a", e.addr, "-p", e.port(), "-C", "1")
		if code := e.wait(t, c); code != exitFailed || !strings.Contains(c.errb.String(), "RDMA_CM_EVENT_REJECTED, error 8") {
			t.Errorf("rping in the same case:\n%s", dump(c))
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		// An address on the veth's subnet that nobody has: no ARP answer.
		pfx := netip.MustParsePrefix(e.addr + "/24").Masked()
		dead := pfx.Addr().As4()
		dead[3] = 234
		p := e.startOurs(t, nil, "-c", "-a", netip.AddrFrom4(dead).String(), "-p", e.port(), "-C", "1")
		e.wait(t, p)
		oneLine(t, p, "RDMA_CM_EVENT_ADDR_ERROR", "timed out")
	})

	t.Run("rejected", func(t *testing.T) {
		port := e.port()
		l, err := rdmacm.Listen(e.ctx, e.addr+":"+port, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		rejected := make(chan error, 1)
		go func() {
			c, err := l.GetRequest(e.ctx)
			if err == nil {
				err = c.Reject([]byte("go away"))
			}
			rejected <- err
		}()
		p := e.startOurs(t, nil, "-c", "-a", e.addr, "-p", port, "-C", "1")
		e.wait(t, p)
		if err := <-rejected; err != nil {
			t.Fatal(err)
		}
		oneLine(t, p, "rejected by the peer")
	})

	t.Run("bad_address", func(t *testing.T) {
		p := e.startOurs(t, nil, "-s", "-a", "10.77.99.1", "-p", e.port())
		e.wait(t, p)
		oneLine(t, p, "10.77.99.1", "cannot assign requested address")
	})

	t.Run("bad_source", func(t *testing.T) {
		p := e.startOurs(t, nil, "-c", "-I", "10.77.99.2", "-a", e.addr, "-p", e.port(), "-C", "1")
		e.wait(t, p)
		oneLine(t, p, "source 10.77.99.2")
	})

	// A client pinging with more than the server's -S.
	t.Run("size_our_server", func(t *testing.T) {
		srv, cli := e.pair(t, "ours", "rping", []string{"-S", "30"}, []string{"-S", "100", "-C", "2"})
		oneLine(t, srv, "the client pings with 100 bytes, more than this server's 30")
		t.Logf("rping as the client: exit %d, stderr %q", cli.code, cli.errb.String())
	})
	t.Run("size_rping_server", func(t *testing.T) {
		srv, cli := e.pair(t, "rping", "ours", []string{"-S", "30"}, []string{"-S", "100", "-C", "2"})
		oneLine(t, cli, "the server disconnected before the 2 pings were done")
		if srv.code != exitFailed || !strings.Contains(srv.errb.String(), "cq completion failed") {
			t.Errorf("rping as the server:\n%s", dump(srv))
		}
	})

	// A server that changes the data: -V catches it, ours and rping's; without
	// -V the client prints what came back.
	t.Run("validate", func(t *testing.T) {
		for _, cli := range []string{"ours", "rping"} {
			port := e.port()
			srv := e.startOurs(t, func(o *options) { o.corrupt = true }, "-s", "-a", e.addr, "-p", port)
			e.waitListening(t, srv, port)
			c := e.start(t, cli, "-c", "-V", "-a", e.addr, "-p", port, "-C", "3")
			e.wait(t, c)
			e.wait(t, srv)
			if cli == "ours" {
				oneLine(t, c, "data mismatch in ping 0: byte 0 is 0x73, 0x72 was sent")
			} else if c.code != exitFailed || !strings.Contains(c.errb.String(), "data mismatch!") {
				t.Errorf("rping -V against a server that changes the data:\n%s", dump(c))
			}
			if srv.code != 0 {
				t.Errorf("server:\n%s", dump(srv))
			}
		}
	})
	t.Run("no_validate", e.pairCorrupt)
}

// pairCorrupt: without -V a client prints the data the (corrupting) server
// wrote back.
func (e *rpingEnv) pairCorrupt(t *testing.T) {
	t.Helper()
	port := e.port()
	srv := e.startOurs(t, func(o *options) { o.corrupt = true }, "-s", "-a", e.addr, "-p", port)
	e.waitListening(t, srv, port)
	cli := e.startOurs(t, nil, "-c", "-v", "-a", e.addr, "-p", port, "-C", "2")
	if e.wait(t, cli) != 0 || e.wait(t, srv) != 0 {
		t.Fatalf("%s\n%s", dump(cli), dump(srv))
	}
	want := []string{
		"ping data: sdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr",
		"ping data: sdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs",
	}
	compareLines(t, "client", lines(cli.out.String()), want)
}

// TestSourceAndDebug: -I binds the client's source address; -d prints the
// CM's steps and the data path's.
func TestSourceAndDebug(t *testing.T) {
	e := newEnv(t)
	srv, cli := e.pair(t, "ours", "ours", []string{"-d"}, []string{"-d", "-V", "-C", "2", "-I", e.addr})
	for _, p := range []*proc{srv, cli} {
		if p.code != 0 {
			t.Fatalf("%s", dump(p))
		}
	}
	for _, w := range []string{"cm: resolve address " + e.addr + ":", " from " + e.addr + " (timeout", "cm: event RDMA_CM_EVENT_ESTABLISHED", "rdma_connect successful", "RDMA addr "} {
		if !strings.Contains(cli.out.String(), w) {
			t.Errorf("client -d output has no %q:\n%s", w, cli.out.String())
		}
	}
	for _, w := range []string{"cm: listen on", "cm: event RDMA_CM_EVENT_CONNECT_REQUEST", "server posted rdma read req", "server rdma write complete"} {
		if !strings.Contains(srv.out.String(), w) {
			t.Errorf("server -d output has no %q:\n%s", w, srv.out.String())
		}
	}
}

// TestEndless: with -C 0 the client pings until stopped. Stopping our client
// (SIGINT) ends rping's server normally; killing rping's client ends our
// server normally (the kernel disconnects the dead process's connection),
// also when the kill lands mid-ping and the server's work in flight fails
// because the client's MRs went first (TestPeerGoneMidPing).
func TestEndless(t *testing.T) {
	e := newEnv(t)
	waitLines := func(t *testing.T, p *proc, n int) {
		t.Helper()
		for len(lines(p.out.String())) < n {
			select {
			case code := <-p.done:
				t.Fatalf("%v ended with %d:\n%s", p, code, dump(p))
			case <-e.ctx.Done():
				t.Fatalf("%v printed no %d lines:\n%s", p, n, dump(p))
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	for _, c := range [][2]string{{"rping", "ours"}, {"ours", "rping"}} {
		t.Run(c[0]+"-server_"+c[1]+"-client", func(t *testing.T) {
			port := e.port()
			srv := e.start(t, c[0], "-s", "-v", "-a", e.addr, "-p", port)
			e.waitListening(t, srv, port)
			cli := e.start(t, c[1], "-c", "-v", "-V", "-a", e.addr, "-p", port)
			waitLines(t, cli, 5)
			cli.stop()
			code := e.wait(t, cli)
			if c[1] == "ours" && code != exitInterrupted {
				t.Errorf("our stopped client exit code %d, want %d:\n%s", code, exitInterrupted, dump(cli))
			}
			stoppedServer := false
			if c[0] == "rping" {
				// rping's server can hang after its client goes: it breaks
				// out of its loop on the DISCONNECTED event and then joins
				// its CQ thread, which waits for a completion event that
				// does not come when no receive was left to flush. What
				// must hold is that the disconnect reached it.
				// When the stop lands in the middle of a ping, rping's server
				// fails that ping and exits with -1 ("wait for
				// RDMA_WRITE_COMPLETE state 10"), as it does when a C client
				// goes: that is rping's own accounting; our side's part is
				// that the disconnect reached it.
				// The disconnect may be slow to come on a loaded machine:
				// only the test's own timeout bounds the wait for it; once
				// seen, the server has 15 s to end.
				disconnected := func() bool { return strings.Contains(srv.errb.String(), "server DISCONNECT EVENT...") }
				var grace <-chan time.Time
			waiting:
				for {
					select {
					case srv.code = <-srv.done:
						srv.ended = true
						if !disconnected() {
							t.Errorf("rping server exit code %d, and no disconnect seen, after its client went:\n%s", srv.code, dump(srv))
						}
						break waiting
					case <-grace:
						t.Logf("rping's server got the disconnect but did not end (its CQ thread waits on): stopping it")
						srv.stop()
						e.wait(t, srv)
						stoppedServer = true
						break waiting
					case <-e.ctx.Done():
						t.Fatalf("rping server saw no disconnect after our client went:\n%s", dump(srv))
					case <-time.After(20 * time.Millisecond):
						if grace == nil && disconnected() {
							grace = time.After(15 * time.Second)
						}
					}
				}
			} else if code := e.wait(t, srv); code != 0 {
				t.Errorf("server exit code %d after its client went:\n%s", code, dump(srv))
			}
			if c[0] == "ours" && srv.errb.String() != "server DISCONNECT EVENT...\n" {
				t.Errorf("our server's stderr %q", srv.errb.String())
			}
			// What the server printed is what the client sent: as many
			// pings as the client printed, or one more. A killed rping
			// loses what its stdout buffer held, even half a line.
			if stoppedServer {
				return // a killed rping's buffered stdout is lost
			}
			sl, cl := lines(srv.out.String()), lines(cli.out.String())
			if c[1] == "rping" {
				if !strings.HasSuffix(cli.out.String(), "\n") {
					cl = cl[:len(cl)-1]
				}
				if len(sl) < len(cl) {
					t.Errorf("server printed %d pings, client %d", len(sl), len(cl))
				}
			} else if len(sl) < len(cl) || len(sl) > len(cl)+1 {
				t.Errorf("server printed %d pings, client %d", len(sl), len(cl))
			}
			for i := range min(len(sl), len(cl)) {
				if sl[i] != "server "+cl[i] {
					t.Errorf("ping %d: server %q, client %q", i, sl[i], cl[i])
					break
				}
			}
		})
	}
}

// TestRpingTeardownRace: only a run whose stderr is a clean run's plus the
// race's line counts as rping's exit 0.
func TestRpingTeardownRace(t *testing.T) {
	const race = "rdma_get_cm_event: Bad file descriptor\n"
	for _, c := range []struct {
		who, stderr string
		code        int
		want        bool
	}{
		{"rping", "client DISCONNECT EVENT...\n" + race, exitFailed, true},
		{"rping", "server DISCONNECT EVENT...\nwait for RDMA_READ_ADV state 10\n" + race, exitFailed, true},
		{"ours", "client DISCONNECT EVENT...\n" + race, exitFailed, false},
		{"rping", "client DISCONNECT EVENT...\n" + race, 1, false},
		{"rping", race, exitFailed, false},
		{"rping", "client DISCONNECT EVENT...\n", exitFailed, false},
		{"rping", "server DISCONNECT EVENT...\ncq completion failed status 5\n" + race, exitFailed, false},
	} {
		p := &proc{who: c.who, code: c.code}
		p.errb.Write([]byte(c.stderr))
		if got := rpingTeardownRace(p); got != c.want {
			t.Errorf("%s exit %d, stderr %q: %v, want %v", c.who, c.code, c.stderr, got, c.want)
		}
	}
}

// TestPeerGoneMidPing: a client whose ping source is deregistered before
// our server READs it gets that READ a remote access error (the MR closed
// under its rkey; kernel rxe_resp.c check_rkey). A client that then
// disconnects has gone, as a stopped client does: our server ends the run
// as on a disconnect (exit 0, only the disconnect on stderr). A client that
// stays connected leaves the error standing (exit 255, the failed
// completion on stderr).
func TestPeerGoneMidPing(t *testing.T) {
	e := newEnv(t)
	for _, disconnect := range []bool{true, false} {
		name := "stays"
		if disconnect {
			name = "disconnects"
		}
		t.Run(name, func(t *testing.T) {
			port := e.port()
			srv := e.startOurs(t, nil, "-s", "-d", "-a", e.addr, "-p", port)
			e.waitListening(t, srv, port)
			o, err := parseArgs([]string{"-c", "-a", e.addr, "-p", port})
			if err != nil {
				t.Fatal(err)
			}
			var out, errb testutil.SyncBuffer
			ow, ew := &cmdline.LockedWriter{W: &out}, &cmdline.LockedWriter{W: &errb}
			conn, err := rdmacm.Resolve(e.ctx, net.JoinHostPort(e.addr, port), cmConfig(o, ow))
			if err != nil {
				t.Fatal(err)
			}
			s, err := newSession(e.ctx, o, "client", conn, ow, ew)
			defer func() {
				if err := s.close(); err != nil {
					t.Errorf("client close: %v", err)
				}
			}()
			if err != nil {
				t.Fatal(err)
			}
			if err := conn.Connect(e.ctx, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.startMR.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.sendInfo(s.startMR); err != nil {
				t.Fatal(err)
			}
			// The server's debug line shows the failure came before
			// any disconnect.
			failed := fmt.Sprintf("cq completion failed status %d (%v) on work request %d",
				uint32(uverbs.WCRemoteAccessError), uverbs.WCRemoteAccessError, wrRDMA)
			for !strings.Contains(srv.out.String(), failed) {
				select {
				case srv.code = <-srv.done:
					srv.ended = true
					t.Fatalf("server ended before its READ failed:\n%s", dump(srv))
				case <-e.ctx.Done():
					t.Fatalf("server printed no %q:\n%s", failed, dump(srv))
				case <-time.After(20 * time.Millisecond):
				}
			}
			want, wantErr := exitOK, "server DISCONNECT EVENT...\n"
			if disconnect {
				if err := conn.Disconnect(); err != nil {
					t.Fatal(err)
				}
			} else {
				want, wantErr = exitFailed, "rping: "+failed+"\n"
			}
			if code := e.wait(t, srv); code != want {
				t.Errorf("server exit code %d, want %d:\n%s", code, want, dump(srv))
			}
			if got := srv.errb.String(); got != wantErr {
				t.Errorf("server stderr %q, want %q", got, wantErr)
			}
		})
	}
}
