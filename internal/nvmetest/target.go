//go:build linux

package nvmetest

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

const (
	// DefaultPort is the NVMe over Fabrics port the IANA assigned.
	DefaultPort = 4420
	// DefaultSize is the size of a namespace when TargetConfig.Size is 0.
	DefaultSize = 64 << 20
	// nqnPrefix names the subsystems StartKernelTarget makes.
	nqnPrefix = "nqn.2014-08.org.goverbs:test-"
	// blockSize is the logical block size nvmet gives a namespace on a
	// tmpfs file: min(i_blkbits, 12), and tmpfs's i_blkbits is
	// PAGE_SHIFT (kernel: drivers/nvme/target/io-cmd-file.c
	// nvmet_file_ns_enable).
	blockSize = 4096
)

// nvmetDir is nvmet's configfs directory (kernel:
// drivers/nvme/target/configfs.c, the "nvmet" subsystem).
const nvmetDir = "/sys/kernel/config/nvmet"

// backingDir is where the namespaces' files go: a tmpfs every Linux system
// has (the lab's guest mounts one there too).
var backingDir = "/dev/shm"

// allocMu orders the choice of port ids and service ids within the
// process, so that targets started at the same time get distinct ones.
var allocMu sync.Mutex

// TargetConfig says what StartKernelTarget sets up.
type TargetConfig struct {
	// Addr is the IPv4 address the port listens on: that of a lab RDMA
	// device's netdev, e.g. 10.77.0.1 (rxe1) or 10.79.0.1 (siw1).
	Addr string
	// Port is the RDMA CM port (trsvcid). 0 takes DefaultPort, or the next
	// one that no nvmet port on Addr has yet.
	Port int
	// NQN is the subsystem's name; "" takes a unique
	// nqn.2014-08.org.goverbs:test-N.
	NQN string
	// Size is the size of each namespace in bytes, a multiple of 4096
	// (DefaultSize when 0).
	Size int64
	// Namespaces is how many namespaces the subsystem has (1 when 0),
	// with namespace ids 1 to Namespaces.
	Namespaces int
}

// KernelTarget is a subsystem of the kernel's NVMe target with its
// namespaces and an RDMA port, set up by StartKernelTarget.
type KernelTarget struct {
	NQN    string
	Addr   netip.AddrPort
	Files  []string // backing file of namespace i+1
	PortID int      // the port's directory under nvmet/ports

	t    testing.TB // nil when made by Start
	klog *kernelLog

	mu   sync.Mutex
	undo []undoStep // in the order they were set up
}

// undoStep undoes one step of the set-up; port steps are those RemovePort
// undoes.
type undoStep struct {
	what string
	port bool
	do   func() error
}

// StartKernelTarget configures the kernel's NVMe target (nvmet) through
// configfs: a subsystem that allows any host, cfg.Namespaces namespaces
// backed by files of cfg.Size bytes on tmpfs, and a port with transport
// rdma on cfg.Addr linked to the subsystem, which makes nvmet_rdma listen
// there. Close (which t.Cleanup calls) undoes it all. It calls
// RequireNVMeoF and fails t when a step fails, with the kernel's messages.
func StartKernelTarget(t testing.TB, cfg TargetConfig) *KernelTarget {
	t.Helper()
	RequireNVMeoF(t)
	kt, err := startTarget(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kt
}

// Start is StartKernelTarget for a program: it checks what Check checks,
// returns its errors and leaves Close to the caller.
func Start(cfg TargetConfig) (*KernelTarget, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	return startTarget(nil, cfg)
}

// startTarget is StartKernelTarget returning its error; what it had set up
// is undone by then. With t nil nothing is left to t.Cleanup.
func startTarget(t testing.TB, cfg TargetConfig) (*KernelTarget, error) {
	addr, err := checkConfig(&cfg)
	if err != nil {
		return nil, err
	}
	kt := &KernelTarget{t: t, klog: openKernelLog()}
	if t != nil {
		t.Cleanup(func() { kt.Close() })
	}
	if err := kt.setUp(cfg, addr); err != nil {
		if errs := kt.teardown(false); len(errs) > 0 {
			err = fmt.Errorf("%w\nand undoing the set-up failed too:\n\t%v", err, errors.Join(errs...))
		}
		return nil, err
	}
	return kt, nil
}

func checkConfig(cfg *TargetConfig) (netip.Addr, error) {
	addr, err := netip.ParseAddr(cfg.Addr)
	if err != nil || !addr.Is4() {
		return netip.Addr{}, fmt.Errorf("nvmetest: TargetConfig.Addr %q is not an IPv4 address; use that of a lab RDMA device (10.77.0.1 on rxe1, 10.79.0.1 on siw1: testutil.LabPairs)", cfg.Addr)
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return netip.Addr{}, fmt.Errorf("nvmetest: TargetConfig.Port %d is not a port; 0 picks %d or the next free one", cfg.Port, DefaultPort)
	}
	if cfg.Size == 0 {
		cfg.Size = DefaultSize
	}
	if cfg.Size < 0 || cfg.Size%blockSize != 0 {
		return netip.Addr{}, fmt.Errorf("nvmetest: TargetConfig.Size %d is not a positive multiple of %d, the block size nvmet gives a file on tmpfs", cfg.Size, blockSize)
	}
	if cfg.Namespaces == 0 {
		cfg.Namespaces = 1
	}
	if cfg.Namespaces < 0 || cfg.Namespaces > 1024 {
		return netip.Addr{}, fmt.Errorf("nvmetest: TargetConfig.Namespaces %d: use 1 to 1024", cfg.Namespaces)
	}
	if len(cfg.NQN) > 223 {
		return netip.Addr{}, fmt.Errorf("nvmetest: TargetConfig.NQN is %d bytes; an NQN has at most 223", len(cfg.NQN))
	}
	return addr, nil
}

func (kt *KernelTarget) push(what string, port bool, do func() error) {
	kt.mu.Lock()
	kt.undo = append(kt.undo, undoStep{what, port, do})
	kt.mu.Unlock()
}

// fail is the error of a set-up step: what it did, the error, what to do
// about it and the kernel's messages.
func (kt *KernelTarget) fail(step string, err error, hint string) error {
	if hint != "" {
		hint = "\n" + hint
	}
	return fmt.Errorf("nvmetest: kernel target: %s: %w%s%s", step, err, hint, kt.klog.report())
}

func (kt *KernelTarget) setUp(cfg TargetConfig, addr netip.Addr) error {
	dir, err := os.MkdirTemp(backingDir, "nvmetest-")
	if err != nil {
		return kt.fail("making the backing files' directory", err, "the namespaces are files on the tmpfs at "+backingDir)
	}
	kt.push("removing "+dir, false, func() error { return os.RemoveAll(dir) })
	for i := 1; i <= cfg.Namespaces; i++ {
		p := filepath.Join(dir, fmt.Sprintf("ns%d", i))
		if err := makeFile(p, cfg.Size); err != nil {
			return kt.fail("making a backing file", err, "")
		}
		kt.Files = append(kt.Files, p)
	}

	subsys, err := kt.makeSubsystem(cfg.NQN)
	if err != nil {
		return err
	}
	if err := writeAttr(subsys, "attr_allow_any_host", "1"); err != nil {
		return kt.fail("allowing any host", err, "")
	}
	for i, file := range kt.Files {
		ns := filepath.Join(subsys, "namespaces", strconv.Itoa(i+1))
		if err := os.Mkdir(ns, 0o755); err != nil {
			return kt.fail("making namespace "+strconv.Itoa(i+1), err, "")
		}
		kt.push("removing "+ns, false, func() error { return os.Remove(ns) })
		// buffered_io=1: the file is opened without O_DIRECT, which tmpfs
		// refuses before 6.6 (kernel: io-cmd-file.c nvmet_file_ns_enable
		// adds O_DIRECT unless buffered_io). The data then goes through
		// tmpfs's page cache, which is the file's only copy, so the backing
		// file shows every write once its command completed. nvmet takes
		// buffered_io only while the namespace is disabled.
		for _, a := range [][2]string{{"device_path", file}, {"buffered_io", "1"}, {"enable", "1"}} {
			if err := writeAttr(ns, a[0], a[1]); err != nil {
				return kt.fail(fmt.Sprintf("namespace %d: writing %s %q", i+1, a[0], a[1]), err, "")
			}
		}
	}

	allocMu.Lock()
	defer allocMu.Unlock()
	port := cfg.Port
	if port == 0 {
		port = freeServiceID(addr.String())
	}
	kt.Addr = netip.AddrPortFrom(addr, uint16(port))
	portDir, err := kt.makePort()
	if err != nil {
		return err
	}
	for _, a := range [][2]string{
		{"addr_trtype", "rdma"}, {"addr_adrfam", "ipv4"},
		{"addr_traddr", addr.String()}, {"addr_trsvcid", strconv.Itoa(port)},
	} {
		if err := writeAttr(portDir, a[0], a[1]); err != nil {
			return kt.fail(fmt.Sprintf("port %d: writing %s %q", kt.PortID, a[0], a[1]), err, "")
		}
	}
	// Linking the first subsystem enables the port: nvmet_rdma binds and
	// listens on traddr:trsvcid then, and the symlink fails with its error
	// (kernel: configfs.c nvmet_port_subsys_allow_link, core.c
	// nvmet_enable_port, rdma.c nvmet_rdma_enable_port).
	link := filepath.Join(portDir, "subsystems", kt.NQN)
	if err := os.Symlink(subsys, link); err != nil {
		hint := fmt.Sprintf("nvmet_rdma could not listen on %v: Addr must be the IPv4 address of an RDMA device's netdev (the lab's 10.77.0.1 on rxe1, 10.79.0.1 on siw1)", kt.Addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			hint = fmt.Sprintf("something listens on %v already: leave Port 0 to take a free one", kt.Addr)
		}
		return kt.fail(fmt.Sprintf("linking subsystem %s to port %d (%v)", kt.NQN, kt.PortID, kt.Addr), err, hint)
	}
	kt.push("unlinking "+link, true, func() error { return os.Remove(link) })
	return nil
}

// makeSubsystem makes the subsystem's directory: nqn, or the first free
// nqnPrefix-N.
func (kt *KernelTarget) makeSubsystem(nqn string) (string, error) {
	for n := 1; ; n++ {
		name := nqn
		if name == "" {
			name = nqnPrefix + strconv.Itoa(n)
		}
		dir := filepath.Join(nvmetDir, "subsystems", name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			kt.NQN = name
			kt.push("removing "+dir, false, func() error { return os.Remove(dir) })
			return dir, nil
		}
		if errors.Is(err, os.ErrExist) && nqn == "" {
			continue
		}
		hint := ""
		if errors.Is(err, os.ErrExist) {
			hint = "another subsystem has this NQN: leave TargetConfig.NQN empty to get a unique one"
		}
		return "", kt.fail("making subsystem "+name, err, hint)
	}
}

// makePort makes the first free port directory (nvmet's port ids are the
// directories' names, a u16: configfs.c nvmet_ports_make).
func (kt *KernelTarget) makePort() (string, error) {
	for id := 1; id <= 65535; id++ {
		dir := filepath.Join(nvmetDir, "ports", strconv.Itoa(id))
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", kt.fail("making port "+strconv.Itoa(id), err, "")
		}
		kt.PortID = id
		kt.push("removing "+dir, true, func() error { return os.Remove(dir) })
		return dir, nil
	}
	return "", kt.fail("making a port", errors.New("every port id is taken"), "")
}

// freeServiceID returns DefaultPort or the next service id that no nvmet
// port on traddr has.
func freeServiceID(traddr string) int {
	used := map[int]bool{}
	ports, _ := filepath.Glob(filepath.Join(nvmetDir, "ports", "*"))
	for _, p := range ports {
		if readAttr(p, "addr_traddr") != traddr {
			continue
		}
		if n, err := strconv.Atoi(readAttr(p, "addr_trsvcid")); err == nil {
			used[n] = true
		}
	}
	port := DefaultPort
	for used[port] {
		port++
	}
	return port
}

// RemovePort unlinks the subsystem from its port and removes the port:
// nvmet deletes the controllers connected through it and nvmet_rdma stops
// listening (kernel: configfs.c nvmet_port_subsys_drop_link). The
// subsystem and its namespaces stay until Close. A second call does
// nothing. Its errors fail the test of StartKernelTarget's target, and are
// returned too.
func (kt *KernelTarget) RemovePort() error {
	if kt.t != nil {
		kt.t.Helper()
	}
	return kt.report(kt.teardown(true), "removing the port of")
}

// Close removes the port, the namespaces, the subsystem and the backing
// files, in that order. It is idempotent; t.Cleanup calls it for
// StartKernelTarget's target, whose test its errors fail; they are
// returned too.
func (kt *KernelTarget) Close() error {
	if kt.t != nil {
		kt.t.Helper()
	}
	err := kt.report(kt.teardown(false), "tearing down the kernel target")
	kt.klog.close()
	return err
}

// report fails the test with each of errs, if there is a test, and
// returns them joined.
func (kt *KernelTarget) report(errs []error, what string) error {
	if kt.t != nil {
		kt.t.Helper()
	}
	var out []error
	for _, err := range errs {
		err = fmt.Errorf("nvmetest: %s %s: %w", what, kt.NQN, err)
		if kt.t != nil {
			kt.t.Errorf("%v", err)
		}
		out = append(out, err)
	}
	return errors.Join(out...)
}

// teardown runs the undo steps, the last first: only the port's, or all.
// Every step runs once, even after another failed.
func (kt *KernelTarget) teardown(portOnly bool) []error {
	kt.mu.Lock()
	var run, keep []undoStep
	for _, s := range kt.undo {
		if portOnly && !s.port {
			keep = append(keep, s)
		} else {
			run = append(run, s)
		}
	}
	kt.undo = keep
	kt.mu.Unlock()
	var errs []error
	for i := len(run) - 1; i >= 0; i-- {
		if err := run[i].do(); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s: %w%s", run[i].what, err, kt.klog.report()))
		}
	}
	return errs
}

// makeFile makes a sparse file of size bytes.
func makeFile(p string, size int64) error {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeAttr writes a configfs attribute in one write(2), as nvmet's store
// functions expect.
func writeAttr(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(value))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readAttr reads a sysfs or configfs attribute, without its newline; ""
// when it cannot be read.
func readAttr(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
