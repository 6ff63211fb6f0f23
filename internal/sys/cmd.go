//go:build linux && !goverbs_notlinux

package sys

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Write issues one command through the write() ABI shared by uverbs and
// ucma: buf points at size bytes that begin with the command header. The
// kernel requires that write() consume exactly the whole command
// (kernel: drivers/infiniband/core/uverbs_main.c verify_hdr, core/ucma.c
// ucma_write); a short count is reported as an error.
//
// Any response pointer inside the command must point at memory that is not on
// a goroutine stack (heap or mmap'd): stacks move, and the kernel writes
// through the pointer during the call.
func Write(fd *FD, op string, buf unsafe.Pointer, size uintptr) error {
	err := write(fd.raw, op, buf, size)
	runtime.KeepAlive(fd)
	return err
}

func write(raw int, op string, buf unsafe.Pointer, size uintptr) error {
	for {
		n, _, errno := unix.Syscall(unix.SYS_WRITE, uintptr(raw), uintptr(buf), size)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return &OpError{Op: op, Err: errno}
		}
		if n != size {
			return &OpError{Op: op, Err: fmt.Errorf("kernel consumed %d of %d command bytes", n, size)}
		}
		return nil
	}
}

// Ioctl issues one ioctl on fd. For RDMA_VERBS_IOCTL, arg points at an
// ib_uverbs_ioctl_hdr followed by its attributes
// (kernel: drivers/infiniband/core/uverbs_ioctl.c ib_uverbs_ioctl).
func Ioctl(fd *FD, op string, req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd.raw), req, uintptr(arg))
		runtime.KeepAlive(fd)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return &OpError{Op: op, Err: errno}
		}
		return nil
	}
}
