package rdmacm

import (
	"errors"
	"fmt"
	"sync"

	"github.com/goverbs/rdma/uverbs"
)

// devices is the process's map from the CM's devices to uverbs devices,
// and the devices and PDs its connections share. librdmacm does the same:
// it lists the devices once (ucma_init), opens each one once and gives all
// its connections on a device one PD (rdma-core: librdmacm/cma.c
// ucma_get_device, ucma_init_device, cma_dev->pd).
//
// The listing is read again only when the CM names a device it does not
// hold (one that appeared, or was made again with a new index) or when
// opening a listed device fails (one that went). An opened device is
// closed when its last connection is closed, so that a program that ends
// its connections holds no RDMA file descriptors.
var devices deviceCache

type deviceCache struct {
	mu     sync.Mutex
	listed []uverbs.DeviceInfo
	open   map[uverbs.GUID]*sharedDevice
}

// sharedDevice is an opened device with the PD that the connections on it
// use, counted by its users.
type sharedDevice struct {
	dev  *uverbs.Device
	pd   *uverbs.PD
	refs int
}

// lookup returns the device with that node GUID (and kernel index, when
// both sides know it: a device made again has a new one).
func (c *deviceCache) lookup(guid uverbs.GUID, index uint32) (uverbs.DeviceInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := findDevice(c.listed, guid, index); ok {
		return d, nil
	}
	listed, err := uverbs.Devices()
	if err != nil {
		return uverbs.DeviceInfo{}, err
	}
	c.listed = listed
	if d, ok := findDevice(c.listed, guid, index); ok {
		return d, nil
	}
	return uverbs.DeviceInfo{}, fmt.Errorf("the CM chose the RDMA device with node GUID %v (index %d), which has no uverbs device here: %w", guid, index, uverbs.ErrNoDevice)
}

func findDevice(devs []uverbs.DeviceInfo, guid uverbs.GUID, index uint32) (uverbs.DeviceInfo, bool) {
	for _, d := range devs {
		if d.NodeGUID != guid {
			continue
		}
		if d.Source == "netlink" && index != ^uint32(0) && d.Index != index {
			continue
		}
		return d, true
	}
	return uverbs.DeviceInfo{}, false
}

// acquire returns the shared PD of info's device, opening the device and
// allocating the PD on first use; release gives it back.
func (c *deviceCache) acquire(info uverbs.DeviceInfo) (*sharedDevice, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sd := c.open[info.NodeGUID]; sd != nil && sd.dev.Info().Name == info.Name {
		sd.refs++
		return sd, nil
	}
	dev, err := uverbs.OpenDevice(info)
	if err != nil {
		// The device may have gone: list again next time.
		c.listed = nil
		return nil, err
	}
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	if c.open == nil {
		c.open = make(map[uverbs.GUID]*sharedDevice)
	}
	sd := &sharedDevice{dev: dev, pd: pd, refs: 1}
	if old := c.open[info.NodeGUID]; old != nil {
		// A device of the same GUID under another name: the old one went
		// and its users close it when they end.
		delete(c.open, info.NodeGUID)
	}
	c.open[info.NodeGUID] = sd
	return sd, nil
}

// release drops a user of sd; the last one closes the device, and with it
// the PD and whatever is still registered there (kernel: the uverbs file's
// release destroys its objects).
func (c *deviceCache) release(sd *sharedDevice) error {
	if sd == nil {
		return nil
	}
	c.mu.Lock()
	sd.refs--
	last := sd.refs == 0
	if last && c.open[sd.dev.Info().NodeGUID] == sd {
		delete(c.open, sd.dev.Info().NodeGUID)
	}
	c.mu.Unlock()
	if !last {
		return nil
	}
	return sd.dev.Close()
}
