package uverbs

import (
	"os"
	"sync"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
)

// The mlx5 side of the provider seam (provider.go): the context
// (mlx5.Context: UAR pages, bfregs, limits, user indexes), the commands'
// driver data, and the user-allocated rings (mlx5.Queue).
// docs/mlx5.md §10 lists the facts followed and where this differs from
// libmlx5.

// getMLX5Context runs GET_CONTEXT with mlx5's driver data and maps the UAR
// pages. It fills c.async and c.numCompVectors as getContext does.
func (c *Device) getMLX5Context() error {
	const op = "get_context"
	pageSize := os.Getpagesize()
	var req struct {
		core abi.UverbsGetContext
		drv  abi.Mlx5AllocUcontextReqV2
	}
	req.drv = mlx5.AllocUcontextReq(pageSize)
	var resp struct {
		core abi.UverbsGetContextResp
		drv  abi.Mlx5AllocUcontextResp
	}
	if err := c.write(op, abi.IB_USER_VERBS_CMD_GET_CONTEXT, bytesOf(&req), bytesOf(&resp)); err != nil {
		return err
	}
	ev, err := sys.NewEventFile(int(resp.core.AsyncFD), "uverbs async events "+c.dev.Name)
	if err != nil {
		return &OpError{Op: op, Err: err}
	}
	c.async = ev
	c.numCompVectors = int(resp.core.NumCompVectors)
	mmap := func(off int64, n int, what string) (*sys.Mapping, error) { return sys.MmapShared(c.fd, off, n, what) }
	newLock := func() sync.Locker { return new(ringLock) }
	mc, err := mlx5.NewContext(&resp.drv, c.dev.Name, pageSize, int(req.drv.NumLowLatencyBfregs), mmap, newLock)
	if err != nil {
		c.async.Close()
		c.async = nil
		return &OpError{Op: op, Err: err}
	}
	c.mlx = mc
	return nil
}

// mlx5QPType maps a QP type to the provider's (both enum ib_qp_type).
func mlx5QPType(t QPType) mlx5.QPType { return mlx5.QPType(t) }
