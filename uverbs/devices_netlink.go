package uverbs

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/netlinkrdma"
)

// netlinkDevices lists devices the way rdma-core does first
// (rdma-core: libibverbs/ibdev_nl.c find_sysfs_devs_nl): an nldev GET dump,
// then GET_CHARDEV "uverbs" per device for the char device, the driver ABI
// and the driver id. A device without a uverbs char device (no ib_uverbs
// client, e.g. a kernel-only device) is skipped, as rdma-core skips it.
func netlinkDevices() ([]DeviceInfo, error) {
	nds, err := netlinkrdma.Devices()
	if err != nil {
		return nil, err
	}
	devs := make([]DeviceInfo, 0, len(nds))
	for _, nd := range nds {
		cd, err := netlinkrdma.DeviceChardev(nd.Index, "uverbs")
		if err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOENT) || errors.Is(err, netlinkrdma.ErrNoDevice) {
				continue
			}
			return nil, fmt.Errorf("finding the uverbs device of %s: %w", nd.Name, err)
		}
		d := DeviceInfo{
			Name:         nd.Name,
			Index:        nd.Index,
			NodeGUID:     GUID(nd.NodeGUID),
			SysImageGUID: GUID(nd.SysImageGUID),
			NodeType:     NodeType(nd.NodeType),
			FWVersion:    nd.FirmwareVersion,
			DriverID:     DriverID(cd.DriverID),
			Uverbs:       cd.Name,
			Path:         filepath.Join(devfsRoot, cd.Name),
			ABIVersion:   int(cd.ABI),
			Source:       "netlink",
		}
		d.Driver = d.DriverID.String()
		if d.DriverID == DriverUnknown {
			d.Driver = ""
		}
		for _, p := range nd.Ports {
			d.Ports = append(d.Ports, PortInfo{
				Number:      int(p.Index),
				State:       PortState(p.State),
				PhysState:   PhysState(p.PhysState),
				Netdev:      p.Netdev,
				NetdevIndex: int(p.NetdevIndex),
			})
		}
		devs = append(devs, d)
	}
	return devs, nil
}
