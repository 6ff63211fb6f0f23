package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/goverbs/rdma/internal/sys"
)

// Main runs the tests with the leak tracer on and fails the binary if any
// fd, mapping or event fd made during the run is still open at the end.
// Use it as: func TestMain(m *testing.M) { testutil.Main(m) }
func Main(m *testing.M) {
	sys.EnableLeakTracing()
	code := m.Run()
	if leaks := sys.Leaks(); len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d kernel resource(s) leaked by the tests:\n", len(leaks))
		for _, l := range leaks {
			fmt.Fprintln(os.Stderr, l)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// InLab reports whether the test runs inside the rxe lab (test/rxelab), where
// every device test must run rather than skip.
func InLab() bool { return os.Getenv("GOVERBS_LAB") == "1" }

const howToRun = "run `make test`, which runs the device tests in the rxe lab (a QEMU VM with rdma_rxe)"

// RequireRDMA skips the test when the machine has no RDMA device, except in
// the lab, where a missing device is a failure.
func RequireRDMA(t testing.TB) {
	t.Helper()
	if HaveRDMA() {
		return
	}
	if InLab() {
		t.Fatal("no RDMA device in the lab: /sys/class/infiniband is empty or /dev/infiniband has no uverbs device")
	}
	t.Skip("no RDMA device on this machine; " + howToRun)
}

// RequireRoot skips the test when not running as root, except in the lab.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if InLab() {
		t.Fatal("the lab runs tests as root, but euid is", os.Geteuid())
	}
	t.Skip("needs root; " + howToRun)
}

// HaveRDMA reports whether a uverbs device node and an RDMA device exist.
func HaveRDMA() bool {
	devs, _ := filepath.Glob("/sys/class/infiniband/*")
	nodes, _ := filepath.Glob("/dev/infiniband/uverbs*")
	return len(devs) > 0 && len(nodes) > 0
}

// LoopbackDevice returns the rxe device on lo for verbs tests that exchange
// QP numbers out of band (GID index 1 is ::ffff:127.0.0.1). It calls
// RequireRDMA first.
func LoopbackDevice(t testing.TB) string {
	t.Helper()
	RequireRDMA(t)
	if d := os.Getenv("GOVERBS_LAB_LO_DEV"); d != "" {
		return d
	}
	if InLab() {
		t.Fatal("GOVERBS_LAB_LO_DEV is not set in the lab")
	}
	t.Skip("GOVERBS_LAB_LO_DEV names the rxe device on lo; " + howToRun)
	return ""
}

// VethEnd is one end of a lab veth pair with its RDMA device.
type VethEnd struct {
	Device string // RDMA device, e.g. rxe1 or siw1
	Netdev string // e.g. veth0
	Addr   string // IPv4 address, e.g. 10.77.0.1
}

// VethPair returns the lab's two rxe devices on a veth pair, for tests that
// go through the RDMA CM. It calls RequireRDMA first.
func VethPair(t testing.TB) [2]VethEnd {
	t.Helper()
	return labPair(t, "GOVERBS_LAB_VETH", "the veth pair's rxe devices", "")
}

// SiwPair returns the lab's two siw (soft-iWARP) devices, siw1 and siw2, on
// a veth pair of their own (veth2/veth3, 10.79.0.1 and 10.79.0.2): iWARP
// QPs connect only through the RDMA CM. It calls RequireRDMA first. The lab
// has siw on amd64 guests unless rxelab -no-siw; without it the test fails
// in the lab and is skipped elsewhere. Tests that cover siw only where the
// lab has it use LabSiw.
func SiwPair(t testing.TB) [2]VethEnd {
	t.Helper()
	return labPair(t, "GOVERBS_LAB_SIW", "the siw devices on their veth pair",
		" (the lab has siw on amd64 guests, unless rxelab -no-siw)")
}

// LabSiw returns the lab's siw devices, if this guest has them (arm64
// guests and rxelab -no-siw have none).
func LabSiw() ([2]VethEnd, bool) {
	return parsePair(os.Getenv("GOVERBS_LAB_SIW"))
}

// labPair parses the lab's dev:netdev:addr,dev:netdev:addr variable name;
// hint is added to the failure in the lab.
func labPair(t testing.TB, name, what, hint string) [2]VethEnd {
	t.Helper()
	RequireRDMA(t)
	v := os.Getenv(name)
	if out, ok := parsePair(v); ok {
		return out
	}
	if InLab() {
		t.Fatalf("%s=%q is not two dev:netdev:addr entries%s", name, v, hint)
	}
	t.Skip(name + " names " + what + "; " + howToRun)
	return [2]VethEnd{}
}

// parsePair parses dev:netdev:addr,dev:netdev:addr.
func parsePair(v string) ([2]VethEnd, bool) {
	var out [2]VethEnd
	ends := strings.Split(v, ",")
	if len(ends) != 2 {
		return out, false
	}
	for i, e := range ends {
		f := strings.Split(e, ":")
		if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
			return out, false
		}
		out[i] = VethEnd{Device: f[0], Netdev: f[1], Addr: f[2]}
	}
	return out, true
}

// SyncBuffer is a bytes.Buffer that a process or goroutine writes while the
// test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Len returns how many bytes were written so far.
func (b *SyncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Len()
}

// RunTool runs a command the lab installs (iproute2's rdma, rdma-core's
// tools) and returns its output; a missing tool or a failure fails t.
func RunTool(t testing.TB, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is needed for this test (Debian: iproute2, ibverbs-utils): %v", name, err)
	}
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// LabPair is one kind of device pair the lab has on a veth pair of its
// own: Kind names it ("rxe", "siw") and the subtests of EachLabPair.
type LabPair struct {
	Kind  string
	Ends  [2]VethEnd
	IWARP bool // connected only through the RDMA CM; RC only, no immediate data
}

// LabPairs returns every device pair the lab has for tests that go through
// the RDMA CM: the rxe pair (VethPair) and, where the guest has it (LabSiw),
// the siw pair.
func LabPairs(t testing.TB) []LabPair {
	t.Helper()
	out := []LabPair{{Kind: "rxe", Ends: VethPair(t)}}
	if ends, ok := LabSiw(); ok {
		out = append(out, LabPair{Kind: "siw", Ends: ends, IWARP: true})
	}
	return out
}

// EachLabPair runs f as a subtest named by the device kind for every pair
// of LabPairs: a test written once runs on rxe and siw.
func EachLabPair(t *testing.T, f func(t *testing.T, p LabPair)) {
	t.Helper()
	for _, p := range LabPairs(t) {
		t.Run(p.Kind, func(t *testing.T) { f(t, p) })
	}
}

// LabDevice is one kind of device the lab has, for verbs tests that need
// no connection: Kind names it ("rxe", "siw") and the subtests of
// uverbs' eachLabDevice.
type LabDevice struct {
	Kind  string
	Name  string
	IWARP bool // connected only through the RDMA CM; RC only, no immediate data
}

// LabDevices returns every kind of device the lab has: the rxe device on
// lo (LoopbackDevice) and, where the guest has siw (LabSiw), siw1.
func LabDevices(t testing.TB) []LabDevice {
	t.Helper()
	out := []LabDevice{{Kind: "rxe", Name: LoopbackDevice(t)}}
	if ends, ok := LabSiw(); ok {
		out = append(out, LabDevice{Kind: "siw", Name: ends[0].Device, IWARP: true})
	}
	return out
}
