//go:build linux

package lab

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/goverbs/rdma/test/lab/internal/proto"
)

// vm is one QEMU guest: its kernel console goes to console, its control
// port's frames to frames.
type vm struct {
	name    string // "the VM", "the peer VM": for messages
	qemu    *exec.Cmd
	qemuOut *ring // QEMU's own stdout and stderr
	console *ring // the kernel console
	done    chan struct{}
	stopped sync.Once

	ctl    chan *proto.Writer // receives the control connection once
	frames chan proto.Frame   // closed when the control connection ends
	quit   chan struct{}      // closed by close: stop reading frames
}

// vmOpts is what differs between the guests of one run.
type vmOpts struct {
	name       string
	runDir     string    // holds the console and control sockets
	console    io.Writer // copy of the kernel console (verbose), or nil
	extraArgs  []string
	extraFiles []*os.File // become fds 3, 4, ... in QEMU
}

// startVM starts QEMU for one guest.
func (e *env) startVM(k *kernel, initrd string, shares []proto.Share, o vmOpts) (*vm, error) {
	conPath, ctlPath := filepath.Join(o.runDir, "con"), filepath.Join(o.runDir, "ctl")
	conL, err := net.Listen("unix", conPath)
	if err != nil {
		return nil, fmt.Errorf("console socket: %v", err)
	}
	ctlL, err := net.Listen("unix", ctlPath)
	if err != nil {
		conL.Close()
		return nil, fmt.Errorf("control socket: %v", err)
	}
	args := append([]string{
		"-nodefaults", "-no-user-config", "-display", "none",
	}, e.arch.mach...)
	args = append(args, e.accel...)
	args = append(args,
		"-m", "2048", "-smp", "2",
		"-no-reboot",
		"-kernel", k.bootImage(), "-initrd", initrd,
		"-append", strings.Join(strings.Fields("console="+e.arch.cons+" quiet panic=-1 "+e.arch.clock+" "+os.Getenv("GOVERBS_LAB_APPEND")), " "),
		// Kernel console on the first serial port, captured apart from the
		// command's output, which travels over a virtio-serial port.
		"-chardev", "socket,id=con,path="+qemuEscape(conPath), "-serial", "chardev:con",
		"-device", "virtio-serial-pci,id=vser",
		"-chardev", "socket,id=ctl,path="+qemuEscape(ctlPath),
		"-device", "virtserialport,bus=vser.0,chardev=ctl,name=lab.ctl",
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
	)
	for _, s := range shares {
		ro := ""
		if s.ReadOnly {
			ro = ",readonly=on"
		}
		args = append(args, "-virtfs", fmt.Sprintf("local,path=%s,mount_tag=%s,security_model=none%s,multidevs=remap", qemuEscape(s.Path), s.Tag, ro))
	}
	args = append(args, o.extraArgs...)

	v := &vm{
		name:    o.name,
		qemuOut: &ring{max: 16 << 10},
		console: &ring{max: 256 << 10},
		done:    make(chan struct{}),
		ctl:     make(chan *proto.Writer, 1),
		frames:  make(chan proto.Frame, 64),
		quit:    make(chan struct{}),
	}
	v.qemu = exec.Command(e.arch.qemu, args...)
	// Stdin stays nil: os/exec then gives QEMU /dev/null (CI has no stdin).
	v.qemu.Stdout, v.qemu.Stderr = v.qemuOut, v.qemuOut
	v.qemu.ExtraFiles = o.extraFiles
	v.qemu.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if e.verbose {
		e.logf("%s: %s %s", v.name, e.arch.qemu, strings.Join(args, " "))
	}
	if err := v.qemu.Start(); err != nil {
		conL.Close()
		ctlL.Close()
		return nil, fmt.Errorf("starting QEMU: %v", err)
	}
	go func() {
		_ = v.qemu.Wait()
		close(v.done)
		conL.Close() // unblock Accept if QEMU never connected
		ctlL.Close()
	}()
	go func() {
		c, err := conL.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var w io.Writer = v.console
		if o.console != nil {
			w = io.MultiWriter(v.console, o.console)
		}
		_, _ = io.Copy(w, c)
	}()
	go func() {
		defer close(v.frames)
		c, err := ctlL.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		v.ctl <- proto.NewWriter(c)
		for {
			f, err := proto.Read(c)
			if err != nil {
				return
			}
			select {
			case v.frames <- f:
			case <-v.quit:
				return
			}
		}
	}()
	return v, nil
}

// stop kills QEMU (no clean shutdown) and waits for it to exit.
func (v *vm) stop() {
	v.stopped.Do(func() {
		_ = v.qemu.Process.Kill()
		<-v.done
	})
}

// close stops the VM and the goroutine that reads its frames.
func (v *vm) close() {
	v.stop()
	select {
	case <-v.quit:
	default:
		close(v.quit)
	}
}

// stoppedMsg says that the VM stopped and what QEMU said.
func (v *vm) stoppedMsg(release, what string) string {
	msg := fmt.Sprintf("%s (Linux %s) stopped %s", v.name, release, what)
	if q := strings.TrimSpace(string(v.qemuOut.bytes())); q != "" {
		msg += "; QEMU said: " + q
	}
	return msg
}

// prefixWriter writes each line with a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool // inside a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out bytes.Buffer
	for _, c := range b {
		if !p.mid {
			out.WriteString(p.prefix)
		}
		out.WriteByte(c)
		p.mid = c != '\n'
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
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
