package main

import (
	"context"
	"io"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

// Interop with rdma-core's ibv_rc_pingpong and ibv_ud_pingpong on the lab's
// rxe device on lo: this program (run in-process) against the C programs in
// both roles, and against itself. Each case checks that both sides finish
// (exit 0, nil error), print the throughput lines for the bytes and
// iterations asked for, and that each side's "remote address" is the other's
// "local address". With -c the client sends a pattern and the servers (ours
// and rdma-core's) check what they received; our client also checks what
// came back.

// A case is one server and one client.
type pingpongCase struct {
	name   string
	mode   string   // "rc" or "ud"
	server string   // "ours" or "theirs"
	client string   // "ours" or "theirs"
	common []string // options given to both sides
	srvOpt []string // options of the server only
	cliOpt []string // options of the client only
	noGID  string   // "ours" side started without -g (it finds its GID itself)
	size   int
	iters  int
}

var pingpongCases = []pingpongCase{
	{name: "rc_ours-server_theirs-client", mode: "rc", server: "ours", client: "theirs", size: 4096, iters: 1000},
	{name: "rc_theirs-server_ours-client", mode: "rc", server: "theirs", client: "ours", size: 4096, iters: 1000},
	{name: "rc_ours-server-events_theirs-client", mode: "rc", server: "ours", client: "theirs",
		common: []string{"-s", "10000", "-n", "300"}, srvOpt: []string{"-e"}, size: 10000, iters: 300},
	{name: "rc_theirs-server-events_ours-client-events", mode: "rc", server: "theirs", client: "ours",
		common: []string{"-s", "1500", "-n", "200", "-m", "4096", "-c"}, srvOpt: []string{"-e"}, cliOpt: []string{"-e"}, size: 1500, iters: 200},
	{name: "rc_ours-server_theirs-client-chk", mode: "rc", server: "ours", client: "theirs",
		common: []string{"-n", "200", "-s", "8192", "-r", "16", "-c"}, size: 8192, iters: 200},
	{name: "rc_ours_ours", mode: "rc", server: "ours", client: "ours",
		common: []string{"-n", "300", "-s", "5000", "-m", "2048", "-r", "8", "-c"}, cliOpt: []string{"-e"}, size: 5000, iters: 300},
	{name: "rc_theirs-server_ours-client-no-gid", mode: "rc", server: "theirs", client: "ours", noGID: "client",
		common: []string{"-n", "100"}, size: 4096, iters: 100},
	{name: "ud_ours-server_theirs-client", mode: "ud", server: "ours", client: "theirs", size: 1024, iters: 1000},
	{name: "ud_theirs-server_ours-client", mode: "ud", server: "theirs", client: "ours", size: 1024, iters: 1000},
	{name: "ud_ours-server-events_theirs-client", mode: "ud", server: "ours", client: "theirs",
		common: []string{"-s", "4096", "-n", "300", "-c"}, srvOpt: []string{"-e"}, size: 4096, iters: 300},
	{name: "ud_theirs-server-events_ours-client-events", mode: "ud", server: "theirs", client: "ours",
		common: []string{"-s", "100", "-n", "300", "-c"}, srvOpt: []string{"-e"}, cliOpt: []string{"-e"}, size: 100, iters: 300},
	{name: "ud_ours_ours", mode: "ud", server: "ours", client: "ours", noGID: "server",
		common: []string{"-s", "2048", "-n", "300", "-r", "4", "-c"}, srvOpt: []string{"-e"}, size: 2048, iters: 300},
}

func TestPingpongInterop(t *testing.T) {
	dev := testutil.LoopbackDevice(t)
	gidIdx := loopbackGIDIndex(t, dev)
	tools := map[string]string{}
	for mode, tool := range map[string]string{"rc": "ibv_rc_pingpong", "ud": "ibv_ud_pingpong"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			if testutil.InLab() {
				t.Fatalf("%s (rdma-core's ibverbs-utils) is not installed in the lab: %v", tool, err)
			}
			t.Skipf("%s not installed (Debian: ibverbs-utils)", tool)
		}
		tools[mode] = p
	}
	for i, c := range pingpongCases {
		t.Run(c.name, func(t *testing.T) {
			runCase(t, c, tools[c.mode], dev, gidIdx, 19100+i)
		})
	}
}

// loopbackGIDIndex returns the GID index of ::ffff:127.0.0.1 on dev.
func loopbackGIDIndex(t testing.TB, dev string) int {
	t.Helper()
	c, err := uverbs.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	idx, err := c.GIDIndexForIP(1, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func runCase(t *testing.T, c pingpongCase, tool, dev string, gidIdx, tcpPort int) {
	// The timeout only turns a hang into a failure: under the lab's
	// emulated CPUs 1000 exchanges take several seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	args := func(who, role string, extra []string) []string {
		a := []string{"-d", dev, "-p", strconv.Itoa(tcpPort)}
		if !(who == "ours" && c.noGID == role) {
			a = append(a, "-g", strconv.Itoa(gidIdx))
		}
		a = append(a, c.common...)
		a = append(a, extra...)
		if role == "client" {
			a = append(a, "127.0.0.1")
		}
		if who == "ours" {
			a = append([]string{c.mode}, a...)
		}
		return a
	}

	srv := start(t, ctx, c.server, "server", tool, args(c.server, "server", c.srvOpt))
	if err := testutil.WaitListening(ctx, tcpPort, false, srv.Done); err != nil {
		t.Fatalf("%v\nserver output:\n%s%s", err, srv.Out, srv.Err)
	}
	cli := start(t, ctx, c.client, "client", tool, args(c.client, "client", c.cliOpt))

	// Wait for both; a failed side usually leaves the other waiting, so
	// the first failure ends the case (the cleanups stop the other).
	var failed bool
	pending := map[*testutil.Side]bool{srv: true, cli: true}
	for len(pending) > 0 && !failed {
		for s := range pending {
			select {
			case err := <-s.Done:
				delete(pending, s)
				if err != nil {
					failed = true
					t.Errorf("%s %s failed: %v", s.Who, s.Role, err)
				}
			case <-time.After(50 * time.Millisecond):
			}
		}
		if ctx.Err() != nil {
			t.Errorf("timed out: %v still running", names(pending))
			break
		}
	}
	if failed || t.Failed() {
		cancel()
		t.Fatalf("server (%s) output:\n%s%s\nclient (%s) output:\n%s%s", srv.Who, srv.Out, srv.Err, cli.Who, cli.Out, cli.Err)
	}

	so, co := parseOutput(t, "server", srv.Out.String()), parseOutput(t, "client", cli.Out.String())
	for _, p := range []struct {
		name string
		o    pingpongOutput
		s    *testutil.Side
	}{{"server", so, srv}, {"client", co, cli}} {
		if p.o.bytes != int64(c.size)*int64(c.iters)*2 || p.o.iters != c.iters {
			t.Errorf("%s (%s) reports %d bytes and %d iters, want %d and %d", p.name, p.s.Who, p.o.bytes, p.o.iters, int64(c.size)*int64(c.iters)*2, c.iters)
		}
		if strings.Contains(p.s.Out.String(), "invalid data") || p.s.Err.Len() != 0 {
			t.Errorf("%s (%s) complained:\n%s%s", p.name, p.s.Who, p.s.Out, p.s.Err)
		}
	}
	if so.local != co.remote || co.local != so.remote {
		t.Errorf("addresses do not cross:\nserver local  %+v\nclient remote %+v\nclient local  %+v\nserver remote %+v", so.local, co.remote, co.local, so.remote)
	}
	want := uverbs.GIDFromIP(netip.MustParseAddr("127.0.0.1")).String()
	if so.local.gid != want || co.local.gid != want {
		t.Errorf("GIDs %q and %q, want %q on both sides", so.local.gid, co.local.gid, want)
	}
	if t.Failed() {
		t.Logf("server (%s) output:\n%s\nclient (%s) output:\n%s", srv.Who, srv.Out, cli.Who, cli.Out)
	}
}

// start runs one side: ours in the test's process, theirs as a process.
func start(t *testing.T, ctx context.Context, who, role, tool string, args []string) *testutil.Side {
	t.Helper()
	return testutil.StartSide(t, ctx, who, role, func(ctx context.Context, out, _ io.Writer) error {
		return run(ctx, args, out)
	}, tool, args)
}

func names(m map[*testutil.Side]bool) []string {
	var n []string
	for s := range m {
		n = append(n, s.Who+" "+s.Role)
	}
	return n
}

type address struct {
	lid, qpn, psn uint64
	gid           string
}

type pingpongOutput struct {
	local, remote address
	bytes         int64
	iters         int
	usec          float64 // per iteration
}

var (
	// ud_pingpong.c prints "PSN 0x%06x: GID" in its local line.
	addrRE = regexp.MustCompile(`^  (local|remote) address: +LID 0x([0-9a-f]{4}), QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6})[,:] GID (\S+)$`)
	// The rates are the tools' own arithmetic: ibv_rc_pingpong prints
	// "inf" Mbit/sec when its clock saw no time pass (a loaded machine);
	// the tests judge the counts, so any figure is read.
	bytesRE = regexp.MustCompile(`^(\d+) bytes in (\d+\.\d\d) seconds = (\S+) Mbit/sec$`)
	itersRE = regexp.MustCompile(`^(\d+) iters in (\d+\.\d\d) seconds = (\S+) usec/iter$`)
)

// parseOutput reads the four lines both programs print.
func parseOutput(t testing.TB, who, out string) pingpongOutput {
	t.Helper()
	var o pingpongOutput
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if m := addrRE.FindStringSubmatch(line); m != nil {
			a := address{gid: m[5]}
			a.lid, _ = strconv.ParseUint(m[2], 16, 16)
			a.qpn, _ = strconv.ParseUint(m[3], 16, 24)
			a.psn, _ = strconv.ParseUint(m[4], 16, 24)
			if m[1] == "local" {
				o.local = a
			} else {
				o.remote = a
			}
			seen[m[1]] = true
		} else if m := bytesRE.FindStringSubmatch(line); m != nil {
			o.bytes, _ = strconv.ParseInt(m[1], 10, 64)
			seen["bytes"] = true
		} else if m := itersRE.FindStringSubmatch(line); m != nil {
			o.iters, _ = strconv.Atoi(m[1])
			o.usec, _ = strconv.ParseFloat(m[3], 64)
			seen["iters"] = true
		}
	}
	for _, k := range []string{"local", "remote", "bytes", "iters"} {
		if !seen[k] {
			t.Errorf("%s output has no %q line:\n%s", who, k, out)
		}
	}
	return o
}
