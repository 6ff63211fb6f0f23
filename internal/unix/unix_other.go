//go:build !linux || goverbs_notlinux

package unix

import "syscall"

// RequireLinux returns ErrNotLinux: the system is not Linux.
func RequireLinux() error { return ErrNotLinux }

type Errno = syscall.Errno

// Rlimit is Linux's struct rlimit.
type Rlimit struct {
	Cur uint64
	Max uint64
}

// Utsname is Linux's struct new_utsname.
type Utsname struct {
	Sysname    [65]byte
	Nodename   [65]byte
	Release    [65]byte
	Version    [65]byte
	Machine    [65]byte
	Domainname [65]byte
}

// Linux's errno values (asm-generic/errno-base.h, asm-generic/errno.h).
const (
	EACCES          = Errno(13)
	EADDRINUSE      = Errno(98)
	EADDRNOTAVAIL   = Errno(99)
	EAGAIN          = Errno(11)
	EBADF           = Errno(9)
	EBUSY           = Errno(16)
	ECONNABORTED    = Errno(103)
	ECONNREFUSED    = Errno(111)
	EEXIST          = Errno(17)
	EHOSTUNREACH    = Errno(113)
	EINTR           = Errno(4)
	EINVAL          = Errno(22)
	ENETUNREACH     = Errno(101)
	ENFILE          = Errno(23)
	ENODATA         = Errno(61)
	ENODEV          = Errno(19)
	ENOENT          = Errno(2)
	ENOMEM          = Errno(12)
	ENOTTY          = Errno(25)
	ENXIO           = Errno(6)
	EOPNOTSUPP      = Errno(95)
	EPERM           = Errno(1)
	EPROTONOSUPPORT = Errno(93)
	ETIMEDOUT       = Errno(110)
)

// Linux's values on amd64 and arm64.
const (
	AF_INET        = 0x2
	AF_INET6       = 0xa
	IFNAMSIZ       = 0x10
	MAP_ANONYMOUS  = 0x20
	MAP_PRIVATE    = 0x2
	MAP_SHARED     = 0x1
	NETLINK_RDMA   = 0x14
	NLM_F_ACK      = 0x4
	NLM_F_DUMP     = 0x300
	O_CLOEXEC      = 0x80000
	O_RDWR         = 0x2
	PROT_READ      = 0x1
	PROT_WRITE     = 0x2
	RLIMIT_MEMLOCK = 0x8
	RLIM_INFINITY  = 0xffffffffffffffff
)

// ByteSliceToString returns s up to its first NUL byte.
func ByteSliceToString(s []byte) string {
	for i, c := range s {
		if c == 0 {
			return string(s[:i])
		}
	}
	return string(s)
}

// ErrnoName returns "": there is no Linux errno table here.
func ErrnoName(syscall.Errno) string { return "" }

// Mkdev builds a device number the way Linux's glibc makedev does: the low 8
// bits of minor, then 12 bits of major, then the rest of minor, then the rest
// of major.
func Mkdev(major, minor uint32) uint64 {
	return uint64(minor&0xff) | uint64(major&0xfff)<<8 | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
}

func Close(int) error                                { return ErrNotLinux }
func Getrlimit(int, *Rlimit) error                   { return ErrNotLinux }
func Mmap(int, int64, int, int, int) ([]byte, error) { return nil, ErrNotLinux }
func Munmap([]byte) error                            { return ErrNotLinux }
func Open(string, int, uint32) (int, error)          { return -1, ErrNotLinux }
func Read(int, []byte) (int, error)                  { return 0, ErrNotLinux }
func SetNonblock(int, bool) error                    { return ErrNotLinux }
func Uname(*Utsname) error                           { return ErrNotLinux }
