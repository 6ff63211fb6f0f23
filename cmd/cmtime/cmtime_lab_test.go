package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// Both roles against rdma-core's cmtime (rdmacm-utils) and against
// ourselves, on the first veth end's address (the CM then uses that device
// at both ends, docs/testing.md §3). Each case checks how our side ended
// and what it printed; of the C side, its exit status and that it reports
// no failed connection (never its timing).

var rowRE = regexp.MustCompile(`^(create id|bind addr|resolve addr|resolve route|create qp|connect|disconnect|destroy) *: +(\S+) +(\S+) +(\S+) +(\S+)$`)

// checkTable checks our client's table: one row per step, in order, whose
// figures are numbers, with a whole step never shorter than its longest
// connection.
func checkTable(t *testing.T, out string, bind bool) {
	t.Helper()
	want := []string{"create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy"}
	if bind {
		want = append([]string{"create id", "bind addr"}, want[1:]...)
	}
	var got []string
	for _, l := range strings.Split(out, "\n") {
		m := rowRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		got = append(got, m[1])
		var v [4]float64
		for i := range v {
			f, err := strconv.ParseFloat(m[2+i], 64)
			if err != nil || f < 0 {
				t.Errorf("row %q: %q is not a time", l, m[2+i])
			}
			v[i] = f
		}
		if v[0]+0.01 < v[1] {
			t.Errorf("row %q: the step (%v ms) is shorter than its longest connection (%v ms)", l, v[0], v[1])
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("table rows %q, want %q\n%s", got, want, out)
	}
}

type pairing struct{ server, client string }

var allPairings = []pairing{{"ours", "theirs"}, {"theirs", "ours"}, {"ours", "ours"}}

func TestInteropCmtime(t *testing.T) {
	ends := testutil.VethPair(t)
	interop(t, ends[0].Addr, 20, 7800, allPairings)
}

// Over siw (iWARP), whose CM reports ESTABLISHED where InfiniBand reports
// CONNECT_RESPONSE: a few connections, each a TCP connection and an MPA
// exchange in the guest.
func TestSiwCmtime(t *testing.T) {
	ends := testutil.SiwPair(t)
	interop(t, ends[0].Addr, 5, 7830, allPairings)
}

// interop runs each pairing of servers and clients, conns connections,
// on addr and ports from port on.
func interop(t *testing.T, addr string, conns int, port0 int, pairings []pairing) {
	for i, c := range pairings {
		t.Run(c.server+"-server_"+c.client+"-client", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if c.server == "theirs" || c.client == "theirs" {
				if _, err := exec.LookPath("cmtime"); err != nil {
					t.Fatalf("cmtime (rdmacm-utils) is needed: %v", err)
				}
			}
			port := port0 + i
			side := func(who, role string, args ...string) *testutil.Side {
				return testutil.StartSide(t, ctx, who, role, func(ctx context.Context, out, errw io.Writer) error {
					if code := run(ctx, args, out, errw); code != 0 {
						return fmt.Errorf("exit status %d", code)
					}
					return nil
				}, "cmtime", args)
			}
			srv := side(c.server, "server", "-b", addr, "-p", strconv.Itoa(port))
			// cmtime's client does not wait for a late server.
			if err := testutil.WaitListening(ctx, port, true, srv.Done); err != nil {
				t.Fatalf("%v\n%s%s", err, srv.Out, srv.Err)
			}
			cli := side(c.client, "client", "-s", addr, "-p", strconv.Itoa(port), "-c", strconv.Itoa(conns))
			select {
			case err := <-cli.Done:
				if err != nil {
					t.Fatalf("%s client: %v\n%s%s\nserver:\n%s%s", c.client, err, cli.Out, cli.Err, srv.Out, srv.Err)
				}
			case <-ctx.Done():
				t.Fatalf("the client did not finish\n%s%s\nserver:\n%s%s", cli.Out, cli.Err, srv.Out, srv.Err)
			}
			out := cli.Out.String()
			if strings.Contains(out, "error") || strings.Contains(out, "failure") {
				t.Errorf("%s client reports failed connections:\n%s", c.client, out)
			}
			if c.client == "ours" {
				checkTable(t, out, false)
			}
			cancel() // stops the server
			if err := <-srv.Done; c.server == "ours" && err != nil {
				t.Errorf("our server: %v\n%s", err, srv.Err)
			}
			if c.server == "ours" && srv.Err.Len() > 0 {
				t.Errorf("our server reported:\n%s", srv.Err)
			}
		})
	}
}

// With -b the client binds each ID first and the table has that row.
func TestClientBind(t *testing.T) {
	ends := testutil.VethPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srvDone := make(chan int, 1)
	var srvErr testutil.SyncBuffer
	go func() { srvDone <- run(ctx, []string{"-b", ends[0].Addr, "-p", "7810"}, io.Discard, &srvErr) }()
	if err := testutil.WaitListening(ctx, 7810, true, srvDone); err != nil {
		t.Fatalf("%v\n%s", err, srvErr.String())
	}
	var out, errb testutil.SyncBuffer
	if code := run(ctx, []string{"-s", ends[0].Addr, "-b", ends[0].Addr, "-p", "7810", "-c", "5"}, &out, &errb); code != 0 {
		t.Fatalf("exit status %d\n%s%s", code, out.String(), errb.String())
	}
	checkTable(t, out.String(), true)
	cancel()
	if code := <-srvDone; code != 0 {
		t.Errorf("server exit status %d: %s", code, srvErr.String())
	}
}

// BenchmarkClient: our client's whole run of N connections (the b.N
// loop) against rdma-core's cmtime server, so that a CPU profile
// (-cpuprofile) holds our side alone. What it shows is in
// docs/perf-history.md, "Connection set-up: where the time goes".
func BenchmarkClient(b *testing.B) {
	ends := testutil.VethPair(b)
	addr := ends[0].Addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, "cmtime", "-b", addr, "-p", "7820")
	done := testutil.StartProcess(b, srv)
	if err := testutil.WaitListening(ctx, 7820, true, done); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				var out bytes.Buffer
				if code := run(ctx, []string{"-s", addr, "-p", "7820", "-c", strconv.Itoa(n)}, &out, &out); code != 0 {
					b.Fatalf("exit status %d\n%s", code, out.String())
				}
			}
		})
	}
}
