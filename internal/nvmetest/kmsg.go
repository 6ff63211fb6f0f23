//go:build linux

package nvmetest

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// kernelLog reads the kernel's messages logged since it was opened, for
// errors that say why nvmet or nvme-rdma refused: their configfs and
// /dev/nvme-fabrics writes return only an errno, and the reason goes to
// the kernel log (e.g. nvmet_rdma's "binding CM ID to ... failed").
// Each read(2) of /dev/kmsg returns one record; SEEK_END skips what was
// logged before (kernel: kernel/printk/printk.c devkmsg_llseek).
type kernelLog struct {
	mu sync.Mutex
	fd int // -1 when /dev/kmsg cannot be read (then there is nothing to add)
}

func openKernelLog() *kernelLog {
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &kernelLog{fd: -1}
	}
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return &kernelLog{fd: -1}
	}
	return &kernelLog{fd: fd}
}

// lines returns the messages logged since the last call (or the open).
func (l *kernelLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd < 0 {
		return nil
	}
	var out []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Read(l.fd, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EPIPE) {
			continue // EPIPE: records overwritten before we read them
		}
		if err != nil || n <= 0 {
			return out // EAGAIN: nothing more
		}
		// "prio,seq,usec,flags;message\n" then " KEY=value" lines.
		_, msg, ok := strings.Cut(string(buf[:n]), ";")
		if !ok {
			continue
		}
		msg, _, _ = strings.Cut(msg, "\n")
		out = append(out, msg)
	}
}

// report is lines as a paragraph for an error message: the last 30.
func (l *kernelLog) report() string {
	lines := l.lines()
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "\nkernel messages meanwhile:\n\t" + strings.Join(lines, "\n\t")
}

func (l *kernelLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
}

// KernelLog reads the kernel's messages logged since OpenKernelLog, for
// tests that check what the kernel's host said (nvme-rdma logs "Bogus
// remote invalidation" when a response invalidates another key than the
// command's, and resets the controller).
type KernelLog struct{ l *kernelLog }

// OpenKernelLog starts reading the kernel's messages from now on; with
// t, it is closed when the test ends. Lines is empty where /dev/kmsg
// cannot be read.
func OpenKernelLog(t testing.TB) *KernelLog {
	k := &KernelLog{l: openKernelLog()}
	if t != nil {
		t.Cleanup(k.Close)
	}
	return k
}

// Lines returns the messages logged since the last call (or the open).
func (k *KernelLog) Lines() []string { return k.l.lines() }

// Close stops reading.
func (k *KernelLog) Close() { k.l.close() }
