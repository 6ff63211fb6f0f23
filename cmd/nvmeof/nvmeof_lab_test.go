package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/nvmetest"
	"github.com/goverbs/rdma/internal/testutil"
)

func runOK(t *testing.T, ctx context.Context, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("nvmeof %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// fields picks the "label: value" lines of a discovery log or identify
// output, blanks squeezed, as a set.
func fields(out string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "=") {
			m[strings.TrimSpace(k)+": "+strings.Join(strings.Fields(v), " ")] = true
		}
	}
	return m
}

// The program against the kernel's target: discover and id-ctrl print what
// nvme-cli prints for the same target (every line ours prints is in
// nvme-cli's output), a file written and read back is equal and is in the
// target's backing file, and perf reports I/O.
func TestAgainstKernelTarget(t *testing.T) {
	testutil.EachLabPair(t, func(t *testing.T, p testutil.LabPair) {
		nvmetest.RequireNVMeoF(t)
		kt := nvmetest.StartKernelTarget(t, nvmetest.TargetConfig{Addr: p.Ends[0].Addr, Size: 16 << 20})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		addr, port := kt.Addr.Addr().String(), fmt.Sprint(kt.Addr.Port())

		ours := runOK(t, ctx, "discover", "-a", addr, "-s", port)
		theirs, err := nvmetest.Discover(t, kt.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(ours, "subnqn:  "+kt.NQN) {
			t.Errorf("our discover does not list %s:\n%s", kt.NQN, ours)
		}
		want := fields(theirs)
		for f := range fields(ours) {
			if !want[f] && !strings.HasPrefix(f, "Discovery Log Number of Records") {
				t.Errorf("our discover prints %q, which nvme discover does not:\n%s", f, theirs)
			}
		}

		idc := runOK(t, ctx, "id-ctrl", "-a", addr, "-s", port, "-n", kt.NQN)
		kh := nvmetest.ConnectKernelHost(t, kt.Addr, kt.NQN)
		out, err := exec.Command("nvme", "id-ctrl", "/dev/"+kh.Ctrl).CombinedOutput()
		if err != nil {
			t.Fatalf("nvme id-ctrl: %v\n%s", err, out)
		}
		want = fields(string(out))
		for f := range fields(idc) {
			if strings.HasPrefix(f, "cntlid") {
				continue // each connection gets its own controller
			}
			if !want[f] {
				t.Errorf("our id-ctrl prints %q, which nvme id-ctrl does not", f)
			}
		}
		kh.Disconnect()

		if l := runOK(t, ctx, "list", "-a", addr, "-s", port, "-n", kt.NQN); !regexp.MustCompile(`(?m)^1 +16\.00 MiB +4096 B \+ 0 B +4096$`).MatchString(l) {
			t.Errorf("list:\n%s", l)
		}

		dir := t.TempDir()
		in, back := filepath.Join(dir, "in"), filepath.Join(dir, "back")
		data := make([]byte, 1<<20+8192)
		rand.Read(data)
		if err := os.WriteFile(in, data, 0o600); err != nil {
			t.Fatal(err)
		}
		runOK(t, ctx, "write", "-a", addr, "-s", port, "-n", kt.NQN, "-i", in, "-offset", "8192")
		runOK(t, ctx, "read", "-a", addr, "-s", port, "-n", kt.NQN, "-o", back, "-offset", "8192", "-length", fmt.Sprint(len(data)))
		got, err := os.ReadFile(back)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes (%v), not what was written", len(got), err)
		}
		file, err := os.ReadFile(kt.Files[0])
		if err != nil || !bytes.Equal(file[8192:8192+len(data)], data) {
			t.Fatalf("the target's backing file differs from what was written (%v)", err)
		}
		// A file that is not whole blocks is refused, saying so.
		if err := os.WriteFile(in, data[:1000], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := run(ctx, []string{"write", "-a", addr, "-s", port, "-n", kt.NQN, "-i", in}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "not a whole number of 4096-byte blocks") {
			t.Errorf("a 1000-byte file: %v", err)
		}

		perf := runOK(t, ctx, "perf", "-a", addr, "-s", port, "-n", kt.NQN, "-rw", "randread", "-qd", "4", "-t", "2s")
		if !regexp.MustCompile(`^randread bs=4096 qd=4: [1-9][0-9]* IOs in [0-9.]+s: [0-9]+ IOPS`).MatchString(perf) {
			t.Errorf("perf printed %q", perf)
		}
	})
}

// serve is the target for the kernel's host: nvme discover lists it, nvme
// connect gives a block device, and data written there is read back by
// our own host; SIGINT's context ends it cleanly.
func TestServe(t *testing.T) {
	testutil.EachLabPair(t, func(t *testing.T, p testutil.LabPair) {
		nvmetest.RequireNVMeoF(t)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sctx, stop := context.WithCancel(ctx)
		const port, nqn = 4433, "nqn.2024-01.io.goverbs:serve-test"
		addr := p.Ends[0].Addr
		var (
			sout     bytes.Buffer
			serveErr error
		)
		served := make(chan struct{})
		go func() {
			defer close(served)
			serveErr = run(sctx, []string{"serve", "-a", addr, "-s", fmt.Sprint(port), "-n", nqn, "-mem", "8388608"}, &sout)
		}()
		defer func() {
			stop()
			<-served
		}()
		if err := testutil.WaitListening(ctx, port, true, served); err != nil {
			t.Fatalf("%v (serve: %v)", err, serveErr)
		}
		disc, err := nvmetest.Discover(t, netipPort(t, addr, port))
		if err != nil || !strings.Contains(disc, nqn) {
			t.Fatalf("nvme discover against serve: %v\n%s", err, disc)
		}
		kh := nvmetest.ConnectKernelHost(t, netipPort(t, addr, port), nqn)
		data := make([]byte, 64<<10)
		rand.Read(data)
		f, err := os.OpenFile(kh.Namespaces[0], os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(data, 1<<20); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		kh.Disconnect()
		dir := t.TempDir()
		back := filepath.Join(dir, "back")
		runOK(t, ctx, "read", "-a", addr, "-s", fmt.Sprint(port), "-n", nqn, "-o", back, "-offset", fmt.Sprint(1<<20), "-length", fmt.Sprint(len(data)))
		if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("our host read back what the kernel's host wrote wrong (%v)", err)
		}
		stop()
		<-served
		if serveErr != nil {
			t.Fatalf("serve ended with %v\n%s", serveErr, sout.String())
		}
		if !strings.Contains(sout.String(), "serving "+nqn+" (8.00 MiB, 16384 blocks of 512 bytes)") {
			t.Errorf("serve printed %q", sout.String())
		}
	})
}

func netipPort(t *testing.T, addr string, port int) netip.AddrPort {
	ap, err := netip.ParseAddrPort(fmt.Sprintf("%s:%d", addr, port))
	if err != nil {
		t.Fatal(err)
	}
	return ap
}
