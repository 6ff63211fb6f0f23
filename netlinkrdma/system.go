package netlinkrdma

import (
	"fmt"

	"github.com/goverbs/rdma/internal/abi"
)

// CopyOnFork reports whether the kernel copies pinned (registered) anonymous
// pages into a forked child instead of sharing them, which makes
// MADV_DONTFORK and ibv_fork_init unnecessary. Kernels from 5.13 on do
// (RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK = 1); older kernels do not send the
// attribute, and CopyOnFork returns false for them.
//
// Equivalent to: `rdma system show` (the copy-on-fork field).
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

// NetnsMode returns the RDMA subsystem's network namespace mode: "shared"
// (the default: every namespace sees every device) or "exclusive" (a device
// is visible only in the namespace it belongs to).
//
// Equivalent to: `rdma system show netns`.
func NetnsMode() (string, error) {
	m, err := std.netnsMode()
	return m, wrap("rdma system show netns", err)
}
