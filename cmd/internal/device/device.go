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
	dev, err := uverbs.Open(name)
	if err != nil {
		return nil, uverbs.PortAttr{}, err
	}
	attr, err := dev.QueryPort(port)
	if err == nil && attr.State != uverbs.PortActive {
		err = fmt.Errorf("is %v, not ACTIVE: is its network device up?", attr.State)
	}
	if err != nil {
		return nil, uverbs.PortAttr{}, errors.Join(fmt.Errorf("port %d of %s: %w", port, dev.Name(), err), dev.Close())
	}
	return dev, attr, nil
}
