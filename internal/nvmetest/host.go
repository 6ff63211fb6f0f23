//go:build linux

package nvmetest

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

const (
	nvmeClass   = "/sys/class/nvme"
	subsysClass = "/sys/class/nvme-subsystem"

	// cliTimeout bounds one nvme-cli command; connect and discover wait
	// for the RDMA CM and the fabrics Connect, seconds under the lab's TCG.
	cliTimeout = 2 * time.Minute
	// appearTimeout bounds the wait for a controller's namespaces and
	// their block devices, and for a deleted controller to go.
	appearTimeout = time.Minute
)

// hostNQNFile is where nvme-cli reads the host NQN from. Debian's
// nvme-cli writes it when installed (its postinst runs nvme gen-hostnqn),
// and the lab's guest sees the host's /etc, read-only.
const hostNQNFile = "/etc/nvme/hostnqn"

// fallbackHostNQN is the host NQN where hostNQNFile is missing or empty.
const fallbackHostNQN = "nqn.2014-08.org.goverbs:host"

// hostNQNArgs names fallbackHostNQN to nvme-cli where hostNQNFile has no
// host NQN (a host whose nvme-cli did not come from Debian's package): the
// lab's guest cannot write one into its read-only /etc.
func hostNQNArgs() []string {
	if b, err := os.ReadFile(hostNQNFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return nil
	}
	return []string{"--hostnqn=" + fallbackHostNQN}
}

// KernelHost is a controller of the kernel's NVMe over RDMA host (nvme_rdma),
// connected by ConnectKernelHost.
type KernelHost struct {
	Ctrl       string   // the controller, e.g. nvme0 (/dev/nvme0, /sys/class/nvme/nvme0)
	Namespaces []string // the namespaces' block devices by namespace id, e.g. /dev/nvme0n1

	t    testing.TB // nil when made by ConnectHost
	nqn  string
	once sync.Once
}

// ConnectKernelHost connects the kernel's host to the subsystem nqn at addr
// with nvme connect -t rdma, finds the new controller in sysfs and waits
// for the block devices of all its namespaces. Disconnect (which t.Cleanup
// calls) removes the controller. It calls RequireNVMeoF and fails t when
// the connection fails, with the kernel's messages.
func ConnectKernelHost(t testing.TB, addr netip.AddrPort, nqn string) *KernelHost {
	t.Helper()
	RequireNVMeoF(t)
	h, err := connectHost(t, addr, nqn)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// ConnectHost is ConnectKernelHost for a program: it checks what Check
// checks, returns its errors and leaves Disconnect to the caller.
func ConnectHost(addr netip.AddrPort, nqn string) (*KernelHost, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	return connectHost(nil, addr, nqn)
}

// connectHost is ConnectKernelHost returning its error; with t nil nothing
// is left to t.Cleanup.
func connectHost(t testing.TB, addr netip.AddrPort, nqn string) (*KernelHost, error) {
	klog := openKernelLog()
	defer klog.close()
	before := controllers()
	args := append([]string{"connect", "-t", "rdma", "-a", addr.Addr().String(), "-s", strconv.Itoa(int(addr.Port())), "-n", nqn}, hostNQNArgs()...)
	out, err := nvmeCLI(args...)
	// A failed connect leaves no controller; one that timed out on our
	// side may have, and it goes too.
	var ctrls []string
	for c := range controllers() {
		if !before[c] && readAttr(filepath.Join(nvmeClass, c), "subsysnqn") == nqn && matchAddress(c, addr) {
			ctrls = append(ctrls, c)
		}
	}
	if err != nil || len(ctrls) != 1 {
		for _, c := range ctrls {
			_ = writeAttr(filepath.Join(nvmeClass, c), "delete_controller", "1")
		}
		if err == nil {
			err = fmt.Errorf("it succeeded, but %d new controllers have subsysnqn %s and address %v in %s: %v", len(ctrls), nqn, addr, nvmeClass, ctrls)
		}
		return nil, fmt.Errorf("nvmetest: nvme %s: %v\n%s%s", strings.Join(args, " "), err, out, klog.report())
	}
	h := &KernelHost{Ctrl: ctrls[0], t: t, nqn: nqn}
	if t != nil {
		t.Cleanup(func() { h.Disconnect() })
	}
	if err := h.findNamespaces(); err != nil {
		if derr := h.disconnect(); derr != nil {
			err = fmt.Errorf("%w\nand disconnecting: %v", err, derr)
		}
		return nil, fmt.Errorf("nvmetest: %s connected to %s at %v, but %w%s", h.Ctrl, nqn, addr, err, klog.report())
	}
	return h, nil
}

// controllers returns the names of the nvme controllers that exist now.
func controllers() map[string]bool {
	ents, _ := os.ReadDir(nvmeClass)
	out := map[string]bool{}
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

// matchAddress reports whether controller c's address attribute
// ("traddr=10.77.0.1,trsvcid=4420", with src_addr= on later kernels)
// names addr.
func matchAddress(c string, addr netip.AddrPort) bool {
	var traddr, trsvcid string
	for _, kv := range strings.Split(readAttr(filepath.Join(nvmeClass, c), "address"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "traddr":
			traddr = v
		case "trsvcid":
			trsvcid = v
		}
	}
	return traddr == addr.Addr().String() && trsvcid == strconv.Itoa(int(addr.Port()))
}

// nsListLine is a line of nvme list-ns: "[   0]:0x1".
var nsListLine = regexp.MustCompile(`(?m)^\[\s*\d+\]:0x([0-9a-fA-F]+)\s*$`)

// findNamespaces asks the controller for its active namespace ids (nvme
// list-ns: Identify, CNS 02h) and waits for their block devices: the host
// scans namespaces in a work item after the connect has returned (kernel:
// drivers/nvme/host/core.c nvme_queue_scan).
func (h *KernelHost) findNamespaces() error {
	out, err := nvmeCLI("list-ns", "/dev/"+h.Ctrl)
	if err != nil {
		return fmt.Errorf("nvme list-ns /dev/%s: %v\n%s", h.Ctrl, err, out)
	}
	var nsids []int
	for _, m := range nsListLine.FindAllStringSubmatch(out, -1) {
		id, err := strconv.ParseInt(m[1], 16, 32)
		if err != nil {
			return fmt.Errorf("nvme list-ns /dev/%s: %q: %v", h.Ctrl, m[0], err)
		}
		nsids = append(nsids, int(id))
	}
	if len(nsids) == 0 {
		return fmt.Errorf("nvme list-ns /dev/%s lists no namespace:\n%s", h.Ctrl, out)
	}
	sort.Ints(nsids)
	deadline := time.Now().Add(appearTimeout)
	for {
		found := h.blockDevices()
		var missing []string
		h.Namespaces = h.Namespaces[:0]
		for _, id := range nsids {
			dev, ok := found[id]
			if ok {
				if fi, err := os.Stat(dev); err != nil || fi.Mode()&os.ModeDevice == 0 {
					ok = false
				}
			}
			if !ok {
				missing = append(missing, strconv.Itoa(id))
			}
			h.Namespaces = append(h.Namespaces, dev)
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v the block devices of namespaces %s (of %v) are not there (found %v in sysfs)", appearTimeout, strings.Join(missing, ","), nsids, found)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// diskName is a namespace's block device: nvme<X>n<Y>, not a multipath
// path device (nvme<X>c<C>n<Y>, hidden).
var diskName = regexp.MustCompile(`^nvme\d+n\d+$`)

// blockDevices maps namespace ids to the controller's block devices. They
// are children of the controller's device, or, with native multipath
// (Debian's CONFIG_NVME_MULTIPATH=y), of its subsystem's device, which has
// a link to each of its controllers (kernel: drivers/nvme/host/core.c
// nvme_init_subsystem, multipath.c nvme_mpath_alloc_disk).
func (h *KernelHost) blockDevices() map[int]string {
	dirs := []string{filepath.Join(nvmeClass, h.Ctrl)}
	subs, _ := filepath.Glob(filepath.Join(subsysClass, "*", h.Ctrl))
	for _, s := range subs {
		dirs = append(dirs, filepath.Dir(s))
	}
	out := map[int]string{}
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if !diskName.MatchString(e.Name()) {
				continue
			}
			if id, err := strconv.Atoi(readAttr(filepath.Join(d, e.Name()), "nsid")); err == nil {
				out[id] = "/dev/" + e.Name()
			}
		}
	}
	return out
}

// Disconnect removes the controller with nvme disconnect and waits until
// it is gone. It is idempotent; t.Cleanup calls it for ConnectKernelHost's
// controller, whose test its error fails; it is returned too.
func (h *KernelHost) Disconnect() error {
	err := h.disconnect()
	if err != nil {
		err = fmt.Errorf("nvmetest: %w", err)
		if h.t != nil {
			h.t.Helper()
			h.t.Errorf("%v", err)
		}
	}
	return err
}

func (h *KernelHost) disconnect() error {
	var err error
	h.once.Do(func() {
		// By controller, not by NQN (-n): another host of the test may be
		// connected to the same subsystem.
		if h.State() == "" {
			return // gone already
		}
		klog := openKernelLog()
		defer klog.close()
		out, cerr := nvmeCLI("disconnect", "-d", h.Ctrl)
		if cerr != nil {
			err = fmt.Errorf("nvme disconnect -d %s (%s): %v\n%s%s", h.Ctrl, h.nqn, cerr, out, klog.report())
			return
		}
		if werr := waitGone(h.Ctrl, h.nqn); werr != nil {
			err = fmt.Errorf("nvme disconnect -d %s: %v\n%s%s", h.Ctrl, werr, out, klog.report())
		}
	})
	return err
}

// waitGone waits until controller c of subsystem nqn has left sysfs (a
// new controller may take the name; its subsysnqn tells).
func waitGone(c, nqn string) error {
	deadline := time.Now().Add(appearTimeout)
	for {
		n := readAttr(filepath.Join(nvmeClass, c), "subsysnqn")
		if n == "" || n != nqn {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (%s) is still in %s after %v, in state %q", c, nqn, nvmeClass, appearTimeout, readAttr(filepath.Join(nvmeClass, c), "state"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Reset resets the controller as nvme reset does: NVME_IOCTL_RESET on
// /dev/nvmeX, which returns once the reset has run (kernel:
// drivers/nvme/host/core.c nvme_reset_ctrl_sync). nvme_rdma tears down
// the I/O queues, disables the controller (CC.EN 0), disconnects the admin
// queue and connects them all again, which makes a new controller on the
// target (rdma.c nvme_rdma_reset_ctrl_work, nvme_rdma_shutdown_ctrl,
// nvme_rdma_setup_ctrl). Reset then waits, bounded, for the state to be
// live; the error has nvme's output and the kernel's messages.
func (h *KernelHost) Reset() error {
	klog := openKernelLog()
	defer klog.close()
	out, err := nvmeCLI("reset", "/dev/"+h.Ctrl)
	if err != nil {
		return fmt.Errorf("nvmetest: nvme reset /dev/%s: %v\n%s%s", h.Ctrl, err, out, klog.report())
	}
	deadline := time.Now().Add(appearTimeout)
	for {
		st := h.State()
		if st == "live" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nvmetest: %v after nvme reset /dev/%s the controller is %q, not live%s", appearTimeout, h.Ctrl, st, klog.report())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// State returns the controller's state (live, resetting, connecting,
// deleting ...; kernel: core.c nvme_sysfs_show_state), "" once it is gone.
func (h *KernelHost) State() string {
	if readAttr(filepath.Join(nvmeClass, h.Ctrl), "subsysnqn") != h.nqn {
		return ""
	}
	return readAttr(filepath.Join(nvmeClass, h.Ctrl), "state")
}

// Discover runs nvme discover -t rdma against addr, whose discovery
// controller lists the subsystems the port serves, and returns its output.
// The error has nvme's output and the kernel's messages.
func Discover(t testing.TB, addr netip.AddrPort) (string, error) {
	t.Helper()
	RequireNVMeoF(t)
	klog := openKernelLog()
	defer klog.close()
	args := append([]string{"discover", "-t", "rdma", "-a", addr.Addr().String(), "-s", strconv.Itoa(int(addr.Port()))}, hostNQNArgs()...)
	out, err := nvmeCLI(args...)
	if err != nil {
		return out, fmt.Errorf("nvmetest: nvme %s: %v\n%s%s", strings.Join(args, " "), err, out, klog.report())
	}
	return out, nil
}

// nvmeCLI runs nvme-cli's nvme with args, bounded by cliTimeout, and
// returns its combined output.
func nvmeCLI(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvme", args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer within %v: %w", cliTimeout, err)
	}
	return string(out), err
}

// RequireNVMeoF is the rule for tests that use the kernel's NVMe over RDMA
// host or target (as testutil.RequireRDMA): it needs root, an RDMA device,
// the modules nvme_rdma and nvmet_rdma, nvmet's configfs directory and
// nvme-cli. In the lab a missing one fails the test; elsewhere the test is
// skipped with what to do.
func RequireNVMeoF(t testing.TB) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireRDMA(t)
	missing := missingParts()
	if len(missing) == 0 {
		return
	}
	if testutil.InLab() {
		t.Fatalf("the lab lacks %s: the guest loads nvme_rdma and nvmet_rdma with their dependencies (test/lab/modules.go guestModules), mounts configfs (test/lab/guestinit) and runs the host's nvme-cli (test/lab/host.go hostPackages; on arm64 test/lab/userland.go)",
			strings.Join(missing, "; "))
	}
	t.Skipf("needs %s; run the tests in the lab (make lab, or go test -exec \"bin/rxelab -kernel 6.12\" ./internal/nvmetest), or as root on a machine with an RDMA device after modprobe nvme-rdma nvmet-rdma, mount -t configfs none /sys/kernel/config and apt-get install nvme-cli",
		strings.Join(missing, "; "))
}

// Check is RequireNVMeoF for a program (Start, ConnectHost): an error that
// names what is missing, root and an RDMA device included.
func Check() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	if !testutil.HaveRDMA() {
		missing = append(missing, "an RDMA device")
	}
	missing = append(missing, missingParts()...)
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("nvmetest: the kernel's NVMe over RDMA host and target need %s (in the lab, test/rxelab, all are there)", strings.Join(missing, "; "))
}

// missingParts lists the modules, nvmet's configfs and nvme-cli where they
// are missing.
func missingParts() []string {
	var missing []string
	for _, m := range []struct{ mod, what string }{
		{"nvme_rdma", "the kernel's NVMe over RDMA host (module nvme_rdma)"},
		{"nvmet_rdma", "the kernel's NVMe over RDMA target (module nvmet_rdma)"},
	} {
		if _, err := os.Stat(filepath.Join("/sys/module", m.mod)); err != nil {
			missing = append(missing, m.what)
		}
	}
	if _, err := os.Stat(nvmetDir); err != nil {
		missing = append(missing, nvmetDir+" (nvmet's configfs: configfs mounted at /sys/kernel/config and nvmet loaded)")
	}
	if _, err := exec.LookPath("nvme"); err != nil {
		missing = append(missing, "nvme-cli's nvme command in PATH")
	}
	return missing
}
