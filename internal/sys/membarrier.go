package sys

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// membarrier(2) commands (include/uapi/linux/membarrier.h).
const (
	membarrierCmdQuery                    = 0
	membarrierCmdPrivateExpedited         = 1 << 3
	membarrierCmdRegisterPrivateExpedited = 1 << 4
)

var membarrierReady struct {
	once sync.Once
	err  error
}

// RegisterMembarrier prepares the process for Membarrier, once; it fails
// where the kernel lacks MEMBARRIER_CMD_PRIVATE_EXPEDITED (before 4.14,
// or a seccomp filter that refuses membarrier), and then every later call
// returns the same error.
func RegisterMembarrier() error {
	membarrierReady.once.Do(func() {
		cmds, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdQuery, 0, 0)
		switch {
		case errno != 0:
			membarrierReady.err = &OpError{Op: "membarrier query", Err: errno}
		case cmds&membarrierCmdPrivateExpedited == 0:
			membarrierReady.err = &OpError{Op: "membarrier query", Err: unix.ENOSYS}
		default:
			if _, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdRegisterPrivateExpedited, 0, 0); errno != 0 {
				membarrierReady.err = &OpError{Op: "membarrier register", Err: errno}
			}
		}
	})
	return membarrierReady.err
}

// Membarrier makes every thread of the process that is running now pass a
// full memory barrier before it returns (MEMBARRIER_CMD_PRIVATE_EXPEDITED;
// a thread that is not running passes one when it is switched in). So a
// thread's store followed by its load needs no fence of its own where
// another thread, to see that store, stores, calls Membarrier and then
// loads: either the first thread's store is visible to that load, or the
// first thread's load sees the other's store. It panics unless
// RegisterMembarrier succeeded: callers use it only after that.
func Membarrier() {
	if RegisterMembarrier() != nil {
		panic("sys: Membarrier without a successful RegisterMembarrier")
	}
	for {
		_, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierCmdPrivateExpedited, 0, 0)
		switch errno {
		case 0:
			return
		case unix.ENOMEM:
			// The kernel could not allocate its CPU mask
			// (kernel/sched/membarrier.c membarrier_private_expedited,
			// CONFIG_CPUMASK_OFFSTACK): try again; the caller cannot
			// go on without the barrier.
			runtime.Gosched()
		default:
			// A registered process gets no other error.
			panic("sys: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): " + errno.Error())
		}
	}
}
