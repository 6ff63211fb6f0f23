package uverbs

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/goverbs/rdma/internal/nldev"
	"github.com/goverbs/rdma/internal/unix"
)

// netlinkDevices lists devices the way rdma-core does first
// (rdma-core: libibverbs/ibdev_nl.c find_sysfs_devs_nl): an nldev GET dump,
// then GET_CHARDEV "uverbs" per device for the char device, the driver ABI
// and the driver id. A device without a uverbs char device (no ib_uverbs
// client, e.g. a kernel-only device) is skipped, as rdma-core skips it.
func netlinkDevices() ([]DeviceInfo, error) {
	nds, err := nldev.Devices()
	if err != nil {
		return nil, err
	}
	devs := make([]DeviceInfo, 0, len(nds))
	for _, nd := range nds {
		cd, err := nldev.DeviceChardev(nd.Index, "uverbs")
		if err != nil {
			if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOENT) || errors.Is(err, nldev.ErrDeviceNotFound) {
				continue
			}
			return nil, fmt.Errorf("finding the uverbs device of %s: %w", nd.Name, err)
		}
		d := DeviceInfo{
			Name:         nd.Name,
			Index:        nd.Index,
			NodeGUID:     nd.NodeGUID,
			SysImageGUID: nd.SysImageGUID,
			NodeType:     nd.NodeType,
			FWVersion:    nd.FirmwareVersion,
			DriverID:     cd.DriverID,
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
				Number:      uint8(p.Index),
				State:       p.State,
				PhysState:   p.PhysState,
				Netdev:      p.Netdev,
				NetdevIndex: int(p.NetdevIndex),
			})
		}
		devs = append(devs, d)
	}
	return devs, nil
}
