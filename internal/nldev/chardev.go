package nldev

import (
	"fmt"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
)

// Chardev is the character device through which user space reaches an RDMA
// kernel client: /dev/infiniband/uverbsN for verbs, /dev/infiniband/rdma_cm
// for the connection manager.
type Chardev struct {
	Name  string // node name under /dev/infiniband, e.g. "uverbs0", "rdma_cm"
	Major uint32
	Minor uint32
	// ABI is the client's ABI version: for "uverbs" the driver's
	// (uverbs_abi_ver, 2 for rxe), for "rdma_cm" RDMA_USER_CM_ABI_VERSION (4).
	ABI uint64
	// DriverID is the enum rdma_driver_id of the device ("uverbs" only;
	// 14 for rxe). It is what rdma-core matches a provider by.
	DriverID rdma.DriverID
}

// Path returns the device node, "/dev/infiniband/" + Name.
func (c Chardev) Path() string { return "/dev/infiniband/" + c.Name }

// Dev returns the device number as unix.Mkdev builds it, for comparing with
// Stat_t.Rdev of Path.
func (c Chardev) Dev() uint64 { return unix.Mkdev(c.Major, c.Minor) }

// DeviceChardev is netlinkrdma.DeviceChardev (documented there).
func DeviceChardev(devIndex uint32, typ string) (Chardev, error) {
	return std.chardev(devIndex, false, typ)
}

// GlobalChardev is netlinkrdma.GlobalChardev (documented there).
func GlobalChardev(typ string) (Chardev, error) {
	return std.chardev(0, true, typ)
}

func (c *client) chardev(devIndex uint32, global bool, typ string) (Chardev, error) {
	op := fmt.Sprintf("get char device %q", typ)
	if !global {
		op += fmt.Sprintf(" of RDMA device %d", devIndex)
	}
	if typ == "" {
		return Chardev{}, &Error{Op: op, Err: unix.EINVAL, Msg: "empty char device type: use \"uverbs\" or \"rdma_cm\""}
	}
	msgs, err := c.exec(chardevRequest(devIndex, global, typ))
	if err == nil && len(msgs) == 0 {
		err = fmt.Errorf("no reply from the kernel")
	}
	if err != nil {
		switch errnoOf(err) {
		case unix.EOPNOTSUPP:
			// ib_get_client_nl_info: no client of that name with a char
			// device of the asked kind (per device or global), even after
			// request_module("rdma-client-<typ>").
			return Chardev{}, &Error{Op: op, Err: err, Msg: chardevHint(typ, global)}
		case unix.EINVAL:
			// nldev_get_chardev: unknown device index, or a per-device
			// request for a global-only client (rdma_cm) and vice versa.
			if !global {
				if devs, lerr := c.dumpDevices(); lerr == nil && !hasIndex(devs, devIndex) {
					return Chardev{}, &Error{Op: op, Kind: ErrDeviceNotFound, Err: err,
						Msg: fmt.Sprintf("no RDMA device with index %d: list devices with `rdma-link show`", devIndex)}
				}
			}
		}
		return Chardev{}, wrap(op, err)
	}
	cd, err := parseChardev(msgs[0])
	if err != nil {
		return Chardev{}, wrap(op, err)
	}
	return cd, nil
}

func chardevHint(typ string, global bool) string {
	switch {
	case typ == "uverbs" && global:
		return "uverbs char devices belong to a device: use DeviceChardev with the device's index"
	case typ == "rdma_cm" && !global:
		return "there is one rdma_cm char device for all devices: use GlobalChardev"
	case typ == "uverbs":
		return "the kernel has no uverbs client: load it with `modprobe ib_uverbs` (as root)"
	case typ == "rdma_cm":
		return "the kernel has no rdma_cm client: load it with `modprobe rdma_ucm` (as root)"
	}
	return fmt.Sprintf("the kernel has no RDMA client %q with a char device; "+
		"the usual ones are \"uverbs\" (per device) and \"rdma_cm\" (global)", typ)
}

func hasIndex(devs []Device, index uint32) bool {
	for _, d := range devs {
		if d.Index == index {
			return true
		}
	}
	return false
}

// parseChardev decodes a GET_CHARDEV reply (core/nldev.c nldev_get_chardev).
func parseChardev(payload []byte) (Chardev, error) {
	a, err := parseAttrs(payload)
	if err != nil {
		return Chardev{}, err
	}
	if !a.has(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME) || !a.has(abi.RDMA_NLDEV_ATTR_CHARDEV) {
		return Chardev{}, fmt.Errorf("char device reply without name or device number")
	}
	var cd Chardev
	dev, err := a.u64(abi.RDMA_NLDEV_ATTR_CHARDEV)
	if err != nil {
		return Chardev{}, err
	}
	if cd.ABI, err = a.u64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI); err != nil {
		return Chardev{}, err
	}
	id, err := a.uint(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID)
	if err != nil {
		return Chardev{}, err
	}
	cd.Name = a.str(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME)
	cd.Major, cd.Minor = decodeHugeDev(dev)
	cd.DriverID = rdma.DriverID(id)
	return cd, nil
}

// decodeHugeDev splits the kernel's huge_encode_dev() form of a dev_t
// (minor low byte, then 12 bits of major, then the upper minor bits), as
// rdma-core decodes RDMA_NLDEV_ATTR_CHARDEV.
func decodeHugeDev(v uint64) (major, minor uint32) {
	major = uint32((v & 0xfff00) >> 8)
	minor = uint32((v & 0xff) | ((v >> 12) & 0xfff00))
	return major, minor
}
