package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Exit statuses Run reports for failures of the lab itself (the command's own
// status is passed through unchanged).
const (
	ExitTimeout    = 124 // the command did not finish within Config.Timeout
	ExitLabFailure = 125 // the lab could not run the command
)

// Defaults for Config.
const (
	DefaultKernel      = "6.1"
	DefaultTimeout     = 10 * time.Minute
	DefaultBootTimeout = 3 * time.Minute
)

// Config describes one run.
type Config struct {
	Kernel      string        // kernel series: "6.1" or "6.12"
	Timeout     time.Duration // limit for the command, from its start
	BootTimeout time.Duration // limit from starting QEMU to starting the command
	Verbose     bool          // copy the kernel console and progress to Log

	Args []string // the command; Args[0] is looked up in the guest's PATH
	Dir  string   // working directory in the guest; default: the current one
	Env  []string // environment; default: os.Environ()

	Stdout io.Writer // the command's stdout; default os.Stdout
	Stderr io.Writer // the command's stderr; default os.Stderr
	Log    io.Writer // the lab's own messages; default os.Stderr

	// CacheDir holds kernels, /init and initramfs images; default
	// $GOVERBS_LAB_CACHE, else $HOME/.cache/goverbs-lab.
	CacheDir string

	// Signals received here are forwarded to the command in the guest; a
	// second one, or the command not exiting within 10s, stops the VM.
	Signals <-chan os.Signal
}

// Error is a failure of the lab (not of the command). Code is the exit status
// to report; KernelLog holds the last lines of the kernel console, if useful.
type Error struct {
	Code      int
	Msg       string
	KernelLog string
}

func (e *Error) Error() string { return e.Msg }

func labErr(code int, console *ring, format string, args ...any) *Error {
	e := &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
	if console != nil {
		e.KernelLog = tail(console.bytes(), 40)
	}
	return e
}

// DefaultCacheDir returns $GOVERBS_LAB_CACHE, else $HOME/.cache/goverbs-lab.
func DefaultCacheDir() string {
	if d := os.Getenv("GOVERBS_LAB_CACHE"); d != "" {
		return d
	}
	if h := os.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "goverbs-lab")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "goverbs-lab")
	}
	return filepath.Join(os.TempDir(), "goverbs-lab-cache")
}

// Run boots the lab VM and runs cfg.Args in it. It returns the command's exit
// status (128+N if a signal N killed it). A non-nil error is an *Error: the
// lab failed, and its Code is the status to report.
func Run(ctx context.Context, cfg Config) (int, error) {
	if cfg.Kernel == "" {
		cfg.Kernel = DefaultKernel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BootTimeout <= 0 {
		cfg.BootTimeout = DefaultBootTimeout
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCacheDir()
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if cfg.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return ExitLabFailure, labErr(ExitLabFailure, nil, "current directory: %v", err)
		}
		cfg.Dir = wd
	}
	if len(cfg.Args) == 0 {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "no command to run")
	}
	if os.Getenv("GOVERBS_LAB") == "1" {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "already inside the lab (GOVERBS_LAB=1); the lab cannot start a VM inside its own VM")
	}
	if _, ok := Series[cfg.Kernel]; !ok {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "unknown kernel series %q; use -kernel 6.1 or -kernel 6.12", cfg.Kernel)
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "cache directory: %v (set GOVERBS_LAB_CACHE to a writable directory)", err)
	}
	accel, err := accelArgs(os.Getenv("GOVERBS_LAB_ACCEL"))
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	e := &env{cache: cfg.CacheDir, log: cfg.Log, verbose: cfg.Verbose, accel: accel}
	if err := e.ensurePackages(); err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	k, err := e.prepareKernel(cfg.Kernel)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	initBin, err := e.guestInit()
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	initrd, err := e.initramfs(k, initBin)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "writing the initramfs: %v", err)
	}
	e.touchAndPrune(k.dir, filepath.Dir(initBin), initrd)
	return e.boot(ctx, cfg, k, initrd)
}

// qemuEscape doubles commas, QEMU's escape inside option values.
func qemuEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// tempShares lists the host directories the guest gets read-write: /tmp
// (go test builds its binaries there) and $TMPDIR if it lies elsewhere.
func tempShares() []share {
	var dirs []string
	if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
		dirs = append(dirs, "/tmp")
	}
	if t, err := filepath.EvalSymlinks(os.TempDir()); err == nil && t != "/" && t != "/tmp" && !strings.HasPrefix(t, "/tmp/") {
		dirs = append(dirs, t)
	}
	var s []share
	for i, d := range dirs {
		s = append(s, share{Tag: fmt.Sprintf("hosttmp%d", i), Path: d})
	}
	return s
}

// accelArgs returns QEMU's accelerator and CPU options for
// GOVERBS_LAB_ACCEL. TCG is the default: KVM guests were seen to hang during
// boot on some hosts, and TCG needs no /dev/kvm. GOVERBS_LAB_ACCEL=kvm opts
// in to KVM, which boots and runs the guest much faster where it works.
func accelArgs(v string) ([]string, error) {
	switch v {
	case "", "tcg":
		return []string{"-accel", "tcg,thread=multi", "-cpu", "max"}, nil
	case "kvm":
		f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("GOVERBS_LAB_ACCEL=kvm, but /dev/kvm cannot be used: %v; unset GOVERBS_LAB_ACCEL to run under TCG", err)
		}
		f.Close()
		return []string{"-accel", "kvm", "-cpu", "host"}, nil
	}
	return nil, fmt.Errorf("GOVERBS_LAB_ACCEL=%q: use tcg (the default) or kvm", v)
}

func (e *env) boot(ctx context.Context, cfg Config, k *kernel, initrd string) (int, error) {
	runDir, err := os.MkdirTemp("", "rxelab-")
	if err == nil && len(runDir) > 90 {
		// Unix socket paths are limited to 108 bytes.
		os.RemoveAll(runDir)
		runDir, err = os.MkdirTemp("/tmp", "rxelab-")
	}
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "run directory: %v", err)
	}
	defer os.RemoveAll(runDir)
	conPath, ctlPath := filepath.Join(runDir, "con"), filepath.Join(runDir, "ctl")
	conL, err := net.Listen("unix", conPath)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "console socket: %v", err)
	}
	defer conL.Close()
	ctlL, err := net.Listen("unix", ctlPath)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "control socket: %v", err)
	}
	defer ctlL.Close()

	shares := tempShares()
	args := append([]string{
		"-nodefaults", "-no-user-config", "-display", "none",
	}, e.accel...)
	args = append(args,
		"-m", "2048", "-smp", "2",
		"-no-reboot",
		"-kernel", k.bootImage(), "-initrd", initrd,
		"-append", strings.TrimSpace("console=ttyS0 quiet panic=-1 "+os.Getenv("GOVERBS_LAB_APPEND")),
		// Kernel console on the first serial port, captured apart from the
		// command's output, which travels over a virtio-serial port.
		"-chardev", "socket,id=con,path="+qemuEscape(conPath), "-serial", "chardev:con",
		"-device", "virtio-serial-pci,id=vser",
		"-chardev", "socket,id=ctl,path="+qemuEscape(ctlPath),
		"-device", "virtserialport,bus=vser.0,chardev=ctl,name=lab.ctl",
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
	)
	for _, s := range shares {
		args = append(args, "-virtfs", fmt.Sprintf("local,path=%s,mount_tag=%s,security_model=none,multidevs=remap", qemuEscape(s.Path), s.Tag))
	}

	qemuOut := &ring{max: 16 << 10}
	qemu := exec.Command("qemu-system-x86_64", args...)
	// Stdin stays nil: os/exec then gives QEMU /dev/null (CI has no stdin).
	qemu.Stdout, qemu.Stderr = qemuOut, qemuOut
	qemu.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if cfg.Verbose {
		e.logf("qemu-system-x86_64 %s", strings.Join(args, " "))
	}
	e.logf("booting Linux %s (%s) under QEMU (%s) ...", k.release, k.pkg, strings.SplitN(e.accel[1], ",", 2)[0])
	bootStart := time.Now()
	if err := qemu.Start(); err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "starting QEMU: %v", err)
	}
	qemuDone := make(chan struct{})
	go func() {
		_ = qemu.Wait()
		close(qemuDone)
		conL.Close() // unblock Accept if QEMU never connected
		ctlL.Close()
	}()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			_ = qemu.Process.Kill()
			<-qemuDone
		})
	}
	defer stop()

	console := &ring{max: 256 << 10}
	go func() {
		c, err := conL.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var w io.Writer = console
		if cfg.Verbose {
			w = io.MultiWriter(console, cfg.Log)
		}
		_, _ = io.Copy(w, c)
	}()

	frames := make(chan frame, 64)
	returned := make(chan struct{})
	defer close(returned)
	var sender *frameSender
	senderReady := make(chan *frameSender, 1)
	go func() {
		defer close(frames)
		c, err := ctlL.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		s := &frameSender{w: c}
		req := request{
			Args: cfg.Args, Dir: cfg.Dir, Env: cfg.Env,
			Root: "hostroot", Shares: shares, Verbose: cfg.Verbose,
		}
		if err := s.sendJSON(frameRequest, req); err != nil {
			return
		}
		senderReady <- s
		for {
			f, err := readFrame(c)
			if err != nil {
				return
			}
			select {
			case frames <- f:
			case <-returned:
				return
			}
		}
	}()

	bootTimer := time.NewTimer(cfg.BootTimeout)
	defer bootTimer.Stop()
	var cmdTimer <-chan time.Time
	var graceTimer <-chan time.Time
	started := false
	signals := 0

	for {
		select {
		case s := <-senderReady:
			sender = s
		case f, ok := <-frames:
			if sender == nil {
				// Sent before the first frame was read, so it is there.
				select {
				case sender = <-senderReady:
				default:
				}
			}
			if !ok {
				// The control connection ended without an exit status:
				// QEMU died or the guest powered off or panicked.
				select {
				case <-qemuDone:
				case <-time.After(5 * time.Second):
				}
				stop()
				what := "before starting the command"
				if started {
					what = "before the command finished"
				}
				msg := fmt.Sprintf("the VM (Linux %s) stopped %s", k.release, what)
				if q := strings.TrimSpace(string(qemuOut.bytes())); q != "" {
					msg += "; QEMU said: " + q
				}
				return ExitLabFailure, labErr(ExitLabFailure, console, "%s", msg)
			}
			switch f.typ {
			case frameStdout:
				_, _ = cfg.Stdout.Write(f.body)
			case frameStderr:
				_, _ = cfg.Stderr.Write(f.body)
			case frameBegin:
				var b begin
				_ = json.Unmarshal(f.body, &b)
				started = true
				bootTimer.Stop()
				cmdTimer = time.After(cfg.Timeout)
				if cfg.Verbose {
					e.logf("guest Linux %s ready after %.1fs; running %s", b.Kernel, time.Since(bootStart).Seconds(), strings.Join(cfg.Args, " "))
				}
			case frameFatal:
				if sender != nil {
					_ = sender.send(frameAck, nil)
				}
				stop()
				return ExitLabFailure, labErr(ExitLabFailure, console, "guest setup failed on Linux %s: %s", k.release, f.body)
			case frameExit:
				var st exitStatus
				if err := json.Unmarshal(f.body, &st); err != nil {
					stop()
					return ExitLabFailure, labErr(ExitLabFailure, console, "bad exit status from the guest: %v", err)
				}
				if sender != nil {
					_ = sender.send(frameAck, nil)
				}
				select {
				case <-qemuDone:
				case <-time.After(5 * time.Second):
				}
				stop()
				if st.Error != "" {
					e.logf("%s", st.Error)
				}
				if st.Signal != "" && signals == 0 {
					e.logf("command killed by signal: %s", st.Signal)
				}
				if cfg.Verbose {
					e.logf("exit status %d after %.1fs", st.Code, time.Since(bootStart).Seconds())
				}
				return st.Code, nil
			}
		case <-bootTimer.C:
			stop()
			return ExitLabFailure, labErr(ExitLabFailure, console, "the VM (Linux %s) did not start the command within %v; the VM was stopped", k.release, cfg.BootTimeout)
		case <-cmdTimer:
			stop()
			return ExitTimeout, labErr(ExitTimeout, console, "command did not finish within %v; the VM was stopped", cfg.Timeout)
		case <-graceTimer:
			stop()
			return ExitLabFailure, labErr(ExitLabFailure, nil, "command did not exit within 10s of the signal; the VM was stopped")
		case sig := <-cfg.Signals:
			signals++
			n, isSys := sig.(syscall.Signal)
			if signals > 1 || !started || sender == nil || !isSys {
				stop()
				return ExitLabFailure, labErr(ExitLabFailure, nil, "interrupted by %v; the VM was stopped", sig)
			}
			_ = sender.send(frameSignal, []byte{byte(n)})
			graceTimer = time.After(10 * time.Second)
		case <-ctx.Done():
			stop()
			return ExitLabFailure, labErr(ExitLabFailure, nil, "%v; the VM was stopped", ctx.Err())
		}
	}
}

// ring keeps the last max bytes written to it.
type ring struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if len(r.buf) > r.max {
		r.buf = append(r.buf[:0:0], r.buf[len(r.buf)-r.max:]...)
	}
	return len(p), nil
}

func (r *ring) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte(nil), r.buf...)
}
