//go:build linux && !goverbs_notlinux

package sys

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WriteDoorbell is Write for a command that never sleeps, such as rxe's
// POST_SEND doorbell (the kernel runs the requester and returns) and
// REQ_NOTIFY_CQ (the driver sets the CQ's arm flag): it uses
// a raw system call, which does not tell the scheduler, so no other thread
// is woken to take over the P while it runs and nothing is handed back
// afterwards. On a CPU shared with the runtime's own threads (taskset
// pinning) that hand-off was seen to cost more than the doorbell itself.
func WriteDoorbell(fd *FD, op string, buf unsafe.Pointer, size uintptr) error {
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd.raw), uintptr(buf), size)
		if errno == unix.EINTR {
			continue
		}
		runtime.KeepAlive(fd)
		if errno != 0 {
			return &OpError{Op: op, Err: errno}
		}
		if n != size {
			return &OpError{Op: op, Err: fmt.Errorf("kernel consumed %d of %d command bytes", n, size)}
		}
		return nil
	}
}
