package uverbs

import (
	"fmt"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
)

// mlx5CQ is the mlx5 state of a CQ: the provider's decoder over the ring
// and doorbell record this process allocated. Guarded by CQ.mu.
type mlx5CQ struct {
	q   *mlx5.CQ
	mem *mlx5.Queue
	// srqs is set once a QP with an SRQ completes here: polls then take
	// the Device's SRQ lock, since they return entries to the SRQ.
	srqs bool
}

// createMLX5 creates the CQ with a ring of its own (verbs.c create_cq,
// cq.c mlx5_alloc_cq_buf): roundup_pow2(depth+1) zeroed entries marked
// invalid, CREATE_CQ with cqe = entries−1 and the ring's and doorbell
// record's addresses (docs/mlx5.md §5, §8).
func (cq *CQ) createMLX5(op string, req *abi.UverbsCreateCQ, depth int) error {
	c := cq.ctx
	entries, err := mlx5.CQEntries(depth)
	if err != nil {
		return &OpError{Op: op, Err: err}
	}
	mem, err := mlx5.NewQueue(entries*mlx5.CQESize, "cq ring "+c.dev.Name)
	if err != nil {
		return &OpError{Op: op, Err: err}
	}
	mlx5.InitCQRing(mem.Ring)
	req.CQE = uint32(entries - 1)
	cmd := struct {
		core abi.UverbsCreateCQ
		drv  abi.Mlx5CreateCQ
	}{*req, mlx5.CreateCQCmd(mem.RingAddr(), mem.DBRecAddr())}
	var resp struct {
		core abi.UverbsCreateCQResp
		drv  abi.Mlx5CreateCQResp
	}
	if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_CQ, bytesOf(&cmd), bytesOf(&resp)); err != nil {
		mem.Unmap()
		return err
	}
	cq.handle = resp.core.CQHandle
	if err := cq.attachMLX5(mem, entries, resp.drv.Cqn); err != nil {
		cq.destroy()
		mem.Unmap()
		return &OpError{Op: op, Err: err}
	}
	return nil
}

// attachMLX5 builds the decoder of a created CQ over its ring.
func (cq *CQ) attachMLX5(mem *mlx5.Queue, entries int, cqn uint32) error {
	mc := cq.ctx.mlx
	// ClearWC: the fields a completion does not fill are zero in a WC.
	q, err := mlx5.NewCQ(mem.Ring, mem.DBRec[:8], mc.CQUAR, mlx5.CQConfig{CQN: cqn, Entries: entries, CQEVersion: mc.CQEVersion, ClearWC: true})
	if err != nil {
		return err
	}
	cq.mx = &mlx5CQ{q: q, mem: mem}
	// ibv_cq.cqe: the entries less the one libmlx5 keeps free.
	cq.depth.Store(int32(entries - 1))
	return nil
}

// poll decodes up to len(wcs) completions into wcs. The caller holds
// CQ.mu.
func (m *mlx5CQ) poll(mc *mlx5.Context, wcs []WC) (int, error) {
	if m.srqs {
		mc.SRQMu.Lock()
		defer mc.SRQMu.Unlock()
	}
	n, err := m.q.Poll(mlx5.WCs(wcs))
	if err != nil {
		return n, mlx5PollError(err)
	}
	return n, nil
}

func mlx5PollError(err error) error {
	return &OpError{Op: "poll_cq", Err: fmt.Errorf("a completion entry names no QP or SRQ of this CQ or has an opcode this package never asks for; it was consumed: %w", err)}
}

// pull moves every completion in the ring to pending, skipping entries
// that name no queue of the CQ (a QP closed before). The caller holds
// CQ.mu.
func (m *mlx5CQ) pull(mc *mlx5.Context, pending *[]WC) {
	var w [1]WC
	for {
		n, err := m.poll(mc, w[:])
		if n == 1 {
			*pending = append(*pending, w[0])
			continue
		}
		if err == nil {
			return
		}
	}
}

// mlx5Event counts a completion event of the CQ for its next arm
// (cq.c mlx5_cq_event).
func (cq *CQ) mlx5Event() {
	cq.mu.Lock()
	if cq.mx != nil {
		cq.mx.q.Event()
	}
	cq.mu.Unlock()
}

// registerMLX5 makes the CQ complete qp's work requests (key: the QPN, or
// the user index with CQE version 1).
func (cq *CQ) registerMLX5(key uint32, qp *mlx5.QP) {
	cq.mu.Lock()
	if cq.mx != nil {
		cq.mx.q.RegisterQP(key, qp)
		if qp.SRQ != nil {
			cq.mx.srqs = true
		}
	}
	cq.mu.Unlock()
}

func (cq *CQ) registerMLX5SRQ(key uint32, srq *mlx5.SRQ) {
	cq.mu.Lock()
	if cq.mx != nil {
		cq.mx.q.RegisterSRQ(key, srq)
		cq.mx.srqs = true
	}
	cq.mu.Unlock()
}

func (cq *CQ) unregisterMLX5(key uint32) {
	cq.mu.Lock()
	if cq.mx != nil {
		cq.mx.q.Unregister(key)
	}
	cq.mu.Unlock()
}
