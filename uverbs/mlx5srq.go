package uverbs

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
)

// mlx5SRQ is the mlx5 state of an SRQ: its ring and doorbell record, and
// the free list the provider keeps in the ring. Posts hold SRQ.mu and the
// Device's srqMu; polls that free entries hold srqMu.
type mlx5SRQ struct {
	q   *mlx5.SRQ
	mem *mlx5.Queue
}

// createMLX5 sizes the SRQ as libmlx5 does (srq.c mlx5_alloc_srq_buf),
// prepares its free list and issues CREATE_SRQ with max_wr = entries − 1
// and mlx5's driver data (verbs.c mlx5_create_srq). A basic SRQ has no user
// index: completions name it by SRQN (CQE version 0) or name the QP, whose
// SRQ it is (version 1).
func (srq *SRQ) createMLX5(op string, req *abi.UverbsCreateSRQ, init SRQInit) error {
	c := srq.ctx
	mc := c.mlx
	if err := mlx5.CheckSRQAttr(&mc.Lim, init.MaxWR, init.MaxSGE); err != nil {
		return &OpError{Op: op, Err: err}
	}
	cfg, ringBytes, err := mlx5.SRQSize(&mc.Lim, init.MaxWR, init.MaxSGE)
	if err != nil {
		return &OpError{Op: op, Err: fmt.Errorf("%v: %w", err, unix.EINVAL)}
	}
	mem, err := mlx5.NewQueue(ringBytes, "srq ring "+c.dev.Name)
	if err != nil {
		return &OpError{Op: op, Err: err}
	}
	fail := func(err error) error {
		mem.Unmap()
		return err
	}
	q, err := mlx5.NewSRQ(mem.Ring, mem.DBRec[:4], cfg)
	if err != nil {
		return fail(&OpError{Op: op, Err: err})
	}
	req.MaxWR = uint32(mlx5.SRQCoreMaxWR(cfg))
	req.MaxSGE = uint32(cfg.MaxSGE)
	cmd := struct {
		core abi.UverbsCreateSRQ
		drv  abi.Mlx5CreateSRQ
	}{*req, mlx5.CreateSRQCmd(mem.RingAddr(), mem.DBRecAddr())}
	var resp struct {
		core abi.UverbsCreateSRQResp
		drv  abi.Mlx5CreateSRQResp
	}
	if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_SRQ, bytesOf(&cmd), bytesOf(&resp)); err != nil {
		return fail(err)
	}
	srq.handle, srq.srqn = resp.core.SRQHandle, resp.core.SRQN
	srq.mx = &mlx5SRQ{q: q, mem: mem}
	return nil
}

// postRecv validates and posts receives (srq.c mlx5_post_srq_recv). The
// caller holds SRQ.mu.
func (m *mlx5SRQ) postRecv(op string, mc *mlx5.Context, wrs []RecvWR) error {
	if err := validateRecvs(op, wrs, m.q.Config().MaxSGE); err != nil {
		return err
	}
	mc.SRQMu.Lock()
	i, err := m.q.Post(wrs)
	mc.SRQMu.Unlock()
	if err != nil {
		return mlx5PostError(op, i, wrs[i].ID, len(wrs), m.q.Config().WQECount-1, err)
	}
	return nil
}

// posted counts the posted receives and reports whether one names lkey.
// The caller holds SRQ.mu.
func (m *mlx5SRQ) posted(mc *mlx5.Context, lkey uint32) (n int, usesLKey bool) {
	mc.SRQMu.Lock() // polls return entries to the free list
	defer mc.SRQMu.Unlock()
	return m.q.Posted(lkey)
}
