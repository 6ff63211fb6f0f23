// Package device opens the RDMA device and port the programs are told to
// use (-d, -i), the way rdma-core's example programs do.
package device

import (
	"errors"
	"fmt"

	"github.com/goverbs/rdma/uverbs"
)

// OpenPort opens the device called name (the first one for "") and reads
// port, which must be ACTIVE. On failure nothing stays open.
func OpenPort(name string, port int) (*uverbs.Device, uverbs.PortAttr, error) {
	if port < 1 || port > 255 {
		return nil, uverbs.PortAttr{}, fmt.Errorf("port %d out of range: ports are numbered from 1 to 255", port)
	}
	dev, err := uverbs.Open(name)
	if err != nil {
		return nil, uverbs.PortAttr{}, err
	}
	attr, err := dev.QueryPort(uint8(port))
	if err == nil && attr.State != uverbs.PortActive {
		err = fmt.Errorf("is %v, not ACTIVE: is its network device up?", attr.State)
	}
	if err != nil {
		return nil, uverbs.PortAttr{}, errors.Join(fmt.Errorf("port %d of %s: %w", port, dev.Name(), err), dev.Close())
	}
	return dev, attr, nil
}

// Check makes sure, before a program waits for its peer, that what -d, -i
// and the GID index name exists: the device (the error names the devices
// there are), the port, ACTIVE, and for gidIdx >= 0 a valid entry of the
// port's GID table. perftest refuses these at start-up too, before it
// listens. It opens nothing that stays open.
func Check(name string, port, gidIdx int) error {
	dev, _, err := OpenPort(name, port)
	if err != nil {
		return err
	}
	if gidIdx >= 0 {
		if _, gerr := dev.QueryGID(uint8(port), gidIdx); gerr != nil {
			err = fmt.Errorf("GID index %d of %s port %d: %w (rdma-devinfo -v lists the port's GIDs)", gidIdx, dev.Name(), port, gerr)
		}
	}
	return errors.Join(err, dev.Close())
}
