//go:build linux

// The lab package embeds this package and internal/proto (see
// ../initramfs.go) and builds them with CGO_ENABLED=0; they import nothing
// but the standard library.

package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/goverbs/rdma/test/lab/internal/proto"
)

const newRoot = "/newroot"

// sanePath replaces the host's PATH inside the guest.
const sanePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var (
	start = time.Now()
	ctl   *os.File
	host  *proto.Writer // frames to the host on ctl
)

func main() {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "guestinit: this is the lab guest's /init; it runs only as PID 1")
		os.Exit(2)
	}
	err := run()
	if err != nil {
		fmt.Fprintf(os.Stdout, "lab-init: %v\n", err)
		if host != nil {
			_ = host.Send(proto.Frame{Type: proto.Fatal, Body: []byte(err.Error())})
			waitAck(10 * time.Second)
		}
	}
	syscall.Sync()
	_ = syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
	select {}
}

func logf(format string, args ...any) {
	msg := fmt.Sprintf("[%6.2fs] "+format, append([]any{time.Since(start).Seconds()}, args...)...)
	fmt.Fprintln(os.Stdout, "lab-init: "+msg)
}

func run() error {
	for _, m := range []struct{ src, dir, fs string }{
		{"devtmpfs", "/dev", "devtmpfs"},
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
	} {
		if err := mount(m.src, m.dir, m.fs, 0, ""); err != nil {
			return err
		}
	}
	if err := loadModules("/modules"); err != nil {
		return err
	}
	modulesDone := time.Since(start)
	var err error
	ctl, err = openPort("lab.ctl", 20*time.Second)
	if err != nil {
		return err
	}
	host = proto.NewWriter(ctl)
	go readHost()
	var req proto.Command
	// In the two-guest lab the host holds the primary's request until the
	// peer is ready; the host's boot timeout bounds the whole wait.
	select {
	case req = <-requests:
	case <-time.After(10 * time.Minute):
		return errors.New("no request from the host within 10 minutes")
	}
	logf("modules loaded after %.2fs; request received", modulesDone.Seconds())
	if err := mountRoot(req); err != nil {
		return err
	}
	logf("file systems mounted")
	if err := syscall.Chroot(newRoot); err != nil {
		return fmt.Errorf("chroot %s: %w", newRoot, err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	os.Setenv("PATH", sanePath)
	if err := topology(req.Net); err != nil {
		return err
	}
	if req.Siw {
		if err := siwTopology(); err != nil {
			return err
		}
	}
	logf("topology ready")
	release := kernelRelease()
	if req.Net != nil && req.Net.Role == proto.RolePeer {
		return servePeer(req, release)
	}
	if req.Net != nil {
		if err := listenPeerSock(); err != nil {
			return err
		}
	}
	st := execute(0, req, labEnv(req.Net, req.Siw, release), mainSignals, proto.Started{Kernel: release})
	logf("command finished: code %d", st.Code)
	if err := host.SendJSON(proto.Exit, 0, st); err != nil {
		return err
	}
	waitAck(30 * time.Second)
	return nil
}
func mount(src, dir, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil && !errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("mkdir %s: %w", dir, err)
	}
	if err := syscall.Mount(src, dir, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on %s (type %s, %q): %w", src, dir, fstype, data, err)
	}
	return nil
}

// loadModules loads the modules listed in dir/order: one line per module,
// "file.ko dep.ko ...", dependencies listed before their users. A module is
// loaded as soon as its dependencies are, in parallel with the others (the
// guest has two CPUs). EEXIST means the module is already there.
func loadModules(dir string) error {
	order, err := os.ReadFile(filepath.Join(dir, "order"))
	if err != nil {
		return err
	}
	done := map[string]chan struct{}{}
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for _, line := range strings.Split(string(order), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name, deps := f[0], make([]chan struct{}, 0, len(f)-1)
		for _, d := range f[1:] {
			ch, ok := done[d]
			if !ok {
				return fmt.Errorf("modules/order: %s needs %s, which is not listed before it", name, d)
			}
			deps = append(deps, ch)
		}
		ch := make(chan struct{})
		done[name] = ch
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, d := range deps {
				<-d
			}
			if err := loadModule(filepath.Join(dir, name)); err != nil {
				errs <- err
				return // users of this module never start
			}
			close(ch)
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case err := <-errs:
		return err
	case <-finished:
		return nil
	}
}

func loadModule(path string) error {
	img, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	empty := []byte{0}
	// init_module(2): (void *image, unsigned long len, const char *params).
	_, _, errno := syscall.Syscall(syscall.SYS_INIT_MODULE,
		uintptr(unsafe.Pointer(&img[0])), uintptr(len(img)), uintptr(unsafe.Pointer(&empty[0])))
	if errno != 0 && errno != syscall.EEXIST {
		return fmt.Errorf("loading module %s: %w", filepath.Base(path), errno)
	}
	return nil
}

// openPort finds the virtio-serial port with the given name; the kernel
// publishes it in /sys/class/virtio-ports/vportNpM/name.
func openPort(name string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	for {
		ents, _ := os.ReadDir("/sys/class/virtio-ports")
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("/sys/class/virtio-ports", e.Name(), "name"))
			if err != nil || strings.TrimSpace(string(b)) != name {
				continue
			}
			f, err := os.OpenFile(filepath.Join("/dev", e.Name()), os.O_RDWR, 0)
			if err == nil {
				return f, nil
			}
			if time.Now().After(deadline) {
				return nil, err
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("virtio-serial port %q did not appear within %v", name, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mountRoot mounts the host root read-only at newRoot, the read-write shares
// on top, and fresh proc, sys, dev, dev/pts, dev/shm and run file systems.
func mountRoot(req proto.Command) error {
	const opts = "trans=virtio,version=9p2000.L,msize=262144"
	// The root is read-only for the VM's short life: let the guest cache it
	// (cache=loose), which makes running the host's dynamic binaries
	// several times faster than the uncached default.
	if err := mount(req.Root, newRoot, "9p", syscall.MS_RDONLY, opts+",ro,cache=loose"); err != nil {
		return err
	}
	for _, s := range req.Shares {
		var flags uintptr
		o := opts
		if s.ReadOnly {
			flags, o = syscall.MS_RDONLY, opts+",ro,cache=loose"
		}
		at := s.Path
		if s.At != "" {
			at = s.At
		}
		if err := mount(s.Tag, filepath.Join(newRoot, at), "9p", flags, o); err != nil {
			return err
		}
		if at == "/usr" {
			if err := bindMergedUsr(); err != nil {
				return err
			}
		}
	}
	for _, m := range []struct {
		src, dir, fs string
		flags        uintptr
		data         string
	}{
		{"proc", "/proc", "proc", 0, ""},
		{"sysfs", "/sys", "sysfs", 0, ""},
		{"devtmpfs", "/dev", "devtmpfs", 0, ""},
		{"devpts", "/dev/pts", "devpts", 0, "newinstance,ptmxmode=0666"},
		{"tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777"},
		{"tmpfs", "/run", "tmpfs", 0, "mode=755"},
	} {
		if err := mount(m.src, filepath.Join(newRoot, m.dir), m.fs, m.flags, m.data); err != nil {
			return err
		}
	}
	// nvmet is configured through configfs (internal/nvmetest); configfs.ko
	// is loaded with rdma_cm and nvmet, whose depends= name it.
	if err := mount("configfs", filepath.Join(newRoot, "/sys/kernel/config"), "configfs", 0, ""); err != nil {
		return err
	}
	// debugfs, as on a host: from 6.10 nvmet can keep a directory per
	// controller there (drivers/nvme/target/debugfs.c, with
	// CONFIG_NVME_TARGET_DEBUGFS, which Debian's kernels leave out;
	// docs/kernel-behaviour.md §6), and the fault tests check what the
	// kernel they run on has.
	if err := mount("debugfs", filepath.Join(newRoot, "/sys/kernel/debug"), "debugfs", 0, ""); err != nil {
		return err
	}
	// The modules stay reachable after the chroot, for tests that unload
	// one and load it again (the guest's /lib/modules is the host's).
	mods := filepath.Join(newRoot, proto.ModulesDir)
	if err := os.MkdirAll(mods, 0o755); err != nil {
		return err
	}
	return mount("/modules", mods, "", syscall.MS_BIND, "")
}

// Topology: rxe0 on lo for verbs tests without the CM, and a veth pair with
// rxe1/rxe2 for tests through the RDMA CM (the rdma_cm resolves addresses
// through the IP stack, so the CM devices need netdevs with IPv4 addresses).
// Both guests of the two-guest lab have them too, plus the rxe device on
// eth0 that the host names in proto.Net.
var links = []struct{ dev, netdev, ip string }{
	{"rxe0", "lo", "127.0.0.1"},
	{"rxe1", "veth0", "10.77.0.1"},
	{"rxe2", "veth1", "10.77.0.2"},
}

func topology(n *proto.Net) error {
	steps := []func() error{
		func() error { return linkUp("lo") },
		func() error { return addVeth("veth0", "veth1") },
		func() error { return addAddr("veth0", "10.77.0.1", 24) },
		func() error { return addAddr("veth1", "10.77.0.2", 24) },
		func() error { return linkUp("veth0") },
		func() error { return linkUp("veth1") },
	}
	all := links
	if n != nil {
		steps = append(steps,
			func() error { return addAddr(n.Netdev, n.Addr, byte(n.Prefix)) },
			func() error { return linkUp(n.Netdev) },
		)
		all = append(all[:len(all):len(all)], struct{ dev, netdev, ip string }{n.Dev, n.Netdev, n.Addr})
	}
	for _, l := range all {
		l := l
		steps = append(steps, func() error { return rdmaLinkAdd(l.dev, "rxe", l.netdev) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	logf("rxe links added")
	deadline := time.Now().Add(30 * time.Second)
	if n != nil {
		// virtio-net reports carrier a moment after the link is set up.
		for {
			b, _ := os.ReadFile("/sys/class/net/" + n.Netdev + "/carrier")
			if strings.TrimSpace(string(b)) == "1" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s has no carrier", n.Netdev)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// rxe fills in the IPv4-mapped GID (::ffff:a.b.c.d) once the address is
	// seen on the netdev; tests need it, so wait for it.
	for _, l := range all {
		want := mappedGID(l.ip)
		for !hasGID(l.dev, want) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s on %s never got GID %s (::ffff:%s)", l.dev, l.netdev, want, l.ip)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// siwLinks are the siw devices (when the host loaded siw.ko), on a veth
// pair of their own. Not beside rxe1/rxe2 on veth0/veth1: the RDMA CM binds
// an address to the first device, in the order devices were added, whose
// port has a GID for it (kernel: drivers/infiniband/core/cma.c
// cma_acquire_dev_by_src_ip, cma_validate_port), so with rxe1 and siw1 on
// one netdev every CM id on 10.77.0.1 would go to rxe1 and siw1 could not be
// reached through the CM (docs/testing.md §1).
var siwLinks = []struct{ dev, netdev, ip string }{
	{"siw1", "veth2", "10.79.0.1"},
	{"siw2", "veth3", "10.79.0.2"},
}

// siwTopology adds the veth pair veth2/veth3 and siw1/siw2 on it, after
// the rxe devices, so that rxe0 stays the first device (tests and programs
// that take "the first device" get rxe).
func siwTopology() error {
	if err := addVeth(siwLinks[0].netdev, siwLinks[1].netdev); err != nil {
		return err
	}
	for _, l := range siwLinks {
		if err := addAddr(l.netdev, l.ip, 24); err != nil {
			return err
		}
		if err := linkUp(l.netdev); err != nil {
			return err
		}
	}
	for _, l := range siwLinks {
		if err := rdmaLinkAdd(l.dev, "siw", l.netdev); err != nil {
			return err
		}
	}
	// siw's port follows its netdev's state (kernel:
	// drivers/infiniband/sw/siw/siw_main.c siw_netdev_event); wait for
	// IB_PORT_ACTIVE (4).
	deadline := time.Now().Add(30 * time.Second)
	for _, l := range siwLinks {
		for {
			b, _ := os.ReadFile(filepath.Join("/sys/class/infiniband", l.dev, "ports/1/state"))
			if strings.HasPrefix(string(b), "4:") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s on %s is not ACTIVE (port state %q)", l.dev, l.netdev, strings.TrimSpace(string(b)))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	logf("siw links added")
	return nil
}

// mappedGID renders ::ffff:a.b.c.d the way sysfs prints GIDs
// (eight groups of four hex digits).
func mappedGID(ip string) string {
	var b [4]int
	for i, p := range strings.Split(ip, ".") {
		b[i], _ = strconv.Atoi(p)
	}
	return fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3])
}

func hasGID(dev, want string) bool {
	dir := filepath.Join("/sys/class/infiniband", dev, "ports/1/gids")
	for i := 0; i < 16; i++ {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		if err == nil && strings.TrimSpace(string(b)) == want {
			return true
		}
	}
	return false
}

// labEnv is the lab's part of the command's environment (see proto.Env*).
func labEnv(n *proto.Net, siw bool, release string) []string {
	var veth []string
	for _, l := range links[1:] {
		veth = append(veth, l.dev+":"+l.netdev+":"+l.ip)
	}
	env := []string{
		"PATH=" + sanePath,
		proto.EnvLab + "=1",
		proto.EnvKernel + "=" + release,
		proto.EnvLoDev + "=" + links[0].dev,
		proto.EnvVeth + "=" + strings.Join(veth, ","),
		proto.EnvModules + "=" + proto.ModulesDir,
	}
	if siw {
		var s []string
		for _, l := range siwLinks {
			s = append(s, l.dev+":"+l.netdev+":"+l.ip)
		}
		env = append(env, proto.EnvSiw+"="+strings.Join(s, ","))
	}
	if n != nil {
		env = append(env,
			proto.EnvRole+"="+n.Role,
			proto.EnvLocalDev+"="+n.Dev,
			proto.EnvLocalAddr+"="+n.Addr,
			proto.EnvPeerDev+"="+n.PeerDev,
			proto.EnvPeerAddr+"="+n.PeerAddr,
		)
		if n.Role == proto.RolePrimary {
			env = append(env, proto.EnvPeerSock+"="+proto.PeerSock)
		}
	}
	return env
}

// Frames from the host: readHost hands channel 0's request, signals and
// acknowledgement to these, and every other channel's frames to its route.
var (
	requests    = make(chan proto.Command, 1)
	mainSignals = make(chan syscall.Signal, 8)
	acks        = make(chan struct{}, 1)

	routesMu sync.Mutex
	routes   = map[uint32]func(proto.Frame){}
)

func setRoute(ch uint32, fn func(proto.Frame)) {
	routesMu.Lock()
	defer routesMu.Unlock()
	if fn == nil {
		delete(routes, ch)
	} else {
		routes[ch] = fn
	}
}

func readHost() {
	for {
		f, err := proto.Read(ctl)
		if err != nil {
			fmt.Fprintf(os.Stdout, "lab-init: control port: %v\n", err)
			return
		}
		if f.Chan != 0 {
			routesMu.Lock()
			fn := routes[f.Chan]
			if fn == nil && f.Type == proto.Request {
				fn = startPeerCommand(f.Chan)
			}
			routesMu.Unlock()
			if fn != nil {
				fn(f)
			}
			continue
		}
		switch f.Type {
		case proto.Request:
			var req proto.Command
			if err := json.Unmarshal(f.Body, &req); err != nil {
				fmt.Fprintf(os.Stdout, "lab-init: bad request: %v\n", err)
				return
			}
			requests <- req
		case proto.Signal:
			if len(f.Body) == 1 {
				mainSignals <- syscall.Signal(f.Body[0])
			}
		case proto.Ack:
			select {
			case acks <- struct{}{}:
			default:
			}
		}
	}
}

func waitAck(d time.Duration) {
	select {
	case <-acks:
	case <-time.After(d):
	}
}

func kernelRelease() string {
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	b := make([]byte, 0, len(uts.Release))
	for _, c := range uts.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// execute runs req.Args with the host's environment (less PATH and
// GOVERBS_LAB*) plus labEnv, streaming its output as frames on channel ch,
// and returns its exit status. Begin is sent once the command started.
func execute(ch uint32, req proto.Command, lab []string, signals <-chan syscall.Signal, started proto.Started) proto.Status {
	var st proto.Status
	if len(req.Args) == 0 {
		return proto.Status{Code: 125, Error: "empty command"}
	}
	env := make([]string, 0, len(req.Env)+len(lab))
	for _, kv := range req.Env {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || strings.HasPrefix(k, "GOVERBS_LAB") {
			continue
		}
		env = append(env, kv)
	}
	cmd := exec.Command(req.Args[0], req.Args[1:]...)
	cmd.Dir = req.Dir
	cmd.Env = append(env, lab...)
	cmd.Stdout = host.Stream(proto.Stdout, ch)
	cmd.Stderr = host.Stream(proto.Stderr, ch)
	// A background child that keeps stdout open must not hold up the exit.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		st.Code = 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			st.Code = 127
		}
		st.Error = fmt.Sprintf("cannot start %s (cwd %s): %v", req.Args[0], req.Dir, err)
		return st
	}
	if err := host.SendJSON(proto.Begin, ch, started); err != nil {
		_ = cmd.Process.Kill()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case s := <-signals:
			_ = cmd.Process.Signal(s)
		}
	}
	ps := cmd.ProcessState
	switch {
	case ps == nil:
		st.Code, st.Error = 125, werr.Error()
	case ps.Exited():
		st.Code = ps.ExitCode()
	default:
		ws := ps.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			st.Code = 128 + int(ws.Signal())
			st.Signal = ws.Signal().String()
		} else {
			st.Code = 125
			st.Error = ps.String()
		}
	}
	return st
}

// The peer guest: peerReq is its channel 0 request (root, shares, network),
// whose Dir and Env serve as defaults for the commands it runs.
var (
	peerReq     proto.Command
	peerRelease string
)

// servePeer reports the peer guest ready and runs the commands the host
// relays from the primary guest until the host says to power off.
func servePeer(req proto.Command, release string) error {
	peerReq, peerRelease = req, release
	if err := host.SendJSON(proto.Begin, 0, proto.Started{Kernel: release}); err != nil {
		return err
	}
	<-acks
	return nil
}

// startPeerCommand is called by readHost with routesMu held for the first
// frame of channel ch, a Request: it returns the channel's route, which
// starts the command and passes it later signals.
func startPeerCommand(ch uint32) func(proto.Frame) {
	signals := make(chan syscall.Signal, 8)
	var once sync.Once
	fn := func(f proto.Frame) {
		switch f.Type {
		case proto.Signal:
			if len(f.Body) == 1 {
				select {
				case signals <- syscall.Signal(f.Body[0]):
				default:
				}
			}
		case proto.Request:
			once.Do(func() {
				var req proto.Command
				if err := json.Unmarshal(f.Body, &req); err != nil || peerReq.Net == nil {
					_ = host.SendJSON(proto.Exit, ch, proto.Status{Code: 125, Error: fmt.Sprintf("bad peer request (%v)", err)})
					setRoute(ch, nil)
					return
				}
				go func() {
					st := execute(ch, req, labEnv(peerReq.Net, peerReq.Siw, peerRelease), signals, proto.Started{Kernel: peerRelease})
					setRoute(ch, nil)
					_ = host.SendJSON(proto.Exit, ch, st)
				}()
			})
		}
	}
	routes[ch] = fn
	return fn
}

// listenPeerSock serves the primary guest's programs (package peer) on
// proto.PeerSock: each connection carries one Request or PowerOff, which is
// sent to the host on a channel of its own; the channel's frames from the
// host come back on the connection, which ends after the Exit frame.
func listenPeerSock() error {
	if err := os.MkdirAll(filepath.Dir(proto.PeerSock), 0o755); err != nil {
		return err
	}
	l, err := net.Listen("unix", proto.PeerSock)
	if err != nil {
		return err
	}
	go func() {
		var next uint32
		for {
			c, err := l.Accept()
			if err != nil {
				fmt.Fprintf(os.Stdout, "lab-init: %s: %v\n", proto.PeerSock, err)
				return
			}
			next++
			go relayClient(c, next)
		}
	}()
	return nil
}

func relayClient(c net.Conn, ch uint32) {
	defer c.Close()
	client := proto.NewWriter(c)
	exited := make(chan struct{})
	var exitOnce sync.Once
	setRoute(ch, func(f proto.Frame) {
		f.Chan = 0
		if client.Send(f) != nil || f.Type == proto.Exit {
			exitOnce.Do(func() { close(exited) })
		}
	})
	defer setRoute(ch, nil)
	first := true
	readErr := make(chan error, 1)
	go func() {
		for {
			f, err := proto.Read(c)
			if err != nil {
				readErr <- err
				return
			}
			// A Request or PowerOff first, then only Signals.
			opens := f.Type == proto.Request || f.Type == proto.PowerOff
			if opens != first || !opens && f.Type != proto.Signal {
				readErr <- fmt.Errorf("unexpected frame %q", f.Type)
				return
			}
			first = false
			f.Chan = ch
			if err := host.Send(f); err != nil {
				readErr <- err
				return
			}
		}
	}()
	select {
	case <-exited:
	case <-readErr:
		// The program went away (or misbehaved) before the exit status:
		// kill what it started in the peer and wait for the end of it.
		_ = host.Send(proto.Frame{Type: proto.Signal, Chan: ch, Body: []byte{byte(syscall.SIGKILL)}})
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
		}
	}
}

// Minimal netlink client for the topology, so /init does not have to run the
// host's ip and rdma binaries (slow to load over 9p under TCG).

type nlMsg struct{ b []byte }

func newNLMsg(typ, flags uint16) *nlMsg {
	m := &nlMsg{b: make([]byte, syscall.NLMSG_HDRLEN, 256)}
	binary.LittleEndian.PutUint16(m.b[4:], typ)
	binary.LittleEndian.PutUint16(m.b[6:], flags|syscall.NLM_F_REQUEST|syscall.NLM_F_ACK)
	return m
}

func (m *nlMsg) align() {
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
}

func (m *nlMsg) raw(p []byte) { m.b = append(m.b, p...); m.align() }

func (m *nlMsg) attr(typ uint16, data []byte) {
	var h [4]byte
	binary.LittleEndian.PutUint16(h[0:], uint16(4+len(data)))
	binary.LittleEndian.PutUint16(h[2:], typ)
	m.b = append(append(m.b, h[:]...), data...)
	m.align()
}

func (m *nlMsg) str(typ uint16, s string) { m.attr(typ, append([]byte(s), 0)) }

func (m *nlMsg) nest(typ uint16, body func()) {
	start := len(m.b)
	m.attr(typ, nil)
	body()
	binary.LittleEndian.PutUint16(m.b[start:], uint16(len(m.b)-start))
}

// ifinfomsg: family, pad, type u16, index i32, flags u32, change u32.
func ifinfomsg(index int32, flags, change uint32) []byte {
	b := make([]byte, syscall.SizeofIfInfomsg)
	binary.LittleEndian.PutUint32(b[4:], uint32(index))
	binary.LittleEndian.PutUint32(b[8:], flags)
	binary.LittleEndian.PutUint32(b[12:], change)
	return b
}

// nlDo sends one request on a new socket of the protocol and waits for the
// kernel's acknowledgement (NLMSG_ERROR with error 0).
func nlDo(family int, m *nlMsg) error {
	binary.LittleEndian.PutUint32(m.b[0:], uint32(len(m.b)))
	binary.LittleEndian.PutUint32(m.b[8:], 1)
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, family)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	if err := syscall.Sendto(fd, m.b, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			if msg.Header.Type == syscall.NLMSG_ERROR && len(msg.Data) >= 4 {
				if e := int32(binary.LittleEndian.Uint32(msg.Data)); e != 0 {
					return syscall.Errno(-e)
				}
				return nil
			}
		}
	}
}

func ifindex(name string) (int32, error) {
	b, err := os.ReadFile("/sys/class/net/" + name + "/ifindex")
	if err != nil {
		return 0, err
	}
	i, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return int32(i), err
}

func linkUp(name string) error {
	idx, err := ifindex(name)
	if err != nil {
		return err
	}
	m := newNLMsg(syscall.RTM_NEWLINK, 0)
	m.raw(ifinfomsg(idx, syscall.IFF_UP, syscall.IFF_UP))
	if err := nlDo(syscall.NETLINK_ROUTE, m); err != nil {
		return fmt.Errorf("setting %s up: %w", name, err)
	}
	return nil
}

// addVeth creates a veth pair: IFLA_LINKINFO{IFLA_INFO_KIND "veth",
// IFLA_INFO_DATA{VETH_INFO_PEER: ifinfomsg + IFLA_IFNAME}} (linux/veth.h).
func addVeth(name, peer string) error {
	const (
		iflaLinkinfo = 18
		iflaInfoKind = 1
		iflaInfoData = 2
		vethInfoPeer = 1
	)
	m := newNLMsg(syscall.RTM_NEWLINK, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	m.raw(ifinfomsg(0, 0, 0))
	m.str(syscall.IFLA_IFNAME, name)
	m.nest(iflaLinkinfo, func() {
		m.str(iflaInfoKind, "veth")
		m.nest(iflaInfoData, func() {
			m.nest(vethInfoPeer, func() {
				m.raw(ifinfomsg(0, 0, 0))
				m.str(syscall.IFLA_IFNAME, peer)
			})
		})
	})
	if err := nlDo(syscall.NETLINK_ROUTE, m); err != nil {
		return fmt.Errorf("creating veth pair %s/%s: %w", name, peer, err)
	}
	return nil
}

// addAddr adds an IPv4 address: ifaddrmsg{family, prefixlen, flags, scope,
// index u32} with IFA_LOCAL and IFA_ADDRESS.
func addAddr(dev, ip string, prefix byte) error {
	idx, err := ifindex(dev)
	if err != nil {
		return err
	}
	var a [4]byte
	for i, p := range strings.Split(ip, ".") {
		v, _ := strconv.Atoi(p)
		a[i] = byte(v)
	}
	m := newNLMsg(syscall.RTM_NEWADDR, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	hdr := make([]byte, syscall.SizeofIfAddrmsg)
	hdr[0], hdr[1] = syscall.AF_INET, prefix
	binary.LittleEndian.PutUint32(hdr[4:], uint32(idx))
	m.raw(hdr)
	m.attr(syscall.IFA_LOCAL, a[:])
	m.attr(syscall.IFA_ADDRESS, a[:])
	if err := nlDo(syscall.NETLINK_ROUTE, m); err != nil {
		return fmt.Errorf("adding %s/%d to %s: %w", ip, prefix, dev, err)
	}
	return nil
}

// rdmaLinkAdd is `rdma link add DEV type TYPE netdev NETDEV`:
// RDMA_NL_GET_TYPE(RDMA_NL_NLDEV=5, RDMA_NLDEV_CMD_NEWLINK=3) with
// RDMA_NLDEV_ATTR_DEV_NAME (2), _LINK_TYPE (65) and _NDEV_NAME (51)
// (rdma/rdma_netlink.h).
func rdmaLinkAdd(dev, typ, netdev string) error {
	const (
		netlinkRDMA  = 20
		nldevNewlink = 5<<10 + 3
		attrDevName  = 2
		attrNdevName = 51
		attrLinkType = 65
	)
	m := newNLMsg(nldevNewlink, 0)
	m.str(attrDevName, dev)
	m.str(attrLinkType, typ)
	m.str(attrNdevName, netdev)
	if err := nlDo(netlinkRDMA, m); err != nil {
		return fmt.Errorf("rdma link add %s type %s netdev %s: %w", dev, typ, netdev, err)
	}
	return nil
}

// bindMergedUsr makes a /usr mounted over the host's (a foreign guest's
// userland) also provide /bin, /sbin and /lib. On a host with the merged
// /usr (Debian 12 and later) they are links into /usr already; on others
// the userland's directories are bound over the host's.
func bindMergedUsr() error {
	for _, d := range []string{"bin", "sbin", "lib"} {
		p := filepath.Join(newRoot, d)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
			continue
		}
		if err := syscall.Mount(filepath.Join(newRoot, "usr", d), p, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind mount of /usr/%s on /%s: %w", d, d, err)
		}
	}
	return nil
}
