//go:build !linux || goverbs_notlinux

package nldev

import (
	"errors"
	"time"

	"github.com/goverbs/rdma/internal/unix"
)

// Off Linux there is no NETLINK_RDMA, and vishvananda/netlink defines its
// request type only for Linux. This file gives the rest of the package the
// names netlinkrdma.go defines on Linux: client mirrors the struct there
// (make goos builds this file), and every operation of std fails with
// unix.ErrNotLinux.

type request struct{}

type client struct {
	exec          func(req *request) ([][]byte, error)
	rdmaLinkAdd   func(name, linkType, netdev string) error
	netnsMode     func() (string, error)
	linkType      func(netdev string) (string, error)
	appearTimeout time.Duration
	pollInterval  time.Duration
}

var std = &client{
	exec:        func(*request) ([][]byte, error) { return nil, unix.ErrNotLinux },
	rdmaLinkAdd: func(string, string, string) error { return unix.ErrNotLinux },
	netnsMode:   func() (string, error) { return "", unix.ErrNotLinux },
	linkType:    func(string) (string, error) { return "", unix.ErrNotLinux },
}

const dumpAttempts = 3

func getDumpRequest() *request                     { return nil }
func portDumpRequest(uint32) *request              { return nil }
func chardevRequest(uint32, bool, string) *request { return nil }
func sysGetRequest() *request                      { return nil }
func delLinkRequest(uint32) *request               { return nil }
func isDumpInterrupted(error) bool                 { return false }

func errnoOf(err error) unix.Errno {
	var errno unix.Errno
	errors.As(err, &errno)
	return errno
}
