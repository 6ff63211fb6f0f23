package main

import (
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

// Our rstream against rdma-core's (rdmacm-utils) in both roles, in custom
// mode (one connection, exit status 0 or 255), with verified data, blocking
// and non-blocking, at 64 B to 1 MiB. Of the C side we judge its exit
// status and that it reports no verification failure, never its timing.

var customRow = regexp.MustCompile(`(?m)^custom +(\S+) +(\S+) +(\S+) +(\S+) +[0-9.]+s +[0-9.]+ +[0-9.]+$`)

func TestInteropRstream(t *testing.T) {
	interopRstream(t, testutil.VethPair(t)[0].Addr, 7900, false)
}

// TestInteropRstreamSiw is the same over siw (soft-iWARP), where both
// rsockets speak rsocket's iWARP mode: messages as SENDs, data as RDMA
// WRITEs without immediate data (docs/rsocket.md §7).
func TestInteropRstreamSiw(t *testing.T) {
	interopRstream(t, testutil.SiwPair(t)[0].Addr, 7950, true)
}

// interopRstream runs the cases with the server on addr, on ports from
// port+1; siw says the devices are siw's.
func interopRstream(t *testing.T, addr string, port int, siw bool) {
	if _, err := exec.LookPath("rstream"); err != nil {
		t.Fatalf("rstream (rdmacm-utils) is needed: %v", err)
	}
	sizes := []struct {
		size, count, iters int
		str, cnt           string
	}{
		{64, 100, 2, "64", "100"},
		{4096, 50, 1, "4k", "50"},
		{65536, 20, 1, "64k", "20"},
		{1 << 20, 4, 1, "1m", "4"},
	}
	for _, pair := range []struct{ server, client string }{{"ours", "theirs"}, {"theirs", "ours"}, {"ours", "ours"}} {
		for _, mode := range []string{"b", "n"} {
			for _, sz := range sizes {
				if pair.client == pair.server && (mode == "n" || sz.size == 64) {
					continue
				}
				port++
				name := fmt.Sprintf("%s-server_%s-client/T%s/%s", pair.server, pair.client, mode, sz.str)
				t.Run(name, func(t *testing.T) {
					// On siw a C server's first frame can reach our client
					// together with the MPA reply, which siw then refuses
					// (siwRace): that case runs again, on another port.
					for attempt := 0; ; attempt++ {
						race := rstreamCase(t, pair.server, pair.client, addr, port+20000*attempt, mode, sz.size, sz.count, sz.iters, sz.str, sz.cnt)
						if race == "" {
							return
						}
						if !siw || attempt == 2 {
							t.Fatalf("our client (attempt %d): %s", attempt+1, race)
						}
						t.Logf("attempt %d: siw refused the connection as the C server's first frame came with its MPA reply; again: %s", attempt+1, race)
					}
				})
			}
		}
	}
}

// siwRace is what our client reports when siw (kernel: siw_cm.c
// siw_recv_mpa_rr, "peer sent extra data", then siw_proc_mpareply's
// CONNECT_REPLY with -EINVAL) refuses the MPA reply because the passive
// side's first RDMA frame arrived in the same read: rdma-core's rsocket
// server may send as soon as it is established (docs/siw.md), and the
// active side, ours or rdma-core's, loses that race on a busy machine.
const siwRace = "RDMA_CM_EVENT_CONNECT_ERROR: invalid argument"

// rstreamCase runs one case with the server on addr:port. It returns what
// our client printed when it lost siwRace against rdma-core's server (the
// caller runs the case again), else "" (failures fail t).
func rstreamCase(t *testing.T, server, client, addr string, port int, mode string, size, count, iters int, str, cnt string) string {
	sz := struct {
		size, count, iters int
		str, cnt           string
	}{size, count, iters, str, cnt}
	pair := struct{ server, client string }{server, client}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"-p", strconv.Itoa(port), "-S", strconv.Itoa(sz.size), "-C", strconv.Itoa(sz.count),
		"-I", strconv.Itoa(sz.iters), "-T", mode, "-T", "v"}
	side := func(who, role string, args ...string) *testutil.Side {
		return testutil.StartSide(t, ctx, who, role, func(ctx context.Context, out, errw io.Writer) error {
			if code := run(ctx, args, out, errw); code != 0 {
				return fmt.Errorf("exit status %d", code)
			}
			return nil
		}, "rstream", args)
	}
	srv := side(pair.server, "server", append([]string{"-b", addr}, args...)...)
	if err := testutil.WaitListening(ctx, port, true, srv.Done); err != nil {
		t.Fatalf("%v\n%s%s", err, srv.Out, srv.Err)
	}
	cli := side(pair.client, "client", append([]string{"-s", addr}, args...)...)
	for _, s := range []*testutil.Side{cli, srv} {
		select {
		case err := <-s.Done:
			if err != nil && s.Who == "ours" && s.Role == "client" && pair.server == "theirs" && strings.Contains(s.Err.String(), siwRace) {
				return s.Err.String()
			}
			if err != nil {
				t.Fatalf("%s %s: %v\n%s%s\nother side:\n%s%s", s.Who, s.Role, err, s.Out, s.Err, other(s, cli, srv).Out, other(s, cli, srv).Err)
			}
		case <-ctx.Done():
			t.Fatalf("%s %s did not finish\n%s%s\nother side:\n%s%s", s.Who, s.Role, s.Out, s.Err, other(s, cli, srv).Out, other(s, cli, srv).Err)
		}
		out := s.Out.String()
		if strings.Contains(out, "verification failed") {
			t.Errorf("%s %s: %s", s.Who, s.Role, out)
		}
		if s.Who != "ours" {
			continue
		}
		m := customRow.FindStringSubmatch(out)
		total := int64(sz.size) * int64(sz.count) * int64(sz.iters) * 2
		if m == nil || m[1] != sz.str || m[2] != sz.cnt || m[3] != strconv.Itoa(sz.iters) || m[4] != sizeStr(total, 31) {
			t.Errorf("our %s printed %q, want a custom row of %s %s %d %s", s.Role, out, sz.str, sz.cnt, sz.iters, sizeStr(total, 31))
		}
		if s.Err.Len() > 0 {
			t.Errorf("our %s reported: %s", s.Role, s.Err)
		}
	}
	return ""
}

func other(s, a, b *testutil.Side) *testutil.Side {
	if s == a {
		return b
	}
	return a
}
