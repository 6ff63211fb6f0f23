package tutorial

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
)

// The programs on the lab's veth pair: servers listen on the first end's
// address (rxe1), clients connect to it and the CM picks the devices. Both
// sides run in this test binary (Main, as the commands do), or as a
// process of it (childMain) where a process must be killed or measured.

type labEnv struct {
	addr string
	ctx  context.Context
}

var (
	portMu   sync.Mutex
	nextPort = 23000
)

func newLab(t *testing.T) *labEnv {
	t.Helper()
	return newLabAt(t, testutil.VethPair(t)[0].Addr)
}

// newLabSiw is the lab on the siw (soft-iWARP) devices: servers listen on
// the first siw end's address.
func newLabSiw(t *testing.T) *labEnv {
	t.Helper()
	return newLabAt(t, testutil.SiwPair(t)[0].Addr)
}

func newLabAt(t *testing.T, addr string) *labEnv {
	t.Helper()
	// The limit only turns a hang into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return &labEnv{addr: addr, ctx: ctx}
}

func (e *labEnv) port() string {
	portMu.Lock()
	defer portMu.Unlock()
	nextPort++
	return strconv.Itoa(nextPort)
}

// proc is one run of a program: in-process or a child process.
type proc struct {
	name   string
	out    testutil.SyncBuffer
	errb   testutil.SyncBuffer
	done   <-chan int
	code   int
	cancel context.CancelFunc
	cmd    *exec.Cmd
}

func (p *proc) String() string {
	return fmt.Sprintf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", p.name, p.code, p.out.String(), p.errb.String())
}

// start runs Main in a goroutine; cancelling is Ctrl-C.
func (e *labEnv) start(t *testing.T, server bool, args ...string) *proc {
	t.Helper()
	done := make(chan int, 1)
	p := &proc{name: fmt.Sprintf("server=%v %q", server, args), done: done}
	ctx, cancel := context.WithCancel(e.ctx)
	p.cancel = cancel
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- Main(ctx, server, args, &p.out, &p.errb)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(time.Minute):
			t.Errorf("%s still running a minute after Ctrl-C", p.name)
		}
	})
	return p
}

// child runs the program as a process of this test binary.
func (e *labEnv) child(t *testing.T, server bool, env []string, args ...string) *proc {
	t.Helper()
	role := "client"
	if server {
		role = "server"
	}
	j, _ := json.Marshal(args)
	p := &proc{name: fmt.Sprintf("%s process %q", role, args)}
	cmd := exec.CommandContext(e.ctx, os.Args[0])
	cmd.Env = append(append(os.Environ(), "TUTORIAL_CHILD="+role, "TUTORIAL_ARGS="+string(j)), env...)
	cmd.Stdout, cmd.Stderr = &p.out, &p.errb
	p.cmd = cmd
	p.done = testutil.StartProcess(t, cmd)
	return p
}

// wait waits until p ends and returns its exit code. On a hang it fails
// with p's output, that of peers (the other side, still running) and the
// goroutines of the test binary, where both in-process sides run.
func (e *labEnv) wait(t *testing.T, p *proc, peers ...*proc) int {
	t.Helper()
	select {
	case p.code = <-p.done:
		return p.code
	case <-e.ctx.Done():
		t.Fatalf("did not end: %v%s", p, hangReport(peers))
	}
	return -1
}

// waitFor waits until p's stdout has s; on a hang it fails as wait does.
func (e *labEnv) waitFor(t *testing.T, p *proc, s string, peers ...*proc) {
	t.Helper()
	for !strings.Contains(p.out.String(), s) {
		select {
		case p.code = <-p.done:
			t.Fatalf("ended before printing %q: %v", s, p)
		case <-e.ctx.Done():
			t.Fatalf("never printed %q: %v%s", s, p, hangReport(peers))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// hangReport is the output of the peers of a program that hung, and every
// goroutine's stack.
func hangReport(peers []*proc) string {
	var b strings.Builder
	for _, q := range peers {
		fmt.Fprintf(&b, "\n\npeer %s (still running or ended unseen)\nstdout:\n%s\nstderr:\n%s", q.name, q.out.String(), q.errb.String())
	}
	buf := make([]byte, 1<<20)
	fmt.Fprintf(&b, "\n\ngoroutines:\n%s", buf[:runtime.Stack(buf, true)])
	return b.String()
}

// server starts a server (in-process) on a fresh port and waits until it
// listens.
func (e *labEnv) server(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	port := e.port()
	p := e.start(t, true, append([]string{"-a", e.addr, "-p", port}, args...)...)
	e.waitFor(t, p, "listening on "+e.addr+":"+port)
	return p, port
}

// stop interrupts an in-process server and checks that it stops cleanly.
func (e *labEnv) stop(t *testing.T, srv *proc) {
	t.Helper()
	srv.cancel()
	if code := e.wait(t, srv); code != ExitOK || !strings.Contains(srv.out.String(), "stopped after") {
		t.Errorf("the server did not stop cleanly: %v", srv)
	}
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

var peerPrefix = regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+:\d+: `)

// serverLines are the server's lines about connections, without the peer.
func serverLines(out string) []string {
	var r []string
	for _, l := range lines(out) {
		if peerPrefix.MatchString(l) {
			r = append(r, peerPrefix.ReplaceAllString(l, ""))
		}
	}
	return r
}

// goToGoCase is one mode run by our server and our client: the client's
// extra arguments and output, the server's lines about the connection.
type goToGoCase struct {
	proto, mode string
	cli         []string
	client      string
	server      []string
}

func goToGoCases() []goToGoCase {
	pid := os.Getpid()
	return []goToGoCase{
		{"geek", "write", nil, fmt.Sprintf("remote buffer: message from passive/server side with pid %d", pid),
			[]string{fmt.Sprintf("remote buffer: message from active/client side with pid %d", pid)}},
		{"geek", "read", []string{"-s", "read me"}, fmt.Sprintf("remote buffer: message from passive/server side with pid %d", pid),
			[]string{"remote buffer: read me"}},
		{"geek", "send", nil, fmt.Sprintf("received message: message from passive/server side with pid %d", pid),
			[]string{fmt.Sprintf("received message: message from active/client side with pid %d", pid)}},
		{"rdma-example", "write-read", []string{"-s", "hello world 789"}, "SUCCESS, source and destination buffers match",
			[]string{"client buffer: addr=", "buffer after the client's operations: hello world 789"}},
		{"roce-lab", "write", []string{"-s", "client-wrote-this"}, "Client read back: 'client-wrote-this'",
			[]string{"Server buffer after client ops: 'client-wrote-this'"}},
		{"roce-lab", "imm", []string{"-s", "imm payload 42"}, "RDMA_WRITE_WITH_IMM completed: 15 bytes, imm_data=15",
			[]string{"imm_data=15, 15 bytes arrived: 'imm payload 42'"}},
	}
}

// TestGoToGo: every protocol and mode, our server and our client, with -v
// on both sides.
func TestGoToGo(t *testing.T) {
	goToGo(t, newLab(t), goToGoCases())
}

// TestGoToGoSiw: every mode without immediate data over siw (iWARP).
func TestGoToGoSiw(t *testing.T) {
	var cases []goToGoCase
	for _, c := range goToGoCases() {
		p, err := LookupProtocol(c.proto)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := p.Mode(c.mode); err != nil || !m.Imm {
			cases = append(cases, c)
		}
	}
	if len(cases) != len(goToGoCases())-1 {
		t.Fatalf("%d of %d modes left for iWARP, want all but roce-lab imm", len(cases), len(goToGoCases()))
	}
	goToGo(t, newLabSiw(t), cases)
}

func goToGo(t *testing.T, e *labEnv, cases []goToGoCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.proto+"_"+c.mode, func(t *testing.T) {
			srv, port := e.server(t, "-v", "--proto", c.proto, c.mode)
			cli := e.start(t, false, append([]string{"-v", "--proto", c.proto, c.mode, e.addr, port}, c.cli...)...)
			if code := e.wait(t, cli, srv); code != 0 || cli.out.String() != c.client+"\n" {
				t.Fatalf("client: want %q\n%v\nserver:\n%v", c.client, cli, srv)
			}
			// The server reports the connection's end once the CM has told it.
			e.waitFor(t, srv, ": connection closed", cli)
			want := append(append([]string{"connection request"}, c.server...), "connection closed")
			got := serverLines(srv.out.String())
			if len(got) != len(want) {
				t.Fatalf("server printed %q, want %q", got, want)
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					t.Errorf("server line %d: %q, want %q", i+1, got[i], want[i])
				}
			}
			e.stop(t, srv)
			checkTrace(t, "client", cli.errb.String(), true)
			// The roce-lab write server posts nothing: the client's
			// WRITE and READ are one-sided.
			checkTrace(t, "server", srv.errb.String(), c.proto != "roce-lab" || c.mode != "write")
		})
	}
}

// checkTrace checks that a -v trace tells the planes apart and has the
// steps issue 7 lists; fast tells whether this side posts work requests.
func checkTrace(t *testing.T, who, trace string, fast bool) {
	t.Helper()
	line := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\.\d{3} #(\d{4,}) [^\]]+\] (SLOW|FAST|DATA) +\S`)
	step := 0
	for _, l := range lines(trace) {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("%s: trace line %q is not [time #step who] KIND text", who, l)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n != step+1 {
			t.Errorf("%s: step %d after %d", who, n, step)
		}
		step = n
	}
	want := []string{
		"SLOW  create CM channel", "QP dump: qpn=", "state=INIT", "state=RTS", "QP caps: max_send_wr=",
		"SLOW  MR ", " lkey=", " rkey=", "ESTABLISHED", "private data", "DATA  ", "cm] SLOW  ",
	}
	if fast {
		want = append(want, "FAST  post ", "sge={addr=", "FAST  WC wr_id=", "status=IBV_WC_SUCCESS", "qp_num=")
	}
	if who == "server" {
		// The server dumps its QP when Accept has returned. By then a
		// client whose work needs nothing more from the server (one-sided
		// WRITEs and READs, a WRITE_WITH_IMM into a receive posted before
		// the accept) may have finished and disconnected, and rdmacm
		// answers a DISCONNECTED at once by moving the QP to ERR
		// (rdmacm/cm_id.go deliver; Accept succeeds even when the
		// DISCONNECTED comes first, awaitEstablished): on a loaded machine
		// it happens. Accept moved the QP to RTS before either.
		want[slices.Index(want, "state=RTS")] = "state="
		if !regexp.MustCompile(`QP dump: qpn=\S+ state=(RTS|ERR) `).MatchString(trace) {
			t.Errorf("server: the QP dump shows neither RTS nor ERR (after a disconnect)")
		}
	}
	for _, want := range want {
		if !strings.Contains(trace, want) {
			t.Errorf("%s: the trace has no %q", who, want)
		}
	}
	if who == "client" && !strings.Contains(trace, "resolve address") {
		t.Errorf("client: the trace has no address resolution")
	}
	if who == "server" && !strings.Contains(trace, "listen on") {
		t.Errorf("server: the trace has no listen")
	}
	if t.Failed() {
		t.Logf("%s trace:\n%s", who, trace)
	}
}

// TestManyClients: 8 clients at once against one server.
func TestManyClients(t *testing.T) {
	e := newLab(t)
	srv, port := e.server(t, "write")
	var clients []*proc
	for i := range 8 {
		clients = append(clients, e.start(t, false, "write", e.addr, port, "-s", fmt.Sprintf("client %d", i)))
	}
	want := fmt.Sprintf("remote buffer: message from passive/server side with pid %d\n", os.Getpid())
	for _, c := range clients {
		if code := e.wait(t, c); code != 0 || c.out.String() != want {
			t.Errorf("client: %v", c)
		}
	}
	for strings.Count(srv.out.String(), ": connection closed") < 8 && e.ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	got := serverLines(srv.out.String())
	for i := range 8 {
		if !slicesContains(got, fmt.Sprintf("remote buffer: client %d", i)) {
			t.Errorf("the server did not get client %d's message: %q", i, got)
		}
	}
	if n := strings.Count(srv.out.String(), ": connection closed"); n != 8 {
		t.Errorf("%d connections closed, want 8:\n%v", n, srv)
	}
	e.stop(t, srv)
}

func slicesContains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestKilledClient: a client process killed in the middle of its session
// leaves the server and the other clients unharmed.
func TestKilledClient(t *testing.T) {
	e := newLab(t)
	for _, c := range []struct{ proto, mode, missing string }{
		{"geek", "write", "connection failed: the peer disconnected before sending its MSG_MR"},
		{"rdma-example", "write-read", "connection failed: RECV of the client's buffer attributes: the peer disconnected first"},
	} {
		t.Run(c.proto, func(t *testing.T) {
			srv, port := e.server(t, "--proto", c.proto, c.mode)
			first := e.start(t, false, "--proto", c.proto, c.mode, e.addr, port)
			victim := e.child(t, false, []string{"TUTORIAL_PAUSE=established"}, "--proto", c.proto, c.mode, e.addr, port)
			e.waitFor(t, victim, "paused after ESTABLISHED")
			// Another client while the victim holds its connection.
			second := e.start(t, false, "--proto", c.proto, c.mode, e.addr, port)
			victim.cmd.Process.Signal(syscall.SIGKILL)
			e.wait(t, victim)
			e.waitFor(t, srv, c.missing)
			third := e.start(t, false, "--proto", c.proto, c.mode, e.addr, port)
			for _, p := range []*proc{first, second, third} {
				if code := e.wait(t, p); code != 0 {
					t.Errorf("a client beside the killed one failed: %v", p)
				}
			}
			for strings.Count(srv.out.String(), ": connection closed") < 3 && e.ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond)
			}
			if n := strings.Count(srv.out.String(), ": connection closed"); n != 3 {
				t.Errorf("%d connections closed, want 3\n%v", n, srv)
			}
			e.stop(t, srv)
		})
	}
}

// procStats are the resources of a process: open fds, mappings, resident
// memory.
type procStats struct{ fds, maps, rssKB int }

func statsOf(t *testing.T, pid int) procStats {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := procStats{fds: len(fds), maps: strings.Count(string(maps), "\n")}
	if m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(status); m != nil {
		s.rssKB, _ = strconv.Atoi(string(m[1]))
	}
	return s
}

// rdmaResources counts the RDMA objects of the process on the lab's
// devices, by `rdma resource show`: QPs, CQs, MRs, PDs and CM IDs. The
// kernel records the thread that made each object (its "pid" is the
// thread's ID), so every thread of the process counts.
func rdmaResources(t *testing.T, ctx context.Context, pid int) map[string]int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	ours := map[int]bool{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		ours[tid] = true
	}
	counts := map[string]int{}
	for _, kind := range []string{"qp", "cq", "mr", "pd", "cm_id"} {
		out, err := exec.CommandContext(ctx, "rdma", "-j", "resource", "show", kind).Output()
		if err != nil {
			t.Fatalf("rdma resource show %s: %v", kind, err)
		}
		var objs []struct {
			PID int `json:"pid"`
		}
		if err := json.Unmarshal(out, &objs); err != nil {
			t.Fatalf("rdma resource show %s: %v in %q", kind, err, out)
		}
		for _, o := range objs {
			if ours[o.PID] {
				counts[kind]++
			}
		}
	}
	return counts
}

// TestSequentialConnections: after 100 connections one after the other,
// the server process has the fds, mappings, RDMA objects and (within
// slack) the memory it had after the first few.
func TestSequentialConnections(t *testing.T) {
	e := newLab(t)
	port := e.port()
	srv := e.child(t, true, nil, "-a", e.addr, "-p", port, "write")
	e.waitFor(t, srv, "listening on")
	pid := srv.cmd.Process.Pid
	connect := func(n int) {
		t.Helper()
		for i := range n {
			c := e.start(t, false, "write", e.addr, port, "-s", "conn "+strconv.Itoa(i))
			if code := e.wait(t, c); code != 0 {
				t.Fatalf("connection %d: %v\nserver:\n%v", i, c, srv)
			}
		}
	}
	// settled waits until the server has closed total connections.
	settled := func(total int) {
		t.Helper()
		for strings.Count(srv.out.String(), ": connection closed") < total {
			select {
			case <-e.ctx.Done():
				t.Fatalf("the server closed %d of %d connections: %v", strings.Count(srv.out.String(), ": connection closed"), total, srv)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	connect(5)
	settled(5)
	base, baseRes := statsOf(t, pid), rdmaResources(t, e.ctx, pid)
	start := time.Now()
	connect(100)
	settled(105)
	after, afterRes := statsOf(t, pid), rdmaResources(t, e.ctx, pid)
	t.Logf("100 connections in %v; server before %+v %v, after %+v %v", time.Since(start).Round(time.Millisecond), base, baseRes, after, afterRes)
	if after.fds != base.fds {
		t.Errorf("the server has %d fds, %d before the 100 connections", after.fds, base.fds)
	}
	// The Go runtime may map a little more heap; 100 connections' worth of
	// rings and buffers would be hundreds of mappings.
	if after.maps > base.maps+16 {
		t.Errorf("the server has %d mappings, %d before the 100 connections", after.maps, base.maps)
	}
	// Under -race the race detector's own memory (shadow and history of
	// every goroutine and allocation) grows with the work done, by more than
	// the slack; the other checks still hold there.
	if after.rssKB > base.rssKB+16*1024 && !testutil.RaceEnabled {
		t.Errorf("the server's RSS grew from %d kB to %d kB", base.rssKB, after.rssKB)
	}
	for k, v := range baseRes {
		if afterRes[k] != v {
			t.Errorf("the server has %d %s objects, %d before", afterRes[k], k, v)
		}
	}
	if baseRes["cm_id"] != 1 || baseRes["qp"] != 0 {
		t.Errorf("an idle server should hold its listening CM ID only: %v", baseRes)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if code := e.wait(t, srv); code != 0 || !strings.Contains(srv.out.String(), "stopped after 105 connection(s)") {
		t.Errorf("server after SIGTERM: %v", srv)
	}
}

// TestSignals: SIGINT and SIGTERM stop a server cleanly even with a client
// connected, and interrupt a client with exit 130.
func TestSignals(t *testing.T) {
	e := newLab(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			port := e.port()
			srv := e.child(t, true, nil, "-a", e.addr, "-p", port, "--proto", "roce-lab")
			e.waitFor(t, srv, "listening on")
			cli := e.child(t, false, []string{"TUTORIAL_PAUSE=established"}, "--proto", "roce-lab", e.addr, port)
			e.waitFor(t, cli, "paused after ESTABLISHED")
			e.waitFor(t, srv, "connection request")
			srv.cmd.Process.Signal(sig)
			if code := e.wait(t, srv); code != 0 || !strings.Contains(srv.out.String(), "stopped after 1 connection(s)") || srv.errb.String() != "" {
				t.Errorf("server: %v", srv)
			}
			cli.cmd.Process.Signal(sig)
			if code := e.wait(t, cli); code != ExitInterrupted || cli.errb.String() != "rdma-client: interrupted\n" {
				t.Errorf("client: %v", cli)
			}
		})
	}
	// A signal right after start, before the listener exists.
	srv := e.child(t, true, nil, "-a", e.addr, "-p", e.port())
	time.Sleep(5 * time.Millisecond)
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if code := e.wait(t, srv); code != 0 && code != -1 {
		t.Errorf("server signalled at start: %v", srv)
	}
}

// TestErrors: each failure is one line on stderr and exit status 1.
func TestErrors(t *testing.T) {
	e := newLab(t)
	one := func(t *testing.T, p *proc, want string) {
		t.Helper()
		if code := e.wait(t, p); code != ExitFailed || strings.Count(p.errb.String(), "\n") != 1 || !strings.Contains(p.errb.String(), want) {
			t.Errorf("want exit 1 and one line with %q: %v", want, p)
		}
		t.Logf("%s", p.errb.String())
	}
	t.Run("nothing_listening", func(t *testing.T) {
		one(t, e.start(t, false, "write", e.addr, e.port()), "nothing listens there: start rdma-server")
	})
	t.Run("unreachable", func(t *testing.T) {
		// An address on the veth subnet that nobody has.
		one(t, e.start(t, false, "--proto", "roce-lab", "10.77.0.99"), "10.77.0.99")
	})
	t.Run("no_rdma_route", func(t *testing.T) {
		one(t, e.start(t, false, "127.0.0.1"), "no route to 127.0.0.1:22222 through an RDMA device")
	})
	t.Run("rejected", func(t *testing.T) {
		port := e.port()
		l, err := rdmacm.Listen(e.ctx, e.addr+":"+port, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			if c, err := l.GetRequest(e.ctx); err == nil {
				c.Reject([]byte("go away"))
			}
		}()
		one(t, e.start(t, false, "send", e.addr, port), "the server rejected the connection")
	})
	t.Run("port_in_use", func(t *testing.T) {
		_, port := e.server(t, "send")
		one(t, e.start(t, true, "-a", e.addr, "-p", port), "port in use (another rdma-server?): choose another with -p")
	})
	t.Run("not_our_address", func(t *testing.T) {
		one(t, e.start(t, true, "-a", "10.77.0.99"), "listen on 10.77.0.99:22222: not an address of this host")
	})
	t.Run("interrupted", func(t *testing.T) {
		// A geek client against a roce-lab server, which posts no receive:
		// the MSG_MR waits for one (RNR retry 7 is for ever) until Ctrl-C.
		_, port := e.server(t, "--proto", "roce-lab")
		cli := e.start(t, false, "read", e.addr, port)
		time.Sleep(3 * time.Second)
		cli.cancel()
		if code := e.wait(t, cli); code != ExitInterrupted || cli.errb.String() != "rdma-client: interrupted\n" {
			t.Errorf("client: %v", cli)
		}
	})
}

// TestImmOnIWARP: on siw (iWARP, no immediate data) roce-lab's imm mode
// says why it cannot run, one line and exit 1, as soon as the device is
// known: a server bound to the siw address before it listens, a client
// before it sends its connection request, and a server on every address
// when the request comes (it rejects it and serves on).
func TestImmOnIWARP(t *testing.T) {
	e := newLabSiw(t)
	dev := testutil.SiwPair(t)[0].Device
	want := "--proto roce-lab mode imm cannot run on " + dev + ": it sends immediate data"
	refused := func(t *testing.T, p *proc) {
		t.Helper()
		if code := e.wait(t, p); code != ExitFailed || strings.Count(p.errb.String(), "\n") != 1 ||
			!strings.Contains(p.errb.String(), want) || !strings.Contains(p.errb.String(), "use mode write") {
			t.Errorf("want exit 1 and one line with %q and the mode to use: %v", want, p)
		}
		if strings.Contains(p.out.String(), "listening on") {
			t.Errorf("listened before refusing: %v", p)
		}
	}
	t.Run("server", func(t *testing.T) {
		refused(t, e.start(t, true, "--proto", "roce-lab", "-a", e.addr, "-p", e.port(), "imm"))
	})
	t.Run("client", func(t *testing.T) {
		// Nothing listens there: the client must refuse before it asks.
		refused(t, e.start(t, false, "--proto", "roce-lab", "imm", e.addr, e.port()))
	})
	t.Run("wildcard_server", func(t *testing.T) {
		port := e.port()
		srv := e.start(t, true, "--proto", "roce-lab", "-p", port, "imm")
		e.waitFor(t, srv, "listening on 0.0.0.0:"+port)
		// A write client: the server finds the device in the request.
		cli := e.start(t, false, "--proto", "roce-lab", "write", e.addr, port)
		if code := e.wait(t, cli); code != ExitFailed || !strings.Contains(cli.errb.String(), "the server rejected the connection") {
			t.Fatalf("client: want the rejection: %v\nserver: %v", cli, srv)
		}
		e.waitFor(t, srv, ": connection failed: "+want)
		e.stop(t, srv)
	})
}
