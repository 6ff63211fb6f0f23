//go:build linux

package lab

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// hostPackages are the Debian packages the lab needs on the host: QEMU, the
// tools that prepare the kernel, and the rdma-core, NVMe and I/O tools the
// tests run inside the guest (the guest runs the host's binaries through the
// 9p root).
var hostPackages = []string{
	"qemu-system-x86", // qemu-system-x86_64 with 9p (virtfs) support
	"xz-utils",        // 6.12 modules are .ko.xz; the 6.1 kernel image is xz
	"zstd",            // the 6.12 kernel image is zstd
	"iproute2",        // ip and rdma, used by the guest's /init
	"rdma-core",
	"ibverbs-utils",
	"ibverbs-providers", // librxe-rdmav*.so, the rxe user-space provider
	"rdmacm-utils",
	"perftest",
	"nvme-cli", // nvme connect/discover/disconnect for internal/nvmetest; its postinst writes /etc/nvme/hostnqn
	"fio",
	"strace", // system calls per I/O in test/perfbench nvmeof
}

// env is what a Run needs from the host; one per process.
type env struct {
	cache   string
	log     io.Writer
	verbose bool
	accel   []string // QEMU's -accel and -cpu options (accelArgs)
	arch    *guestArch
	usr     string // a foreign guest's /usr (userland), else ""

	updateOnce sync.Once
	updateErr  error

	aptMu      sync.Mutex
	aptUpdates map[string]*onceErr // apt-get update of the lab's apt states (apt.go), by directory
}

// lockFile takes an exclusive flock on cache/locks/name; the returned func
// releases it. Locks die with the process, so a killed run cannot wedge the
// cache.
func (e *env) lockFile(name string) (func(), error) {
	dir := filepath.Join(e.cache, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "lab: "+format+"\n", args...)
}

// run runs a host tool; its output goes to the log when verbose and is
// returned in the error otherwise.
func (e *env) run(dir string, name string, args ...string) error {
	_, err := e.runOutput(dir, name, args...)
	return err
}

// runOutput is run that also returns the tool's combined output.
func (e *env) runOutput(dir string, name string, args ...string) ([]byte, error) {
	var buf bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if e.verbose {
		cmd.Stdout = io.MultiWriter(e.log, &buf)
	} else {
		cmd.Stdout = &buf
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		return buf.Bytes(), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(buf.Bytes(), 30))
	}
	return buf.Bytes(), nil
}

// aptLockWait makes apt wait for the dpkg lock instead of failing when
// another apt runs at the same time. apt-get update does not honour it for
// /var/lib/apt/lists/lock, which apt-daily holds for minutes after boot, so
// apt runs again while its output reports a lock (aptLockRetry).
var aptLockWait = []string{"-o", "DPkg::Lock::Timeout=600"}

// aptLockRetry bounds the retries of an apt-get that failed on a lock;
// aptLockPause is the first pause, doubled up to 30s.
var (
	aptLockRetry = 5 * time.Minute
	aptLockPause = 2 * time.Second
)

// isAptLockError reports whether apt-get's output says it failed because
// another apt or dpkg holds one of its locks.
func isAptLockError(out []byte) bool {
	s := string(out)
	for _, m := range []string{"Could not get lock", "Unable to lock", "Unable to acquire the dpkg frontend lock", "is another process using it"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// apt runs apt-get with args, again with growing pauses while it fails on a
// lock, for at most aptLockRetry.
func (e *env) apt(args ...string) error {
	args = append(append([]string{}, aptLockWait...), args...)
	deadline := time.Now().Add(aptLockRetry)
	pause := aptLockPause
	for {
		out, err := e.runOutput("", "apt-get", args...)
		if err == nil || !isAptLockError(out) {
			return err
		}
		if time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("%w\nanother apt or dpkg (often apt-daily after boot) held its lock for %v; run the lab again when it has finished", err, aptLockRetry)
		}
		e.logf("apt-get %s: another apt or dpkg holds its lock; trying again in %v ...", args[len(args)-1], pause)
		time.Sleep(pause)
		pause = min(2*pause, 30*time.Second)
	}
}

func (e *env) aptUpdate() error {
	e.updateOnce.Do(func() {
		e.logf("running apt-get update ...")
		e.updateErr = e.apt("update")
	})
	return e.updateErr
}

// ensurePackages installs the missing hostPackages, the QEMU of the
// guest's architecture and extra, with apt-get.
func (e *env) ensurePackages(arch *guestArch, extra ...string) error {
	pkgs := append([]string{}, hostPackages...)
	if arch.pkg != hostPackages[0] {
		pkgs = append(pkgs, arch.pkg)
	}
	pkgs = append(pkgs, extra...)
	missing := missingPackages(pkgs)
	if len(missing) == 0 {
		return nil
	}
	unlock, err := e.lockFile("apt")
	if err != nil {
		return err
	}
	defer unlock()
	if missing = missingPackages(pkgs); len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("the lab needs these Debian packages: %s; install them with: sudo apt-get install -y %s",
			strings.Join(missing, " "), strings.Join(missing, " "))
	}
	if err := e.aptUpdate(); err != nil {
		return err
	}
	e.logf("installing %s ...", strings.Join(missing, " "))
	if err := e.apt(append([]string{"install", "-y", "--no-install-recommends"}, missing...)...); err != nil {
		return fmt.Errorf("installing the lab's host packages: %w", err)
	}
	if missing = missingPackages(pkgs); len(missing) != 0 {
		return fmt.Errorf("apt-get install did not install %s", strings.Join(missing, " "))
	}
	return nil
}

// missingPackages asks dpkg which of pkgs are not installed.
func missingPackages(pkgs []string) []string {
	args := append([]string{"-W", "-f", "${Package} ${db:Status-Status}\n"}, pkgs...)
	out, _ := exec.Command("dpkg-query", args...).Output() // exits 1 when some are unknown
	installed := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "installed" {
			installed[strings.SplitN(f[0], ":", 2)[0]] = true
		}
	}
	var missing []string
	for _, p := range pkgs {
		if !installed[p] {
			missing = append(missing, p)
		}
	}
	return missing
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
