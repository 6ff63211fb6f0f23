//go:build goverbs_notlinux

package unix

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	xunix "golang.org/x/sys/unix"
)

// TestLinuxValues runs on Linux under the build tag goverbs_notlinux (make
// goos), where this package is unix_other.go: its constants and its pure
// functions must agree with golang.org/x/sys/unix on Linux.
func TestLinuxValues(t *testing.T) {
	errnos := []struct {
		name       string
		got, linux Errno
	}{
		{"EACCES", EACCES, xunix.EACCES}, {"EADDRINUSE", EADDRINUSE, xunix.EADDRINUSE},
		{"EADDRNOTAVAIL", EADDRNOTAVAIL, xunix.EADDRNOTAVAIL}, {"EAGAIN", EAGAIN, xunix.EAGAIN},
		{"EBADF", EBADF, xunix.EBADF}, {"EBUSY", EBUSY, xunix.EBUSY},
		{"ECONNABORTED", ECONNABORTED, xunix.ECONNABORTED}, {"ECONNREFUSED", ECONNREFUSED, xunix.ECONNREFUSED},
		{"EEXIST", EEXIST, xunix.EEXIST}, {"EHOSTUNREACH", EHOSTUNREACH, xunix.EHOSTUNREACH},
		{"EINTR", EINTR, xunix.EINTR}, {"EINVAL", EINVAL, xunix.EINVAL},
		{"ENETUNREACH", ENETUNREACH, xunix.ENETUNREACH}, {"ENFILE", ENFILE, xunix.ENFILE},
		{"ENODATA", ENODATA, xunix.ENODATA}, {"ENODEV", ENODEV, xunix.ENODEV},
		{"ENOENT", ENOENT, xunix.ENOENT}, {"ENOMEM", ENOMEM, xunix.ENOMEM},
		{"ENOTTY", ENOTTY, xunix.ENOTTY}, {"ENXIO", ENXIO, xunix.ENXIO},
		{"EOPNOTSUPP", EOPNOTSUPP, xunix.EOPNOTSUPP}, {"EPERM", EPERM, xunix.EPERM},
		{"EPROTONOSUPPORT", EPROTONOSUPPORT, xunix.EPROTONOSUPPORT}, {"ETIMEDOUT", ETIMEDOUT, xunix.ETIMEDOUT},
	}
	values := []struct {
		name       string
		got, linux uint64
	}{
		{"AF_INET", AF_INET, xunix.AF_INET}, {"AF_INET6", AF_INET6, xunix.AF_INET6},
		{"IFNAMSIZ", IFNAMSIZ, xunix.IFNAMSIZ}, {"MAP_ANONYMOUS", MAP_ANONYMOUS, xunix.MAP_ANONYMOUS},
		{"MAP_PRIVATE", MAP_PRIVATE, xunix.MAP_PRIVATE}, {"MAP_SHARED", MAP_SHARED, xunix.MAP_SHARED},
		{"NETLINK_RDMA", NETLINK_RDMA, xunix.NETLINK_RDMA}, {"NLM_F_ACK", NLM_F_ACK, xunix.NLM_F_ACK},
		{"NLM_F_DUMP", NLM_F_DUMP, xunix.NLM_F_DUMP}, {"O_CLOEXEC", O_CLOEXEC, xunix.O_CLOEXEC},
		{"O_RDWR", O_RDWR, xunix.O_RDWR}, {"PROT_READ", PROT_READ, xunix.PROT_READ},
		{"PROT_WRITE", PROT_WRITE, xunix.PROT_WRITE}, {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK, xunix.RLIMIT_MEMLOCK},
		{"RLIM_INFINITY", RLIM_INFINITY, xunix.RLIM_INFINITY},
	}
	for _, v := range errnos {
		if v.got != v.linux {
			t.Errorf("%s is %d, on Linux %d", v.name, v.got, v.linux)
		}
	}
	for _, v := range values {
		if v.got != v.linux {
			t.Errorf("%s is %#x, on Linux %#x", v.name, v.got, v.linux)
		}
	}
	if n := len(errnos) + len(values); n != countConsts(t) {
		t.Errorf("the table checks %d constants, unix_other.go has %d", n, countConsts(t))
	}
	for _, d := range [][2]uint32{{0, 0}, {231, 1}, {0xfff, 0xff}, {0x1000, 0x100}, {0xffffffff, 0xffffffff}, {0x12345678, 0x9abcdef0}} {
		if got, want := Mkdev(d[0], d[1]), xunix.Mkdev(d[0], d[1]); got != want {
			t.Errorf("Mkdev(%#x, %#x) = %#x, on Linux %#x", d[0], d[1], got, want)
		}
	}
	for _, s := range []string{"", "6.1.0", "6.1.0\x00junk", "\x00"} {
		if got, want := ByteSliceToString([]byte(s)), xunix.ByteSliceToString([]byte(s)); got != want {
			t.Errorf("ByteSliceToString(%q) = %q, on Linux %q", s, got, want)
		}
	}
	if _, err := Open("/dev/null", O_RDWR, 0); err != ErrNotLinux {
		t.Errorf("Open: %v, want ErrNotLinux", err)
	}
}

func countConsts(t *testing.T) int {
	f, err := parser.ParseFile(token.NewFileSet(), "unix_other.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range f.Decls {
		if d, ok := d.(*ast.GenDecl); ok && d.Tok == token.CONST {
			for _, s := range d.Specs {
				n += len(s.(*ast.ValueSpec).Names)
			}
		}
	}
	return n
}
