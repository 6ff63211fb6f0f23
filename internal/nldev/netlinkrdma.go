//go:build linux && !goverbs_notlinux

package nldev

import (
	"errors"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
)

// client runs the package's operations. Its fields are the seams unit tests
// replace with a fake kernel; the package functions use std.
type client struct {
	// exec sends one request on a fresh NETLINK_RDMA socket and returns the
	// payload of every reply (nlmsghdr removed). For dumps it may return
	// nl.ErrDumpInterrupted together with the (possibly inconsistent) replies.
	exec func(req *nl.NetlinkRequest) ([][]byte, error)
	// rdmaLinkAdd sends RDMA_NLDEV_CMD_NEWLINK.
	rdmaLinkAdd func(name, linkType, netdev string) error
	// netnsMode runs RDMA_NLDEV_CMD_SYS_GET and names the netns mode.
	netnsMode func() (string, error)
	// linkType reports the kind of a netdev ("veth", "vlan", ...).
	linkType func(netdev string) (string, error)

	// appearTimeout bounds how long LinkAdd waits for the new device to
	// be listed; pollInterval is the wait between two listings.
	appearTimeout time.Duration
	pollInterval  time.Duration
}

var std = &client{
	exec:          execRDMA,
	rdmaLinkAdd:   netlink.RdmaLinkAdd,
	netnsMode:     netlink.RdmaSystemGetNetnsMode,
	linkType:      netdevType,
	appearTimeout: 5 * time.Second,
	pollInterval:  20 * time.Millisecond,
}

func execRDMA(req *nl.NetlinkRequest) ([][]byte, error) {
	return req.Execute(unix.NETLINK_RDMA, 0)
}

func netdevType(name string) (string, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return "", err
	}
	return l.Type(), nil
}

// dumpAttempts bounds the retries of a listing that the kernel reported as
// interrupted (NLM_F_DUMP_INTR) or that raced with a device going away.
const dumpAttempts = 3

// Request builders. Each returns a fresh request; nl.NewNetlinkRequest adds
// NLM_F_REQUEST and a sequence number.

// getDumpRequest lists every device: RDMA_NLDEV_CMD_GET with NLM_F_DUMP.
func getDumpRequest() *nl.NetlinkRequest {
	return nl.NewNetlinkRequest(nlType(abi.RDMA_NLDEV_CMD_GET), unix.NLM_F_DUMP)
}

// portDumpRequest lists the ports of one device: RDMA_NLDEV_CMD_PORT_GET
// with NLM_F_DUMP needs RDMA_NLDEV_ATTR_DEV_INDEX (core/nldev.c
// nldev_port_get_dumpit).
func portDumpRequest(devIndex uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(nlType(abi.RDMA_NLDEV_CMD_PORT_GET), unix.NLM_F_DUMP)
	req.AddData(nl.NewRtAttr(abi.RDMA_NLDEV_ATTR_DEV_INDEX, nl.Uint32Attr(devIndex)))
	return req
}

// chardevRequest asks which char device serves a client ("uverbs",
// "rdma_cm", ...), for one device or, with global, for none
// (core/nldev.c nldev_get_chardev).
func chardevRequest(devIndex uint32, global bool, typ string) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(nlType(abi.RDMA_NLDEV_CMD_GET_CHARDEV), 0)
	if !global {
		req.AddData(nl.NewRtAttr(abi.RDMA_NLDEV_ATTR_DEV_INDEX, nl.Uint32Attr(devIndex)))
	}
	req.AddData(nl.NewRtAttr(abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE, nl.ZeroTerminated(typ)))
	return req
}

// sysGetRequest reads the RDMA subsystem settings (RDMA_NLDEV_CMD_SYS_GET).
func sysGetRequest() *nl.NetlinkRequest {
	return nl.NewNetlinkRequest(nlType(abi.RDMA_NLDEV_CMD_SYS_GET), 0)
}

// delLinkRequest removes a device by index (RDMA_NLDEV_CMD_DELLINK). It
// needs NLM_F_ACK: DELLINK sends no reply message, only the ack.
func delLinkRequest(devIndex uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(nlType(abi.RDMA_NLDEV_CMD_DELLINK), unix.NLM_F_ACK)
	req.AddData(nl.NewRtAttr(abi.RDMA_NLDEV_ATTR_DEV_INDEX, nl.Uint32Attr(devIndex)))
	return req
}

func isDumpInterrupted(err error) bool { return errors.Is(err, nl.ErrDumpInterrupted) }

func errnoOf(err error) unix.Errno {
	var errno unix.Errno
	errors.As(err, &errno)
	return errno
}
