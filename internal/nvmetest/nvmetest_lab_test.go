//go:build linux

package nvmetest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/netip"
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
	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/testutil"
)

// The baseline for NVMe over RDMA tests: the kernel's host (nvme_rdma)
// against the kernel's target (nvmet_rdma), over each lab device pair. The
// target listens on the pair's first address and the host connects to it
// unbound, so the RDMA CM puts both ends on that device (docs/testing.md
// §3).

// chunk is what the data checks write at a time.
const chunk = 4 << 20

// TestKernelHostTarget: discovery lists the subsystem; the host's
// connection gives a block device per namespace; fio's verified random
// writes pass; 4 MiB of random data written with O_DIRECT at several
// offsets reads back equal through the block device and, after a flush, is
// byte for byte in the target's backing file, and data written into the
// backing file reads back through the host; after the disconnect and the
// target's teardown nothing of either is left.
func TestKernelHostTarget(t *testing.T) {
	testutil.EachLabPair(t, func(t *testing.T, p testutil.LabPair) {
		kt := StartKernelTarget(t, TargetConfig{Addr: p.Ends[0].Addr, Namespaces: 2})
		addr := netip.MustParseAddr(p.Ends[0].Addr)
		require.True(t, strings.HasPrefix(kt.NQN, nqnPrefix), kt.NQN)
		require.Len(t, kt.Files, 2)
		if testutil.InLab() { // nothing else listens there
			require.Equal(t, netip.AddrPortFrom(addr, DefaultPort), kt.Addr)
		}
		port := filepath.Join(nvmetDir, "ports", strconv.Itoa(kt.PortID))
		require.Equal(t, "rdma", readAttr(port, "addr_trtype"))
		require.Equal(t, p.Ends[0].Addr, readAttr(port, "addr_traddr"))

		step := stepTimer(t)
		out, err := Discover(t, kt.Addr)
		require.NoError(t, err)
		step("nvme discover:\n%s", out)
		for _, re := range []string{
			`(?m)^subnqn:\s+` + regexp.QuoteMeta(kt.NQN) + `$`,
			`(?m)^trtype:\s+rdma$`,
			`(?m)^traddr:\s+` + regexp.QuoteMeta(p.Ends[0].Addr) + `$`,
			`(?m)^trsvcid:\s+` + strconv.Itoa(int(kt.Addr.Port())) + `$`,
		} {
			require.Regexp(t, re, out)
		}

		h := ConnectKernelHost(t, kt.Addr, kt.NQN)
		step("connected %s: namespaces %v", h.Ctrl, h.Namespaces)
		require.Equal(t, "live", h.State())
		require.Len(t, h.Namespaces, 2)
		require.Equal(t, "rdma", readAttr(filepath.Join(nvmeClass, h.Ctrl), "transport"))
		// Both ends' CM IDs are on the pair's first device.
		cms := testutil.RunTool(t, "rdma", "resource", "show", "cm_id")
		t.Logf("rdma resource show cm_id:\n%s", cms)
		for _, comm := range []string{"nvme_rdma", "nvmet_rdma"} {
			require.Regexp(t, `(?m)^link `+p.Ends[0].Device+`/1 .*comm \[?`+comm, cms)
		}

		runFio(t, h.Namespaces[1])
		step("fio on %s", h.Namespaces[1])
		for i, dev := range h.Namespaces {
			checkData(t, dev, kt.Files[i], DefaultSize)
			step("data checked on %s", dev)
		}

		h.Disconnect()
		step("disconnected")
		require.Equal(t, "", h.State(), "%s is still there after nvme disconnect", h.Ctrl)
		kt.Close()
		step("target torn down")
		requireNothingLeft(t, kt)
	})
}

// stepTimer returns a function that logs a step with the time since the
// step before.
func stepTimer(t *testing.T) func(format string, args ...any) {
	last := time.Now()
	return func(format string, args ...any) {
		t.Helper()
		now := time.Now()
		t.Logf("[%5.2fs] "+format, append([]any{now.Sub(last).Seconds()}, args...)...)
		last = now
	}
}

// TestSeveralTargets: two targets at once on one address get their own
// NQN, port id and service id; a host connects to each and each one's
// data lands in its own backing file. Removing one target's port takes its
// controller out of the live state and its discovery fails, while the
// other target serves on; the cleanup then disconnects a controller that
// is trying to reconnect and leaves nothing.
func TestSeveralTargets(t *testing.T) {
	end := testutil.VethPair(t)[0]
	var a, b *KernelTarget
	t.Run("targets", func(t *testing.T) {
		a = StartKernelTarget(t, TargetConfig{Addr: end.Addr, Size: 8 << 20})
		b = StartKernelTarget(t, TargetConfig{Addr: end.Addr, Size: 8 << 20})
		require.NotEqual(t, a.NQN, b.NQN)
		require.NotEqual(t, a.PortID, b.PortID)
		require.NotEqual(t, a.Addr.Port(), b.Addr.Port())

		ha := ConnectKernelHost(t, a.Addr, a.NQN)
		hb := ConnectKernelHost(t, b.Addr, b.NQN)
		require.NotEqual(t, ha.Ctrl, hb.Ctrl)
		writeMarker(t, ha.Namespaces[0], a.Files[0], 'A')
		writeMarker(t, hb.Namespaces[0], b.Files[0], 'B')

		a.RemovePort()
		a.RemovePort() // a second call does nothing
		_, err := os.Stat(filepath.Join(nvmetDir, "ports", strconv.Itoa(a.PortID)))
		require.ErrorIs(t, err, os.ErrNotExist, "port %d is still there", a.PortID)
		_, err = os.Stat(filepath.Join(nvmetDir, "subsystems", a.NQN))
		require.NoError(t, err, "RemovePort must leave the subsystem")
		deadline := time.Now().Add(2 * time.Minute)
		for ha.State() == "live" {
			require.True(t, time.Now().Before(deadline), "%s is still live 2 minutes after its target's port went", ha.Ctrl)
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%s after the port went: %s", ha.Ctrl, ha.State())
		_, err = Discover(t, a.Addr)
		require.Error(t, err, "discovery at a removed port")

		require.Equal(t, "live", hb.State())
		_, err = Discover(t, b.Addr)
		require.NoError(t, err)
		writeMarker(t, hb.Namespaces[0], b.Files[0], 'C')
	})
	requireNothingLeft(t, a)
	requireNothingLeft(t, b)
}

// TestTargetErrors: a bad configuration is refused before anything is
// set up; a port nvmet_rdma cannot listen on fails with the kernel's
// reason and leaves nothing; so does a service id in use.
func TestTargetErrors(t *testing.T) {
	RequireNVMeoF(t)
	end := testutil.VethPair(t)[0]
	for _, tc := range []struct {
		cfg  TargetConfig
		want string
	}{
		{TargetConfig{Addr: "fe80::1"}, "is not an IPv4 address"},
		{TargetConfig{Addr: end.Addr, Size: 1000}, "not a positive multiple of 4096"},
		{TargetConfig{Addr: end.Addr, Port: 70000}, "is not a port"},
		{TargetConfig{Addr: end.Addr, Namespaces: -1}, "use 1 to 1024"},
	} {
		_, err := startTarget(t, tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}

	// 10.77.0.9 is on veth0's subnet, but no interface has it.
	var kt *KernelTarget
	t.Run("unbound", func(t *testing.T) {
		_, err := startTarget(t, TargetConfig{Addr: "10.77.0.9"})
		require.Error(t, err)
		t.Logf("%v", err)
		require.ErrorContains(t, err, "linking subsystem")
		require.ErrorContains(t, err, "10.77.0.9:4420")
		require.ErrorContains(t, err, "Addr must be the IPv4 address of an RDMA device's netdev")
		// nvmet_rdma logs why (kernel: rdma.c nvmet_rdma_enable_port).
		require.Regexp(t, `kernel messages meanwhile:[\s\S]*10\.77\.0\.9:4420`, err.Error())
		requireNothingLeftIn(t, "after the failed set-up")

		kt = StartKernelTarget(t, TargetConfig{Addr: end.Addr})
		_, err = startTarget(t, TargetConfig{Addr: end.Addr, Port: int(kt.Addr.Port())})
		require.Error(t, err)
		t.Logf("%v", err)
		require.ErrorIs(t, err, syscall.EADDRINUSE)
		require.ErrorContains(t, err, "leave Port 0 to take a free one")
		_, err = startTarget(t, TargetConfig{Addr: end.Addr, NQN: kt.NQN})
		require.ErrorContains(t, err, "another subsystem has this NQN")
	})
	requireNothingLeft(t, kt)
}

// TestConnectErrors: a connection to a subsystem the target does not have
// fails with nvme-cli's output and the kernel's reason, and leaves no
// controller.
func TestConnectErrors(t *testing.T) {
	end := testutil.VethPair(t)[0]
	kt := StartKernelTarget(t, TargetConfig{Addr: end.Addr})
	before := controllers()
	_, err := connectHost(t, kt.Addr, nqnPrefix+"nosuch")
	require.Error(t, err)
	t.Logf("%v", err)
	require.ErrorContains(t, err, "nvme connect -t rdma -a "+end.Addr)
	require.Contains(t, err.Error(), "kernel messages meanwhile:")
	require.Contains(t, err.Error(), nqnPrefix+"nosuch", "the kernel names the NQN it refused")
	require.Equal(t, before, controllers())
}

// checkData writes random data at several offsets of dev with O_DIRECT
// and reads it back, flushes, and compares it with the backing file; then
// writes into the backing file and reads that through dev.
func checkData(t *testing.T, dev, file string, size int64) {
	f, err := os.OpenFile(dev, os.O_RDWR|syscall.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	wbuf, rbuf := alignedBuf(t, chunk), alignedBuf(t, chunk)
	want := map[int64][]byte{}
	for _, off := range []int64{0, 20<<20 + 3*blockSize, size - chunk} {
		_, err := rand.Read(wbuf)
		require.NoError(t, err)
		n, err := f.WriteAt(wbuf, off)
		require.NoError(t, err, "O_DIRECT write of %d bytes at %d to %s", chunk, off, dev)
		require.Equal(t, chunk, n)
		clear(rbuf)
		n, err = f.ReadAt(rbuf, off)
		require.NoError(t, err, "O_DIRECT read at %d from %s", off, dev)
		require.Equal(t, chunk, n)
		sameBytes(t, fmt.Sprintf("%s at %d, read back", dev, off), wbuf, rbuf)
		want[off] = bytes.Clone(wbuf)
	}
	// fsync of the block device sends a Flush, which nvmet's file backend
	// turns into vfs_fsync (kernel: io-cmd-file.c nvmet_file_flush).
	require.NoError(t, f.Sync())

	bf, err := os.OpenFile(file, os.O_RDWR, 0)
	require.NoError(t, err)
	defer bf.Close()
	got := make([]byte, chunk)
	for off, w := range want {
		_, err := bf.ReadAt(got, off)
		require.NoError(t, err)
		sameBytes(t, fmt.Sprintf("backing file %s at %d", file, off), w, got)
	}

	// The other way: the target reads the file through the page cache
	// (buffered_io), and the host's O_DIRECT read bypasses its own.
	off := int64(40 << 20)
	_, err = rand.Read(got)
	require.NoError(t, err)
	_, err = bf.WriteAt(got[:1<<20], off)
	require.NoError(t, err)
	n, err := f.ReadAt(rbuf[:1<<20], off)
	require.NoError(t, err)
	require.Equal(t, 1<<20, n)
	sameBytes(t, fmt.Sprintf("%s at %d after writing the backing file", dev, off), got[:1<<20], rbuf[:1<<20])
}

// writeMarker writes one block of c at offset 0 of dev and checks that it
// is in file.
func writeMarker(t *testing.T, dev, file string, c byte) {
	f, err := os.OpenFile(dev, os.O_RDWR|syscall.O_DIRECT, 0)
	require.NoError(t, err)
	defer f.Close()
	buf := alignedBuf(t, blockSize)
	for i := range buf {
		buf[i] = c
	}
	_, err = f.WriteAt(buf, 0)
	require.NoError(t, err, "write to %s", dev)
	require.NoError(t, f.Sync())
	got := make([]byte, blockSize)
	bf, err := os.Open(file)
	require.NoError(t, err)
	defer bf.Close()
	_, err = bf.ReadAt(got, 0)
	require.NoError(t, err)
	sameBytes(t, fmt.Sprintf("backing file %s after writing %q to %s", file, c, dev), buf, got)
}

// runFio runs fio's random writes with crc32c verification over the first
// 4 MiB of dev, with O_DIRECT and eight I/Os in flight.
func runFio(t *testing.T, dev string) {
	if _, err := exec.LookPath("fio"); err != nil {
		t.Fatalf("fio is needed (the lab installs it: test/lab/host.go hostPackages, test/lab/userland.go): %v", err)
	}
	out, err := exec.Command("fio", "--name=nvmetest", "--filename="+dev, "--direct=1",
		"--ioengine=libaio", "--iodepth=8", "--rw=randwrite", "--bs=4k", "--size=4m",
		"--verify=crc32c", "--do_verify=1",
		"--verify_state_save=0", // else fio leaves local-*-verify.state in the working directory
	).CombinedOutput()
	require.NoError(t, err, "fio on %s:\n%s", dev, out)
	require.Regexp(t, `err=\s*0`, string(out))
	require.NotContains(t, string(out), "verify: bad")
}

// alignedBuf returns n bytes of anonymous memory, page-aligned as O_DIRECT
// needs, unmapped when the test ends.
func alignedBuf(t *testing.T, n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return b
}

// sameBytes fails t at the first byte where got differs from want.
func sameBytes(t *testing.T, what string, want, got []byte) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	if i := firstDiff(want, got); i >= 0 {
		t.Fatalf("%s: byte %d is %#02x, want %#02x (%d bytes compared)", what, i, got[i], want[i], len(want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// requireNothingLeft checks that kt's subsystem, port and backing files
// are gone, and requireNothingLeftIn that nvmet's configfs and the nvme
// class are empty in the lab.
func requireNothingLeft(t *testing.T, kt *KernelTarget) {
	t.Helper()
	require.NotNil(t, kt)
	for _, p := range append([]string{
		filepath.Join(nvmetDir, "subsystems", kt.NQN),
		filepath.Join(nvmetDir, "ports", strconv.Itoa(kt.PortID)),
		filepath.Dir(kt.Files[0]),
	}, kt.Files...) {
		_, err := os.Lstat(p)
		require.ErrorIs(t, err, os.ErrNotExist, "%s is left", p)
	}
	requireNothingLeftIn(t, "after the teardown of "+kt.NQN)
}

func requireNothingLeftIn(t *testing.T, when string) {
	t.Helper()
	if !testutil.InLab() {
		return // other users of nvmet and nvme may be there
	}
	for _, d := range []string{filepath.Join(nvmetDir, "subsystems"), filepath.Join(nvmetDir, "ports"), nvmeClass} {
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		require.Empty(t, names, "%s: %s is not empty", when, d)
	}
	shm, _ := filepath.Glob(filepath.Join(backingDir, "nvmetest-*"))
	require.Empty(t, shm, "%s: backing directories are left", when)
}

// TestWithoutTesting: Start and ConnectHost, for programs, set up what
// StartKernelTarget and ConnectKernelHost do, register nothing with a
// test, and their Disconnect and Close undo it all, once.
func TestWithoutTesting(t *testing.T) {
	RequireNVMeoF(t)
	end := testutil.VethPair(t)[0]
	kt, err := Start(TargetConfig{Addr: end.Addr, Size: 8 << 20})
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			kt.Close()
		}
	}()
	require.Nil(t, kt.t)
	h, err := ConnectHost(kt.Addr, kt.NQN)
	require.NoError(t, err)
	require.Nil(t, h.t)
	require.Equal(t, "live", h.State())
	writeMarker(t, h.Namespaces[0], kt.Files[0], 'P')
	require.NoError(t, h.Disconnect())
	require.NoError(t, h.Disconnect(), "a second Disconnect")
	require.Equal(t, "", h.State())
	require.NoError(t, kt.Close())
	closed = true
	require.NoError(t, kt.Close(), "a second Close")
	requireNothingLeft(t, kt)

	_, err = Start(TargetConfig{Addr: "10.77.0.9"})
	require.ErrorContains(t, err, "linking subsystem", "a target nvmet_rdma cannot listen for")
	requireNothingLeftIn(t, "after Start failed")
}
