//go:build !linux || goverbs_notlinux

package sys

import (
	"unsafe"

	"github.com/goverbs/rdma/internal/unix"
)

// The commands of cmd.go and doorbell.go off Linux: no descriptor can be
// opened there (unix.Open fails), so these are never reached with one; they
// fail with unix.ErrNotLinux all the same.

func Write(fd *FD, op string, buf unsafe.Pointer, size uintptr) error {
	return write(fd.raw, op, buf, size)
}

func write(_ int, op string, _ unsafe.Pointer, _ uintptr) error {
	return &OpError{Op: op, Err: unix.ErrNotLinux}
}

func Ioctl(fd *FD, op string, req uintptr, arg unsafe.Pointer) error {
	return &OpError{Op: op, Err: unix.ErrNotLinux}
}

func WriteDoorbell(fd *FD, op string, buf unsafe.Pointer, size uintptr) error {
	return &OpError{Op: op, Err: unix.ErrNotLinux}
}
