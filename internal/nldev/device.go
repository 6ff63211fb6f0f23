package nldev

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
)

// Device is an RDMA device (an ib_device) as RDMA netlink describes it.
type Device struct {
	Index           uint32 // kernel device index (RDMA_NLDEV_ATTR_DEV_INDEX)
	Name            string // e.g. "rxe0"
	NodeGUID        rdma.GUID
	SysImageGUID    rdma.GUID
	FirmwareVersion string        // empty when the driver has none
	NodeType        rdma.NodeType // RDMA_NODE_*: 1 is a channel adapter (CA), which rxe is
	Protocol        string        // "roce", "ib", "iw", ...
	// Driver names the kernel driver: "rxe" for Soft-RoCE, the lower-case
	// rdma_driver_id name for other known drivers, "driver-<id>" for
	// unknown ones. It is empty when the device has no uverbs char device
	// (ib_uverbs not available).
	Driver   string
	DriverID rdma.DriverID // enum rdma_driver_id; 14 is rxe
	Ports    []Port        // by port number, starting at 1
}

// Port is one port of an RDMA device.
type Port struct {
	Index       uint32 // port number, from 1
	State       rdma.PortState
	PhysState   rdma.PhysState
	Netdev      string // RoCE/iWARP netdev, e.g. "eth0"; empty for InfiniBand
	NetdevIndex uint32 // ifindex of Netdev
}

// Devices lists the RDMA devices of this network namespace, ordered by
// index, with their ports and driver: a GET dump, then a PORT_GET dump and
// a GET_CHARDEV "uverbs" request per device (uverbs.Devices builds on it).
func Devices() ([]Device, error) { return std.devices("") }

// DeviceByName returns the RDMA device called name; when there is none the
// error matches ErrDeviceNotFound.
func DeviceByName(name string) (Device, error) { return std.deviceByName(name) }

func (c *client) deviceByName(name string) (Device, error) {
	devs, err := c.devices(name)
	if err != nil {
		return Device{}, err
	}
	if len(devs) == 0 {
		return Device{}, noDevice("rdma dev show "+name, name)
	}
	return devs[0], nil
}

func noDevice(op, name string) error {
	return &Error{Op: op, Kind: ErrDeviceNotFound,
		Msg: fmt.Sprintf("no RDMA device %q: list devices with `rdma-link show`, "+
			"create a Soft-RoCE device with `rdma-link add rxe0 netdev eth0`", name)}
}

// devices lists all devices, or only the one called only when it is not
// empty, with ports and driver. A device that disappears while it is being
// described makes the whole listing start again.
func (c *client) devices(only string) ([]Device, error) {
	var err error
	for range dumpAttempts {
		var devs []Device
		devs, err = c.dumpDevices()
		if err != nil {
			return nil, err
		}
		if only != "" {
			devs = slices.DeleteFunc(devs, func(d Device) bool { return d.Name != only })
		}
		err = nil
		for i := range devs {
			if err = c.describe(&devs[i]); err != nil {
				break
			}
		}
		if err == nil {
			return devs, nil
		}
		// EINVAL/ENODEV here means the device index went away between the
		// GET dump and this request (ib_device_get_by_index failed).
		if e := errnoOf(err); e != unix.EINVAL && e != unix.ENODEV {
			return nil, err
		}
	}
	return nil, err
}

// dumpDevices runs the GET dump: names, indexes, GUIDs, no ports.
func (c *client) dumpDevices() ([]Device, error) {
	const op = "rdma dev show"
	var err error
	for range dumpAttempts {
		var msgs [][]byte
		msgs, err = c.exec(getDumpRequest())
		if isDumpInterrupted(err) {
			continue
		}
		if err != nil {
			return nil, wrap(op, err)
		}
		devs := make([]Device, 0, len(msgs))
		for _, m := range msgs {
			d, err := parseDevice(m)
			if err != nil {
				return nil, wrap(op, err)
			}
			devs = append(devs, d)
		}
		slices.SortFunc(devs, func(a, b Device) int { return cmp.Compare(a.Index, b.Index) })
		return devs, nil
	}
	return nil, wrap(op, err)
}

// describe fills in the ports and the driver of d.
func (c *client) describe(d *Device) error {
	op := "rdma link show " + d.Name
	var msgs [][]byte
	var err error
	for range dumpAttempts {
		msgs, err = c.exec(portDumpRequest(d.Index))
		if !isDumpInterrupted(err) {
			break
		}
	}
	if err != nil {
		return wrap(op, err)
	}
	d.Ports = d.Ports[:0]
	for _, m := range msgs {
		p, devIndex, err := parsePort(m)
		if err != nil {
			return wrap(op, err)
		}
		if devIndex != d.Index {
			return wrap(op, fmt.Errorf("PORT_GET for device %d answered for device %d", d.Index, devIndex))
		}
		d.Ports = append(d.Ports, p)
	}
	slices.SortFunc(d.Ports, func(a, b Port) int { return cmp.Compare(a.Index, b.Index) })

	cd, err := c.chardev(d.Index, false, "uverbs")
	switch e := errnoOf(err); {
	case err == nil:
		d.DriverID = cd.DriverID
		d.Driver = cd.DriverID.String()
	case e == unix.EOPNOTSUPP || e == unix.ENOENT:
		// No uverbs client for this device (ib_uverbs missing): no driver id.
	default:
		return err
	}
	return nil
}

// parseDevice decodes one RDMA_NLDEV_CMD_GET reply (core/nldev.c fill_dev_info).
func parseDevice(payload []byte) (Device, error) {
	a, err := parseAttrs(payload)
	if err != nil {
		return Device{}, err
	}
	if !a.has(abi.RDMA_NLDEV_ATTR_DEV_INDEX) || !a.has(abi.RDMA_NLDEV_ATTR_DEV_NAME) {
		return Device{}, fmt.Errorf("device reply without index or name")
	}
	var d Device
	var nodeGUID, sysGUID uint64
	if d.Index, err = a.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX); err != nil {
		return Device{}, err
	}
	if nodeGUID, err = a.u64(abi.RDMA_NLDEV_ATTR_NODE_GUID); err != nil {
		return Device{}, err
	}
	if sysGUID, err = a.u64(abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID); err != nil {
		return Device{}, err
	}
	var nodeType uint8
	if nodeType, err = a.u8(abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE); err != nil {
		return Device{}, err
	}
	d.Name = a.str(abi.RDMA_NLDEV_ATTR_DEV_NAME)
	d.FirmwareVersion = a.str(abi.RDMA_NLDEV_ATTR_FW_VERSION)
	d.Protocol = a.str(abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL)
	d.NodeGUID, d.SysImageGUID, d.NodeType = rdma.GUID(nodeGUID), rdma.GUID(sysGUID), rdma.NodeType(nodeType)
	return d, nil
}

// parsePort decodes one RDMA_NLDEV_CMD_PORT_GET reply (core/nldev.c
// fill_port_info) and returns the device index it belongs to.
func parsePort(payload []byte) (Port, uint32, error) {
	a, err := parseAttrs(payload)
	if err != nil {
		return Port{}, 0, err
	}
	if !a.has(abi.RDMA_NLDEV_ATTR_DEV_INDEX) || !a.has(abi.RDMA_NLDEV_ATTR_PORT_INDEX) {
		return Port{}, 0, fmt.Errorf("port reply without device or port index")
	}
	var p Port
	var devIndex uint32
	var state, phys uint8
	if devIndex, err = a.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX); err != nil {
		return Port{}, 0, err
	}
	if p.Index, err = a.u32(abi.RDMA_NLDEV_ATTR_PORT_INDEX); err != nil {
		return Port{}, 0, err
	}
	if state, err = a.u8(abi.RDMA_NLDEV_ATTR_PORT_STATE); err != nil {
		return Port{}, 0, err
	}
	if phys, err = a.u8(abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE); err != nil {
		return Port{}, 0, err
	}
	if p.NetdevIndex, err = a.u32(abi.RDMA_NLDEV_ATTR_NDEV_INDEX); err != nil {
		return Port{}, 0, err
	}
	p.State, p.PhysState = rdma.PortState(state), rdma.PhysState(phys)
	p.Netdev = a.str(abi.RDMA_NLDEV_ATTR_NDEV_NAME)
	return p, devIndex, nil
}
