package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goverbs/rdma/internal/testutil"
)

// These tests run on the host: they build rxelab, boot real kernels under
// QEMU and check what the command in the guest sees and what comes back.
// They take minutes, and the first run downloads kernels and installs
// packages (as root), so a plain `go test ./...` skips them: they run only
// when GOVERBS_LAB_SELFTEST=1 asks for them (make test sets it), and then
// they fail if the lab cannot work. -short skips them even then.

var rxelab string

// needLab skips t unless the lab's self-tests were asked for.
func needLab(t *testing.T) {
	t.Helper()
	if os.Getenv("GOVERBS_LAB_SELFTEST") != "1" {
		t.Skip("the lab's self-tests boot VMs for minutes: GOVERBS_LAB_SELFTEST=1 runs them (make test does)")
	}
	if testing.Short() {
		t.Skip("the lab's self-tests boot VMs: not under -short")
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("GOVERBS_LAB") == "1" {
		fmt.Println("skipping the lab's own tests inside the lab: they start VMs and run on the host (go test ./test/...)")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "rxelab-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rxelab = filepath.Join(dir, "rxelab")
	out, err := exec.Command("go", "build", "-o", rxelab, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building rxelab: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

func runLab(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(rxelab, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	err := cmd.Run()
	r := result{stdout.String(), stderr.String(), 0, time.Since(start)}
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "running rxelab: %v\nstderr:\n%s", err, r.stderr)
		r.code = ee.ExitCode()
	}
	t.Logf("rxelab %s: exit %d after %v", strings.Join(args, " "), r.code, r.elapsed.Round(time.Millisecond))
	return r
}

// TestKernels boots both series; the guest must run the right kernel and
// have the three rxe devices, their IPv4-mapped GIDs, the two siw devices
// and the lab's environment. The 6.12 run takes the series from
// GOVERBS_LAB_KERNEL, the 6.1 run from the flag, which must win over the
// variable.
func TestKernels(t *testing.T) {
	needLab(t)
	wd, err := os.Getwd()
	require.NoError(t, err)
	script := `uname -r
echo "devices: $(ls /sys/class/infiniband | tr '\n' ' ')"
ibv_devices
for d in rxe0 rxe1 rxe2; do echo "gid1 $d $(cat /sys/class/infiniband/$d/ports/1/gids/1)"; done
echo "env: $GOVERBS_LAB|$GOVERBS_LAB_KERNEL|$GOVERBS_LAB_LO_DEV|$GOVERBS_LAB_VETH|$GOVERBS_LAB_SIW"
echo "cwd: $(pwd)"
echo "uid: $(id -u)"`
	for _, tc := range []struct {
		series string
		env    []string
		args   []string
	}{
		{"6.1", []string{"GOVERBS_LAB_KERNEL=6.12"}, []string{"-kernel", "6.1"}},
		{"6.12", []string{"GOVERBS_LAB_KERNEL=6.12"}, nil},
	} {
		t.Run(tc.series, func(t *testing.T) {
			t.Parallel()
			r := runLab(t, tc.env, append(tc.args, "--", "sh", "-c", script)...)
			require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			lines := strings.Split(r.stdout, "\n")
			release := lines[0]
			require.True(t, strings.HasPrefix(release, tc.series+"."), "guest runs %q, want series %s", release, tc.series)
			require.Contains(t, r.stdout, "devices: rxe0 rxe1 rxe2 siw1 siw2 \n")
			for _, d := range []string{"rxe0", "rxe1", "rxe2", "siw1", "siw2"} {
				require.Regexp(t, `(?m)^\s+`+d+`\s+[0-9a-f]{16}$`, r.stdout, "ibv_devices must list %s", d)
			}
			require.Contains(t, r.stdout, "gid1 rxe0 0000:0000:0000:0000:0000:ffff:7f00:0001\n")
			require.Contains(t, r.stdout, "gid1 rxe1 0000:0000:0000:0000:0000:ffff:0a4d:0001\n")
			require.Contains(t, r.stdout, "gid1 rxe2 0000:0000:0000:0000:0000:ffff:0a4d:0002\n")
			require.Contains(t, r.stdout, "env: 1|"+release+"|rxe0|rxe1:veth0:10.77.0.1,rxe2:veth1:10.77.0.2|siw1:veth2:10.79.0.1,siw2:veth3:10.79.0.2\n")
			require.Contains(t, r.stdout, "cwd: "+wd+"\n")
			require.Contains(t, r.stdout, "uid: 0\n")
			require.NotContains(t, r.stdout, "lab-init", "kernel console leaked into stdout")
		})
	}
}

// TestSiw: on both series the lab builds siw.ko (soft-iWARP) for the
// booted kernel and loads it, which taints the kernel (out of tree and
// unsigned), and siw1/siw2 sit on veth2/veth3 after the rxe devices.
// rdma-core's own C programs run over siw through the iWARP CM: rping with
// verified data, and perftest's ib_write_bw -R. In one guest the client
// reaches the server's address over the local route, so the CM puts both
// ends on the server's device (siw1), which ib_write_bw -R reports on both
// sides. A pair that siw's kernel race leaves waiting for good (the
// client's first message unread in the server's socket, docs/siw.md §10)
// runs once more, whole; the script reports it on stderr with the
// connection's state. With -no-siw the guest has rxe only.
func TestSiw(t *testing.T) {
	needLab(t)
	script := `set -e
echo "taint: $(cat /proc/sys/kernel/tainted)"
echo "devices: $(ls /sys/class/infiniband | tr '\n' ' ')"
echo "env: $GOVERBS_LAB_SIW"
echo "start $(date +%T)" >&2
for d in siw1 siw2; do
	echo "$d: $(cat /sys/class/infiniband/$d/node_type) $(cat /sys/class/infiniband/$d/ports/1/state) $(ibv_devinfo -d $d | grep -o 'transport:.*')"
done
out=$1
# A client that connects before the server listens is not refused at once:
# its connect failed after about 60 s (TCP's SYN retries), so wait for the
# server's listening CM id first, and still try again if refused.
listening() {
	for i in $(seq 300); do
		rdma res show cm_id | grep -q "state LISTEN .*comm $1 src-addr [^ ]*:$2 " && return 0
		sleep 0.2
	done
	echo "$1 never listened on port $2" >&2
}
# pair NAME FILE PORT SERVER CLIENT runs the server on the port, then the
# client once it listens, tried again while it fails and the server lives;
# their output goes to $out/FILE-server and $out/FILE-client. A client
# still running after 60 s is reported with the connection's state (QPs,
# CM IDs, the TCP sockets of the port: siw carries iWARP over kernel TCP)
# and stopped. If the server's socket then holds bytes that nobody read,
# siw left the client's first message unread, a kernel race after which
# rdma-core's tools on both sides wait for good (docs/siw.md §10): the
# pair runs once more, whole, on the next port.
pair() {
	name=$1 file=$2 port=$3 srv=$4 cli=$5
	for run in 1 2; do
		timeout 120 sh -c "exec $srv -p $port" > "$out/$file-server" 2>&1 & server=$!
		listening $name $port
		ok= again=
		for i in $(seq 30); do
			sh -c "exec $cli -p $port" > "$out/$file-client" 2>&1 & client=$!
			n=0
			while kill -0 $client 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done
			if kill -0 $client 2>/dev/null; then
				unread=$(ss -Htn state established "( sport = :$port )" | awk '{n += $1} END {print n + 0}')
				echo "$name client try $i still running after 60 s at $(date +%T), $unread bytes unread on the server's side of port $port:" >&2
				{ rdma res show qp; rdma res show cm_id; ss -tnio "( sport = :$port or dport = :$port )"; } >&2 || true
				kill $client 2>/dev/null || true
				wait $client || true
				if [ "$unread" -gt 0 ]; then again=1; break; fi
			elif wait $client; then
				ok=1; break
			fi
			echo "$name client try $i failed at $(date +%T): $(tail -1 "$out/$file-client")" >&2
			# A server that has ended (its own timeout) is not tried again:
			# each try would wait out TCP's SYN retries.
			kill -0 $server 2>/dev/null || { echo "server gone at $(date +%T)" >&2; break; }
			sleep 1
		done
		if [ -n "$again" ] && [ $run -eq 1 ]; then
			echo "$name: siw left the client's first message unread in the server's socket; the pair runs again" >&2
			kill $server 2>/dev/null || true
			wait $server || true
			port=$((port + 1))
			continue
		fi
		wait $server && echo "$name server status 0"
		[ -n "$ok" ] && echo "$name client status 0"
		return 0
	done
}
pair rping rping 7174 "rping -s -a 10.79.0.1 -C 3 -v -V" "rping -c -a 10.79.0.1 -C 3 -v -V"
pair ib_write_bw bw 18515 "ib_write_bw -R -d siw1 -n 200" "ib_write_bw -R -d siw1 -n 200 10.79.0.1"
echo "end $(date +%T)" >&2`
	for _, series := range []string{"6.1", "6.12"} {
		t.Run(series, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			// Within go test's own limit, so that a hang ends with the
			// lab's report and the tools' output below.
			r := runLab(t, nil, "-kernel", series, "-timeout", "6m", "--", "sh", "-c", script, "sh", tmp)
			file := func(name string) string {
				b, _ := os.ReadFile(filepath.Join(tmp, name))
				return string(b)
			}
			all := fmt.Sprintf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			for _, f := range []string{"rping-server", "rping-client", "bw-server", "bw-client"} {
				all += fmt.Sprintf("\n%s:\n%s", f, file(f))
			}
			require.Equal(t, 0, r.code, "%s", all)
			t.Logf("retries:\n%s", r.stderr)
			// TAINT_OOT_MODULE (12) and TAINT_UNSIGNED_MODULE (13).
			m := regexp.MustCompile(`taint: (\d+)\n`).FindStringSubmatch(r.stdout)
			require.NotNil(t, m, "%s", all)
			taint, _ := strconv.Atoi(m[1])
			require.Equal(t, 3<<12, taint&(3<<12), "taint %d: siw.ko should mark the kernel out-of-tree and unsigned", taint)
			require.Contains(t, r.stdout, "devices: rxe0 rxe1 rxe2 siw1 siw2 \n")
			require.Contains(t, r.stdout, "env: siw1:veth2:10.79.0.1,siw2:veth3:10.79.0.2\n")
			for _, d := range []string{"siw1", "siw2"} {
				require.Contains(t, r.stdout, d+": 4: RNIC 4: ACTIVE transport:\t\t\tiWARP (1)\n", "%s", all)
			}
			require.Contains(t, r.stdout, "rping server status 0\nrping client status 0\n", "%s", all)
			for i, data := range []string{"ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr", "BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs", "CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst"} {
				require.Contains(t, file("rping-server"), fmt.Sprintf("server ping data: rdma-ping-%d: %s\n", i, data), "%s", all)
				require.Contains(t, file("rping-client"), fmt.Sprintf("ping data: rdma-ping-%d: %s\n", i, data), "%s", all)
			}
			require.Contains(t, r.stdout, "ib_write_bw server status 0\nib_write_bw client status 0\n", "%s", all)
			// With -R perftest reports the device the CM chose.
			for _, f := range []string{"bw-server", "bw-client"} {
				require.Regexp(t, `Device\s+: siw1\b`, file(f), "%s", all)
				require.Regexp(t, `Transport type : IW\b`, file(f), "%s", all)
				require.Regexp(t, `(?m)^\s*65536\s+200\s+\d`, file(f), "ib_write_bw printed no result row; %s", all)
			}
		})
	}
	t.Run("no-siw", func(t *testing.T) {
		t.Parallel()
		r := runLab(t, nil, "-kernel", "6.1", "-no-siw", "--", "sh", "-c",
			`echo "devices: $(ls /sys/class/infiniband | tr '\n' ' ')"; echo "env: ${GOVERBS_LAB_SIW-unset}"`)
		require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		require.Contains(t, r.stdout, "devices: rxe0 rxe1 rxe2 \nenv: unset\n")
	})
}

// TestOutput checks that stdout and stderr come back separately and
// byte-exact (no tty translation, large outputs split into many frames),
// and that the command's exit status comes back.
func TestOutput(t *testing.T) {
	needLab(t)
	t.Parallel()
	script := `echo out1; echo err1 >&2; printf 'raw\r\n\000\377end\n'; echo out2; echo err2 >&2
seq 1 200000
echo tmp > "$1/from-guest"
exit 7`
	tmp := t.TempDir()
	// No "--": flag parsing must stop at the command, leaving its flags
	// (go test -exec passes -test.*) alone; -timeout 1s would fail the run.
	r := runLab(t, nil, "-kernel", "6.1", "sh", "-c", script, "sh", tmp, "-timeout", "1s")
	require.Equal(t, 7, r.code, "stderr:\n%s", r.stderr)

	var want strings.Builder
	want.WriteString("out1\nraw\r\n\x00\xffend\nout2\n")
	for i := 1; i <= 200000; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	require.True(t, r.stdout == want.String(), "stdout differs: got %d bytes, want %d; starts %q", len(r.stdout), want.Len(), r.stdout[:min(len(r.stdout), 80)])
	require.Contains(t, r.stderr, "err1\nerr2\n")
	require.NotContains(t, r.stderr, "out1")
	require.NotContains(t, r.stderr, "lab-init", "kernel console leaked into stderr")

	// The host's /tmp is shared read-write.
	b, err := os.ReadFile(filepath.Join(tmp, "from-guest"))
	require.NoError(t, err)
	require.Equal(t, "tmp\n", string(b))
}

// TestTimeout: a command that hangs is stopped at -timeout with a clear
// message and exit status 124. (Were it not stopped, sleep would outlast
// go test's own timeout and fail the run.)
func TestTimeout(t *testing.T) {
	needLab(t)
	t.Parallel()
	r := runLab(t, nil, "-kernel", "6.1", "-timeout", "20s", "--", "sleep", "1000")
	require.Equal(t, 124, r.code, "stderr:\n%s", r.stderr)
	require.Contains(t, r.stderr, "lab: command did not finish within 20s; the VM was stopped\n")
}

// TestBootTimeout: a VM that does not get to the command in time is stopped
// with a message and the tail of the kernel console, and booted once more
// (a boot that hung ran nothing) before the lab gives up.
func TestBootTimeout(t *testing.T) {
	needLab(t)
	t.Parallel()
	r := runLab(t, nil, "-kernel", "6.1", "-boot-timeout", "1s", "--", "true")
	require.Equal(t, 125, r.code, "stderr:\n%s", r.stderr)
	require.Contains(t, r.stderr, "did not start the command within 1s; the VM was stopped")
	require.Contains(t, r.stderr, "the VM was stopped; booting once more")
	require.Equal(t, 2, strings.Count(r.stderr, "booting Linux "), "stderr:\n%s", r.stderr)
}

// TestCommandErrors: a command that cannot be started reports 127 and why;
// a signal to rxelab reaches the command in the guest.
func TestCommandErrors(t *testing.T) {
	needLab(t)
	t.Parallel()
	t.Run("not-found", func(t *testing.T) {
		r := runLab(t, nil, "-kernel", "6.1", "--", "/nonexistent/command")
		require.Equal(t, 127, r.code, "stderr:\n%s", r.stderr)
		require.Contains(t, r.stderr, "cannot start /nonexistent/command")
	})
	t.Run("signal", func(t *testing.T) {
		cmd := exec.Command(rxelab, "-kernel", "6.1", "--", "sh", "-c",
			`trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.2; done`)
		stdout := &testutil.SyncBuffer{}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		require.NoError(t, cmd.Start())
		deadline := time.Now().Add(4 * time.Minute)
		for !strings.Contains(stdout.String(), "ready\n") {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("the command never started; stderr:\n%s", stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "stderr:\n%s", stderr.String())
		require.Equal(t, 3, ee.ExitCode(), "stderr:\n%s", stderr.String())
		require.Contains(t, stdout.String(), "got-term\n")
	})
}

// TestTwoGuests: with -guests 2 the command runs in the primary guest, which
// runs commands in the peer through rxelab -peer; rping (rdma-core) runs
// between rxe_a and rxe_b over the guests' own network, the server in the
// peer and the client in the primary.
func TestTwoGuests(t *testing.T) {
	needLab(t)
	t.Parallel()
	script := `set -e
echo "primary: $GOVERBS_LAB_ROLE $GOVERBS_LAB_LOCAL_DEV $GOVERBS_LAB_LOCAL_ADDR $GOVERBS_LAB_PEER_DEV $GOVERBS_LAB_PEER_ADDR"
"$1" -peer -- sh -c 'echo "peer: $GOVERBS_LAB_ROLE $GOVERBS_LAB_LOCAL_DEV $GOVERBS_LAB_LOCAL_ADDR $(cat /sys/class/infiniband/$GOVERBS_LAB_LOCAL_DEV/ports/1/gids/1)"; exit 4' || echo "peer status $?"
"$1" -peer -- rping -s -a "$GOVERBS_LAB_PEER_ADDR" -C 3 -v > "$2/server" 2>&1 & server=$!
# The client is rejected until the server listens; try again.
ok=
for i in $(seq 60); do
	if rping -c -a "$GOVERBS_LAB_PEER_ADDR" -C 3 -v > "$2/client" 2>&1; then ok=1; break; fi
	sleep 1
done
wait $server && echo "server status 0"
[ -n "$ok" ] && echo "client status 0"`
	tmp := t.TempDir()
	r := runLab(t, []string{"TMPDIR=" + tmp}, "-kernel", "6.1", "-guests", "2", "--", "sh", "-c", script, "sh", rxelab, tmp)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout, "primary: primary rxe_a 10.78.0.1 rxe_b 10.78.0.2\n")
	require.Contains(t, r.stdout, "peer: peer rxe_b 10.78.0.2 0000:0000:0000:0000:0000:ffff:0a4e:0002\n")
	require.Contains(t, r.stdout, "peer status 4\n")
	require.Contains(t, r.stdout, "server status 0\nclient status 0\n")
	server, err := os.ReadFile(filepath.Join(tmp, "server"))
	require.NoError(t, err)
	client, err := os.ReadFile(filepath.Join(tmp, "client"))
	require.NoError(t, err)
	for i, data := range []string{"ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr", "BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs", "CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst"} {
		require.Contains(t, string(server), fmt.Sprintf("server ping data: rdma-ping-%d: %s\n", i, data))
		require.Contains(t, string(client), fmt.Sprintf("ping data: rdma-ping-%d: %s\n", i, data))
	}
	requireNoQEMU(t, tmp)
}

// TestPeerPowerOff powers the peer off while rping runs between the guests:
// the peer's server ends at once with the lab's status 125 and says why,
// later peer commands fail the same way, the primary's command goes on, and
// the run returns its status with both QEMUs gone.
func TestPeerPowerOff(t *testing.T) {
	needLab(t)
	t.Parallel()
	script := `"$1" -peer -- rping -s -a "$GOVERBS_LAB_PEER_ADDR" -C 1000000 > "$2/server" 2>&1 & server=$!
for i in $(seq 60); do
	timeout 300 rping -c -a "$GOVERBS_LAB_PEER_ADDR" -C 1000000 -v > "$2/client" 2>&1 & client=$!
	sleep 5
	kill -0 $client 2>/dev/null && break
done
echo "pings before: $(grep -c 'ping data' "$2/client")"
start=$(date +%s)
"$1" -poweroff-peer && echo "poweroff status 0"
wait $server; echo "server status $? after $(( $(date +%s) - start ))s"
"$1" -peer -- true; echo "peer status $?"
kill $client
exit 9`
	tmp := t.TempDir()
	r := runLab(t, []string{"TMPDIR=" + tmp}, "-kernel", "6.1", "-guests", "2", "--", "sh", "-c", script, "sh", rxelab, tmp)
	require.Equal(t, 9, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Regexp(t, `pings before: [1-9][0-9]*\n`, r.stdout, "rping was not running when the peer was powered off")
	require.Contains(t, r.stdout, "poweroff status 0\n")
	m := regexp.MustCompile(`server status 125 after (\d+)s\n`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "stdout:\n%s", r.stdout)
	secs, _ := strconv.Atoi(m[1])
	require.Less(t, secs, 30, "the peer's command took %ds to end after power off", secs)
	require.Contains(t, r.stdout, "peer status 125\n")
	server, err := os.ReadFile(filepath.Join(tmp, "server"))
	require.NoError(t, err)
	require.Contains(t, string(server), "rxelab: peer: the peer guest is off: rping -s -a 10.78.0.2 -C 1000000: the peer VM was powered off\n")
	require.Contains(t, r.stderr, "rxelab: peer: the peer guest is off: true: the peer VM is off\n")
	requireNoQEMU(t, tmp)
}

// TestPeerPackage runs the tests of package test/lab/peer, the Go API for
// the two-guest lab, in the primary guest; they must run, not skip.
func TestPeerPackage(t *testing.T) {
	needLab(t)
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "peer.test")
	out, err := exec.Command("go", "test", "-c", "-o", bin, "../lab/peer").CombinedOutput()
	require.NoError(t, err, "%s", out)
	r := runLab(t, nil, "-kernel", "6.1", "-guests", "2", "--", bin, "-test.v", "-test.count=1")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	for _, name := range []string{"TestCommand", "TestPowerOffMidTransfer"} {
		require.Contains(t, r.stdout, "--- PASS: "+name+" ")
	}
	require.NotContains(t, r.stdout, "SKIP")
}

// requireNoQEMU fails if a QEMU whose command line mentions dir (the run's
// TMPDIR holds its sockets) is still running.
func requireNoQEMU(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("qemu-system")) && bytes.Contains(b, []byte(dir)) {
			t.Errorf("QEMU still running after the run: %s", bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

// TestBadAccel: an unknown GOVERBS_LAB_ACCEL is a lab failure that says
// which values work, before anything is installed or booted.
func TestBadAccel(t *testing.T) {
	t.Parallel()
	r := runLab(t, []string{"GOVERBS_LAB_ACCEL=xen"}, "--", "true")
	require.Equal(t, 125, r.code, "stderr:\n%s", r.stderr)
	require.Contains(t, r.stderr, `lab: GOVERBS_LAB_ACCEL="xen": use tcg (the default) or kvm`)
}
