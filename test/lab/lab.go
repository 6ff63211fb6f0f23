//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/goverbs/rdma/test/lab/internal/proto"
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
	Kernel      string        // kernel series: major.minor ("6.1", "7.3") or NewestKernel
	Arch        string        // guest architecture: "amd64" (the default) or "arm64"
	Timeout     time.Duration // limit for the command, from its start
	BootTimeout time.Duration // limit from starting QEMU to starting the command
	Verbose     bool          // copy the kernel console and progress to Log

	// Guests is 1 (the default) or 2. With 2 a peer VM boots next to the
	// VM that runs the command, joined to it by a network of their own;
	// the command can run commands in the peer and power it off (package
	// test/lab/peer).
	Guests int

	// NoSiw boots without siw. By default amd64 guests also get siw
	// (soft-iWARP, built by the lab: siw.go) with siw1 and siw2 on a veth
	// pair of their own; arm64 guests never have siw.
	NoSiw bool

	// Prepare only downloads and prepares the kernel (and siw.ko) in the
	// cache, boots nothing, and prints what it prepared to Stdout:
	//
	//	kernel: PACKAGE VERSION from DEBIAN-RELEASE (ARCH, uname -r RELEASE)
	//	siw: built | none: WHY
	Prepare bool

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
	// notStarted: the guest stopped or hung before the command started,
	// so Run may boot once more (see Run).
	notStarted bool
}

func (e *Error) Error() string { return e.Msg }

func labErr(code int, console *ring, format string, args ...any) *Error {
	e := &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
	if console != nil {
		e.KernelLog = tail(console.bytes(), 40)
	}
	return e
}

// notStarted marks a failure that came before the command started.
func notStarted(e *Error) *Error {
	e.notStarted = true
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

// drainWire reads and drops what arrives on the dead peer's end of the
// guests' network. QEMU made the file description non-blocking; with the
// peer gone the host is its only user, so it may be made blocking again. The
// read ends with EOF once the primary's QEMU and the host's copy of its end
// are closed.
func drainWire(f *os.File) {
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, false); err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if n <= 0 && err != syscall.EINTR {
			return
		}
	}
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
	if cfg.Guests == 0 {
		cfg.Guests = 1
	}
	if cfg.Guests != 1 && cfg.Guests != 2 {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%d guests: the lab runs 1 or 2", cfg.Guests)
	}
	if len(cfg.Args) == 0 && !cfg.Prepare {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "no command to run")
	}
	if os.Getenv("GOVERBS_LAB") == "1" {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "already inside the lab (GOVERBS_LAB=1); the lab cannot start a VM inside its own VM")
	}
	if cfg.Kernel != NewestKernel && !validSeries.MatchString(cfg.Kernel) {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "kernel series %q: give major.minor (6.1, 6.12, 7.3 ...) or %s", cfg.Kernel, NewestKernel)
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "cache directory: %v (set GOVERBS_LAB_CACHE to a writable directory)", err)
	}
	arch, err := archFor(cfg.Arch)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	accel, err := accelArgs(os.Getenv("GOVERBS_LAB_ACCEL"), arch)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	e := &env{cache: cfg.CacheDir, log: cfg.Log, verbose: cfg.Verbose, accel: accel, arch: arch}
	withSiw := !cfg.NoSiw && arch.name == ArchAMD64 && !arch.foreign()
	var extra []string
	if withSiw {
		extra = siwPackages
	}
	if err := e.ensurePackages(arch, extra...); err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	k, err := e.prepareKernel(cfg.Kernel, arch)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	siw, siwNote := "", "none: not asked for (-no-siw)"
	if arch.name != ArchAMD64 || arch.foreign() {
		siwNote = "none: the lab builds siw for amd64 guests on an amd64 host only"
	}
	if withSiw {
		var none *SiwUnavailableError
		if siw, err = e.siwKO(k); errors.As(err, &none) {
			if !cfg.Prepare {
				e.logf("%v; booting without siw", none)
			}
			siwNote = "none: " + none.Why
		} else if err != nil {
			return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
		} else {
			siwNote = "built"
		}
	}
	if cfg.Prepare {
		fmt.Fprintf(cfg.Stdout, "kernel: %s %s from %s (%s, uname -r %s)\nsiw: %s\n", k.pkg, k.version, k.debian, arch.name, k.release, siwNote)
		return 0, nil
	}
	initBin, err := e.guestInit(arch.name)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
	}
	initrd, err := e.initramfs(k, initBin, arch.name, siw)
	if err != nil {
		return ExitLabFailure, labErr(ExitLabFailure, nil, "writing the initramfs: %v", err)
	}
	used := []string{k.dir, filepath.Dir(initBin), initrd}
	if arch.foreign() {
		if e.usr, err = e.userland(arch); err != nil {
			return ExitLabFailure, labErr(ExitLabFailure, nil, "%v", err)
		}
		used = append(used, filepath.Dir(filepath.Dir(e.usr)))
	}
	e.touchAndPrune(used...)
	code, err := e.boot(ctx, cfg, k, initrd, siw != "")
	// A guest that hangs or panics while booting under TCG (seen once in a
	// few dozen boots, e.g. an int3 oops in sched_clock_cpu on 6.12) never
	// ran the command, so booting again cannot run anything twice. Once.
	if le, ok := err.(*Error); ok && le.notStarted && ctx.Err() == nil {
		e.logf("%s; booting once more", le.Msg)
		if le.KernelLog != "" {
			e.logf("last lines of the kernel console:\n%s", le.KernelLog)
		}
		code, err = e.boot(ctx, cfg, k, initrd, siw != "")
	}
	return code, err
}

// qemuEscape doubles commas, QEMU's escape inside option values.
func qemuEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// tempShares lists the host directories the guest gets read-write: /tmp
// (go test builds its binaries there) and $TMPDIR if it lies elsewhere.
func tempShares() []proto.Share {
	var dirs []string
	if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
		dirs = append(dirs, "/tmp")
	}
	if t, err := filepath.EvalSymlinks(os.TempDir()); err == nil && t != "/" && t != "/tmp" && !strings.HasPrefix(t, "/tmp/") {
		dirs = append(dirs, t)
	}
	var s []proto.Share
	for i, d := range dirs {
		s = append(s, proto.Share{Tag: fmt.Sprintf("hosttmp%d", i), Path: d})
	}
	return s
}

// accelArgs returns QEMU's accelerator and CPU options for
// GOVERBS_LAB_ACCEL. TCG is the default: KVM guests were seen to hang during
// boot on some hosts, and TCG needs no /dev/kvm. GOVERBS_LAB_ACCEL=kvm opts
// in to KVM, which boots and runs the guest much faster where it works (and
// only for guests of the host's architecture).
func accelArgs(v string, arch *guestArch) ([]string, error) {
	switch v {
	case "", "tcg":
		return append([]string{"-accel", "tcg,thread=multi"}, arch.tcg...), nil
	case "kvm":
		if arch.name != runtime.GOARCH {
			return nil, fmt.Errorf("GOVERBS_LAB_ACCEL=kvm runs only %s guests here, not %s; unset GOVERBS_LAB_ACCEL to run under TCG", runtime.GOARCH, arch.name)
		}
		f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("GOVERBS_LAB_ACCEL=kvm, but /dev/kvm cannot be used: %v; unset GOVERBS_LAB_ACCEL to run under TCG", err)
		}
		f.Close()
		return []string{"-accel", "kvm", "-cpu", "host"}, nil
	}
	return nil, fmt.Errorf("GOVERBS_LAB_ACCEL=%q: use tcg (the default) or kvm", v)
}

// The two-guest network (Config.Guests == 2): a virtio-net device (eth0) in
// each guest, joined by QEMU's socket netdev over a stream socketpair that
// the host makes and hands to both QEMUs (-netdev socket,fd=N; QEMU frames
// each Ethernet frame with a length, as it does over TCP with
// listen=/connect=). No host network or port is involved. rxe on eth0 in
// each guest then gives real two-host RoCEv2 (see docs/testing.md §3).
var twoGuestNet = [2]proto.Net{
	{Role: proto.RolePrimary, Netdev: "eth0", Dev: "rxe_a", Addr: "10.78.0.1", Prefix: 24, PeerDev: "rxe_b", PeerAddr: "10.78.0.2"},
	{Role: proto.RolePeer, Netdev: "eth0", Dev: "rxe_b", Addr: "10.78.0.2", Prefix: 24, PeerDev: "rxe_a", PeerAddr: "10.78.0.1"},
}

// twoGuestMAC are the guests' MAC addresses (52:54:00 is QEMU's prefix).
var twoGuestMAC = [2]string{"52:54:00:4e:00:01", "52:54:00:4e:00:02"}

func (e *env) boot(ctx context.Context, cfg Config, k *kernel, initrd string, siw bool) (int, error) {
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
	two := cfg.Guests == 2

	shares := tempShares()
	if e.usr != "" {
		shares = append(shares, proto.Share{Tag: "hostusr", Path: e.usr, ReadOnly: true, At: "/usr"})
	}
	reqA := proto.Command{
		Args: cfg.Args, Dir: cfg.Dir, Env: cfg.Env,
		Root: "hostroot", Shares: shares, Verbose: cfg.Verbose, Siw: siw,
	}
	reqB := reqA
	reqB.Args = nil
	optsA := vmOpts{name: "the VM", runDir: filepath.Join(runDir, "a")}
	optsB := vmOpts{name: "the peer VM", runDir: filepath.Join(runDir, "b")}
	if cfg.Verbose {
		optsA.console = cfg.Log
		optsB.console = &prefixWriter{w: cfg.Log, prefix: "peer: "}
	}
	// peerWire is the host's copy of the peer's end of the guests' network.
	// Once the peer is powered off, the host reads and drops what the
	// primary sends there, as a wire to a dead host would: left unread, the
	// socket fills, QEMU stops taking packets from the primary's NIC, and
	// the primary's stack (rxe's retransmissions with it) stalls instead of
	// timing out.
	var peerWire *os.File
	if two {
		optsA.name = "the primary VM"
		reqA.Net, reqB.Net = &twoGuestNet[0], &twoGuestNet[1]
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return ExitLabFailure, labErr(ExitLabFailure, nil, "socketpair for the guests' network: %v", err)
		}
		for i, o := range []*vmOpts{&optsA, &optsB} {
			f := os.NewFile(uintptr(fds[i]), "guest-net")
			defer f.Close() // QEMU has its own copy once started
			o.extraFiles = []*os.File{f}
			if i == 1 {
				peerWire = f
			}
			o.extraArgs = []string{
				"-netdev", "socket,id=n0,fd=3", // ExtraFiles[0] is fd 3
				"-device", "virtio-net-pci,netdev=n0,mac=" + twoGuestMAC[i],
			}
		}
	}

	e.logf("booting Linux %s (%s) under QEMU (%s) ...", k.release, k.pkg, strings.SplitN(e.accel[1], ",", 2)[0])
	bootStart := time.Now()
	var a, b *vm
	var bCtl chan *proto.Writer
	var bFrames chan proto.Frame
	for _, o := range []*vmOpts{&optsA, &optsB} {
		if o == &optsB && !two {
			break
		}
		if err := os.Mkdir(o.runDir, 0o700); err != nil {
			return ExitLabFailure, labErr(ExitLabFailure, nil, "run directory: %v", err)
		}
		v, err := e.startVM(k, initrd, shares, *o)
		if err != nil {
			return ExitLabFailure, labErr(ExitLabFailure, nil, "%s: %v", o.name, err)
		}
		defer v.close()
		if o == &optsA {
			a = v
		} else {
			b, bCtl, bFrames = v, v.ctl, v.frames
		}
	}

	var aw, bw *proto.Writer
	aSent, bReady, bGone := false, false, false
	open := map[uint32]bool{} // peer channels whose Exit has not come back
	// The primary's command starts once the peer is ready, so that it can
	// reach the peer at once.
	sendA := func() {
		if aw != nil && !aSent && (!two || bReady) {
			aSent = true
			_ = aw.SendJSON(proto.Request, 0, reqA)
		}
	}
	// peerGone stops the peer VM and ends the requests it had not finished.
	peerGone := func(why string) {
		b.close()
		go drainWire(peerWire)
		bGone, bCtl, bFrames = true, nil, nil
		for ch := range open {
			_ = aw.SendJSON(proto.Exit, ch, proto.Status{Code: ExitLabFailure, Error: why, Gone: true})
		}
		clear(open)
	}

	bootTimer := time.NewTimer(cfg.BootTimeout)
	defer bootTimer.Stop()
	var cmdTimer <-chan time.Time
	var graceTimer <-chan time.Time
	started := false
	signals := 0

	for {
		select {
		case aw = <-a.ctl:
			sendA()
		case bw = <-bCtl:
			_ = bw.SendJSON(proto.Request, 0, reqB)
		case f, ok := <-bFrames:
			switch {
			case !ok && !bReady:
				return ExitLabFailure, notStarted(labErr(ExitLabFailure, b.console, "%s", b.stoppedMsg(k.release, "before it was ready")))
			case !ok:
				e.logf("%s", b.stoppedMsg(k.release, "on its own"))
				peerGone("the peer VM stopped on its own")
			case f.Chan == 0 && f.Type == proto.Begin:
				bReady = true
				if cfg.Verbose {
					e.logf("peer guest ready after %.1fs", time.Since(bootStart).Seconds())
				}
				sendA()
			case f.Chan == 0 && f.Type == proto.Fatal:
				_ = bw.Send(proto.Frame{Type: proto.Ack})
				return ExitLabFailure, labErr(ExitLabFailure, b.console, "peer guest setup failed on Linux %s: %s", k.release, f.Body)
			case f.Chan != 0:
				if f.Type == proto.Exit {
					delete(open, f.Chan)
				}
				_ = aw.Send(f)
			}
		case f, ok := <-a.frames:
			if !ok {
				// The control connection ended without an exit status:
				// QEMU died or the guest powered off or panicked.
				select {
				case <-a.done:
				case <-time.After(5 * time.Second):
				}
				a.stop()
				if !started {
					return ExitLabFailure, notStarted(labErr(ExitLabFailure, a.console, "%s", a.stoppedMsg(k.release, "before starting the command")))
				}
				return ExitLabFailure, labErr(ExitLabFailure, a.console, "%s", a.stoppedMsg(k.release, "before the command finished"))
			}
			if f.Chan != 0 {
				// A request from the primary guest for its peer.
				switch {
				case !two:
					_ = aw.SendJSON(proto.Exit, f.Chan, proto.Status{Code: ExitLabFailure, Error: "no peer guest: run the lab with two guests (rxelab -guests 2)"})
				case f.Type == proto.PowerOff:
					if !bGone {
						peerGone("the peer VM was powered off")
						if cfg.Verbose {
							e.logf("peer VM powered off after %.1fs", time.Since(bootStart).Seconds())
						}
					}
					_ = aw.SendJSON(proto.Exit, f.Chan, proto.Status{})
				case bGone && f.Type == proto.Request:
					_ = aw.SendJSON(proto.Exit, f.Chan, proto.Status{Code: ExitLabFailure, Error: "the peer VM is off", Gone: true})
				case f.Type == proto.Request:
					open[f.Chan] = true
					_ = bw.Send(f)
				case f.Type == proto.Signal && open[f.Chan]:
					_ = bw.Send(f)
				}
				continue
			}
			switch f.Type {
			case proto.Stdout:
				_, _ = cfg.Stdout.Write(f.Body)
			case proto.Stderr:
				_, _ = cfg.Stderr.Write(f.Body)
			case proto.Begin:
				var st proto.Started
				_ = json.Unmarshal(f.Body, &st)
				started = true
				bootTimer.Stop()
				cmdTimer = time.After(cfg.Timeout)
				if cfg.Verbose {
					e.logf("guest Linux %s ready after %.1fs; running %s", st.Kernel, time.Since(bootStart).Seconds(), strings.Join(cfg.Args, " "))
				}
			case proto.Fatal:
				_ = aw.Send(proto.Frame{Type: proto.Ack})
				return ExitLabFailure, labErr(ExitLabFailure, a.console, "guest setup failed on Linux %s: %s", k.release, f.Body)
			case proto.Exit:
				var st proto.Status
				if err := json.Unmarshal(f.Body, &st); err != nil {
					return ExitLabFailure, labErr(ExitLabFailure, a.console, "bad exit status from the guest: %v", err)
				}
				// Both guests power off on Ack; wait a little for that.
				_ = aw.Send(proto.Frame{Type: proto.Ack})
				if bw != nil && !bGone {
					_ = bw.Send(proto.Frame{Type: proto.Ack})
				}
				timeout := time.After(5 * time.Second)
				for _, v := range []*vm{a, b} {
					if v != nil {
						select {
						case <-v.done:
						case <-timeout:
						}
					}
				}
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
			if two {
				return ExitLabFailure, notStarted(labErr(ExitLabFailure, a.console, "the VMs (Linux %s) did not start the command within %v (peer ready: %v); the VMs were stopped", k.release, cfg.BootTimeout, bReady))
			}
			return ExitLabFailure, notStarted(labErr(ExitLabFailure, a.console, "the VM (Linux %s) did not start the command within %v; the VM was stopped", k.release, cfg.BootTimeout))
		case <-cmdTimer:
			return ExitTimeout, labErr(ExitTimeout, a.console, "command did not finish within %v; the VM was stopped", cfg.Timeout)
		case <-graceTimer:
			return ExitLabFailure, labErr(ExitLabFailure, nil, "command did not exit within 10s of the signal; the VM was stopped")
		case sig := <-cfg.Signals:
			signals++
			n, isSys := sig.(syscall.Signal)
			if signals > 1 || !started || aw == nil || !isSys {
				return ExitLabFailure, labErr(ExitLabFailure, nil, "interrupted by %v; the VM was stopped", sig)
			}
			_ = aw.Send(proto.Frame{Type: proto.Signal, Body: []byte{byte(n)}})
			graceTimer = time.After(10 * time.Second)
		case <-ctx.Done():
			return ExitLabFailure, labErr(ExitLabFailure, nil, "%v; the VM was stopped", ctx.Err())
		}
	}
}
