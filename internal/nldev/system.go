package nldev

import (
	"fmt"

	"github.com/goverbs/rdma/internal/abi"
)

// CopyOnFork is netlinkrdma.CopyOnFork (documented there).
func CopyOnFork() (bool, error) { return std.copyOnFork() }

func (c *client) copyOnFork() (bool, error) {
	const op = "rdma system show"
	msgs, err := c.exec(sysGetRequest())
	if err == nil && len(msgs) == 0 {
		err = fmt.Errorf("no reply from the kernel")
	}
	if err != nil {
		return false, wrap(op, err)
	}
	a, err := parseAttrs(msgs[0])
	if err != nil {
		return false, wrap(op, err)
	}
	v, err := a.u8(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK)
	if err != nil {
		return false, wrap(op, err)
	}
	return v != 0, nil
}

// NetnsMode is netlinkrdma.NetnsMode (documented there).
func NetnsMode() (string, error) {
	m, err := std.netnsMode()
	return m, wrap("rdma system show netns", err)
}
