package nldev

import (
	"errors"
	"fmt"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
	"strings"
	"time"
)

// LinkAdd is netlinkrdma.LinkAdd (documented there).
func LinkAdd(name, netdev string) error { return std.linkAdd(name, netdev) }

// LinkDel is netlinkrdma.LinkDel (documented there).
func LinkDel(name string) error { return std.linkDel(name) }

// validName checks an RDMA device name the way nldev_newlink and the
// attribute policy would reject it (EINVAL), so that EINVAL from NEWLINK can
// only mean an unknown link type.
func validName(name string) error {
	switch {
	case name == "":
		return errors.New("empty RDMA device name")
	case len(name) > abi.IB_DEVICE_NAME_MAX-1:
		return fmt.Errorf("RDMA device name %q is longer than %d bytes", name, abi.IB_DEVICE_NAME_MAX-1)
	case strings.ContainsAny(name, "%/ \t\n"):
		// '%' is a kernel name template ("rxe%d"); '/' and blanks cannot
		// be sysfs names.
		return fmt.Errorf("RDMA device name %q contains '%%', '/' or a blank", name)
	}
	return nil
}

func validNetdev(netdev string) error {
	switch {
	case netdev == "":
		return errors.New("empty netdev name")
	case len(netdev) >= unix.IFNAMSIZ:
		return fmt.Errorf("netdev name %q is longer than %d bytes", netdev, unix.IFNAMSIZ-1)
	}
	return nil
}

func (c *client) linkAdd(name, netdev string) error {
	op := fmt.Sprintf("rdma link add %s type rxe netdev %s", name, netdev)
	for _, err := range []error{validName(name), validNetdev(netdev)} {
		if err != nil {
			return &Error{Op: op, Err: unix.EINVAL, Msg: err.Error()}
		}
	}
	if err := c.rdmaLinkAdd(name, "rxe", netdev); err != nil {
		return c.newlinkError(op, name, netdev, err)
	}
	return c.waitListed(op, name)
}

// newlinkError explains an error from RDMA_NLDEV_CMD_NEWLINK (core/nldev.c
// nldev_newlink, sw/rxe/rxe.c rxe_newlink).
func (c *client) newlinkError(op, name, netdev string, err error) error {
	switch errnoOf(err) {
	case unix.EEXIST, unix.ENFILE:
		// EEXIST: rxe_newlink found an rxe device on the netdev.
		// ENFILE: the ib core's assign_name found the name in use.
		return &Error{Op: op, Kind: ErrExists, Err: err, Msg: c.whichExists(name, netdev)}
	case unix.ENODEV:
		// nldev_newlink: dev_get_by_name() found no such netdev.
		return &Error{Op: op, Kind: ErrNoNetdev, Err: err, Msg: fmt.Sprintf(
			"no network device %q in this network namespace: list them with `ip link`", netdev)}
	case unix.EINVAL, unix.EOPNOTSUPP:
		// nldev_newlink: no "rxe" link ops, even after
		// request_module("rdma-link-rxe").
		return &Error{Op: op, Kind: ErrNoRXE, Err: err, Msg: "the kernel cannot create rxe links: " +
			"load the Soft-RoCE driver with `modprobe rdma_rxe` (as root), " +
			"or use a kernel built with CONFIG_RDMA_RXE"}
	case unix.ENOENT:
		// rxe_icrc_init: crypto_alloc_shash("crc32") failed, no crc32
		// implementation in the kernel.
		return &Error{Op: op, Kind: ErrNoRXE, Err: err, Msg: "rdma_rxe could not get the kernel's \"crc32\" " +
			"hash, which it needs for the RoCE ICRC: `modprobe crc32_generic` (as root), " +
			"or build the kernel with CONFIG_CRYPTO_CRC32"}
	case unix.EPERM:
		// EPERM also comes from rxe_newlink for a VLAN netdev.
		if t, lerr := c.linkType(netdev); lerr == nil && t == "vlan" {
			return &Error{Op: op, Err: err, Msg: fmt.Sprintf(
				"rxe refuses VLAN devices and %s is one: add the link on its parent device", netdev)}
		}
	}
	return wrap(op, err)
}

// whichExists names what NEWLINK collided with, and how to remove it.
func (c *client) whichExists(name, netdev string) string {
	devs, err := c.devices("")
	if err == nil {
		for _, d := range devs {
			if d.Name == name {
				return fmt.Sprintf("an RDMA device named %s already exists: pick another name, "+
					"or delete it with `rdma-link del %s`", name, name)
			}
		}
		for _, d := range devs {
			for _, p := range d.Ports {
				if p.Netdev == netdev && d.Driver == "rxe" {
					return fmt.Sprintf("%s already has an rxe device, %s: use it, "+
						"or delete it first with `rdma-link del %s`", netdev, d.Name, d.Name)
				}
			}
		}
	}
	return fmt.Sprintf("%s already has an rxe device, or the name %s is taken: "+
		"see `rdma-link show`, and delete the old link with `rdma-link del NAME`", netdev, name)
}

// waitListed polls the GET dump until name appears, up to appearTimeout.
func (c *client) waitListed(op, name string) error {
	deadline := time.Now().Add(c.appearTimeout)
	for {
		devs, err := c.dumpDevices()
		if err != nil {
			return err
		}
		for _, d := range devs {
			if d.Name == name {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return &Error{Op: op, Err: unix.ETIMEDOUT, Msg: fmt.Sprintf(
				"the kernel accepted the link, but %s was not listed within %v: check `dmesg`", name, c.appearTimeout)}
		}
		time.Sleep(c.pollInterval)
	}
}

func (c *client) linkDel(name string) error {
	op := "rdma link delete " + name
	if name == "" {
		return &Error{Op: op, Err: unix.EINVAL, Msg: "empty RDMA device name"}
	}
	devs, err := c.dumpDevices()
	if err != nil {
		return err
	}
	i := indexOf(devs, name)
	if i < 0 {
		return noDevice(op, name)
	}
	_, err = c.exec(delLinkRequest(devs[i].Index))
	if err == nil {
		return nil
	}
	if errnoOf(err) == unix.EINVAL {
		// nldev_dellink: the index is gone (deleted meanwhile), or the
		// driver does not allow user unregistration (IBK_ALLOW_USER_UNREG).
		if now, lerr := c.dumpDevices(); lerr == nil {
			if j := indexOf(now, name); j < 0 || now[j].Index != devs[i].Index {
				return noDevice(op, name)
			}
		}
		return &Error{Op: op, Err: err, Msg: fmt.Sprintf("%s cannot be deleted: only software devices "+
			"created with `rdma link add` (rxe, siw) can be", name)}
	}
	return wrap(op, err)
}

func indexOf(devs []Device, name string) int {
	for i, d := range devs {
		if d.Name == name {
			return i
		}
	}
	return -1
}
