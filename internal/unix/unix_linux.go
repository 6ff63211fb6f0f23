//go:build !goverbs_notlinux

package unix

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// RequireLinux returns nil on Linux (ErrNotLinux elsewhere).
func RequireLinux() error { return nil }

type (
	Errno   = unix.Errno
	Rlimit  = unix.Rlimit
	Utsname = unix.Utsname
)

const (
	EACCES          = unix.EACCES
	EADDRINUSE      = unix.EADDRINUSE
	EADDRNOTAVAIL   = unix.EADDRNOTAVAIL
	EAGAIN          = unix.EAGAIN
	EBADF           = unix.EBADF
	EBUSY           = unix.EBUSY
	ECONNABORTED    = unix.ECONNABORTED
	ECONNREFUSED    = unix.ECONNREFUSED
	EEXIST          = unix.EEXIST
	EHOSTUNREACH    = unix.EHOSTUNREACH
	EINTR           = unix.EINTR
	EINVAL          = unix.EINVAL
	ENETUNREACH     = unix.ENETUNREACH
	ENFILE          = unix.ENFILE
	ENODATA         = unix.ENODATA
	ENODEV          = unix.ENODEV
	ENOENT          = unix.ENOENT
	ENOMEM          = unix.ENOMEM
	ENOTTY          = unix.ENOTTY
	ENXIO           = unix.ENXIO
	EOPNOTSUPP      = unix.EOPNOTSUPP
	EPERM           = unix.EPERM
	EPROTONOSUPPORT = unix.EPROTONOSUPPORT
	ETIMEDOUT       = unix.ETIMEDOUT
)

const (
	AF_INET        = unix.AF_INET
	AF_INET6       = unix.AF_INET6
	IFNAMSIZ       = unix.IFNAMSIZ
	MAP_ANONYMOUS  = unix.MAP_ANONYMOUS
	MAP_PRIVATE    = unix.MAP_PRIVATE
	MAP_SHARED     = unix.MAP_SHARED
	NETLINK_RDMA   = unix.NETLINK_RDMA
	NLM_F_ACK      = unix.NLM_F_ACK
	NLM_F_DUMP     = unix.NLM_F_DUMP
	O_CLOEXEC      = unix.O_CLOEXEC
	O_RDWR         = unix.O_RDWR
	PROT_READ      = unix.PROT_READ
	PROT_WRITE     = unix.PROT_WRITE
	RLIMIT_MEMLOCK = unix.RLIMIT_MEMLOCK
	RLIM_INFINITY  = unix.RLIM_INFINITY
)

func ByteSliceToString(s []byte) string          { return unix.ByteSliceToString(s) }
func Close(fd int) error                         { return unix.Close(fd) }
func ErrnoName(e syscall.Errno) string           { return unix.ErrnoName(e) }
func Getrlimit(resource int, rlim *Rlimit) error { return unix.Getrlimit(resource, rlim) }
func Mkdev(major, minor uint32) uint64           { return unix.Mkdev(major, minor) }
func Munmap(b []byte) error                      { return unix.Munmap(b) }
func Read(fd int, p []byte) (int, error)         { return unix.Read(fd, p) }
func SetNonblock(fd int, nonblocking bool) error { return unix.SetNonblock(fd, nonblocking) }
func Uname(buf *Utsname) error                   { return unix.Uname(buf) }

func Mmap(fd int, offset int64, length, prot, flags int) ([]byte, error) {
	return unix.Mmap(fd, offset, length, prot, flags)
}

func Open(path string, mode int, perm uint32) (int, error) {
	return unix.Open(path, mode, perm)
}
