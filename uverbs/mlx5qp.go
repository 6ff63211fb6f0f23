package uverbs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// mlx5QP is the mlx5 state of a QP: one buffer with the receive queue at 0
// and the send queue after it, the doorbell record, and the bfreg the
// kernel chose (docs/mlx5.md §1, §10). sq is posted to under QP.sendMu, rq
// under QP.recvMu, and their CQs' polls retire their requests under the
// CQ's lock; the two sides share only what mlx5.SQ and mlx5.RQ order.
type mlx5QP struct {
	mem            *mlx5.Queue
	rqRing, sqRing []byte // in mem.Ring
	sq             *mlx5.SQ
	rq             *mlx5.RQ // nil with an SRQ
	bf             *mlx5.BFReg
	reg            mlx5.QP
	key            uint32 // what completions name the QP by: QPN or user index
	uidx           uint32
}

// createMLX5 sizes the queues as libmlx5 does (verbs.c mlx5_calc_sq_size,
// mlx5_calc_rq_size), allocates the buffer and doorbell record, and issues
// CREATE_QP with mlx5's driver data.
func (qp *QP) createMLX5(op string, req *abi.UverbsCreateQP, init *QPInit) error {
	c := qp.ctx
	mc := c.mlx
	sqCfg, sqBytes, err := mlx5.SQSize(&mc.Lim, mlx5QPType(init.Type), init.Cap.MaxSendWR, init.Cap.MaxSendSGE, init.Cap.MaxInline)
	if err != nil {
		return &OpError{Op: op, Err: fmt.Errorf("%v: %w", err, unix.EINVAL)}
	}
	var rqCfg mlx5.RQConfig
	rqBytes := 0
	if init.SRQ == nil {
		if rqCfg, rqBytes, err = mlx5.RQSize(&mc.Lim, init.Cap.MaxRecvWR, init.Cap.MaxRecvSGE); err != nil {
			return &OpError{Op: op, Err: fmt.Errorf("%v: %w", err, unix.EINVAL)}
		}
	}
	uidx, err := mc.AllocUIDX()
	if err != nil {
		return &OpError{Op: op, Err: err}
	}
	// libmlx5 passes the send queue's inline size, not the caller's
	// (docs/mlx5.md §10).
	req.MaxInlineData = mlx5.CoreMaxInline(sqCfg)
	mem, err := mlx5.NewQueue(rqBytes+sqBytes, "qp buffer "+c.dev.Name)
	if err != nil {
		mc.FreeUIDX(uidx)
		return &OpError{Op: op, Err: err}
	}
	fail := func(err error) error {
		mem.Unmap()
		mc.FreeUIDX(uidx)
		return err
	}
	cmd := struct {
		core abi.UverbsCreateQP
		drv  abi.Mlx5CreateQP
	}{*req, mlx5.CreateQPCmd(mem.RingAddr(), mem.DBRecAddr(), sqCfg, rqCfg, uidx)}
	var resp struct {
		core abi.UverbsCreateQPResp
		drv  abi.Mlx5CreateQPResp
	}
	if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_QP, bytesOf(&cmd), bytesOf(&resp)); err != nil {
		return fail(err)
	}
	qp.handle, qp.qpn = resp.core.QPHandle, resp.core.QPN
	if err := qp.attachMLX5(mem, uidx, int(resp.drv.BfregIndex), sqCfg, rqCfg, init); err != nil {
		qp.destroy()
		return fail(&OpError{Op: op, Err: err})
	}
	return nil
}

// attachMLX5 builds the queues of a created QP over its buffer and
// registers them with the CQs (and the SRQ's in the receive CQ).
func (qp *QP) attachMLX5(mem *mlx5.Queue, uidx uint32, bfi int, sqCfg mlx5.SQConfig, rqCfg mlx5.RQConfig, init *QPInit) error {
	c := qp.ctx
	mc := c.mlx
	rqBytes := rqCfg.WQECount << rqCfg.WQEShift
	var err error
	m := &mlx5QP{mem: mem, uidx: uidx, key: qp.qpn, rqRing: mem.Ring[:rqBytes], sqRing: mem.Ring[rqBytes:]}
	if mc.CQEVersion == 1 {
		m.key = uidx
	}
	if bfi >= len(mc.BFRegs) {
		return fmt.Errorf("the kernel gave the QP bfreg %d, but the context has %d", bfi, len(mc.BFRegs))
	}
	m.bf = &mc.BFRegs[bfi]
	sqCfg.QPN = qp.qpn
	sqCfg.SignalAll = init.SignalAll
	if a := c.deviceLimits(); a != nil {
		sqCfg.Atomics = a.AtomicCap != AtomicNone
	}
	if m.sq, err = mlx5.NewSQ(m.sqRing, mem.DBRec[:8], &m.bf.BF, sqCfg); err != nil {
		return err
	}
	if rqBytes > 0 {
		if m.rq, err = mlx5.NewRQ(m.rqRing, mem.DBRec[:8], rqCfg); err != nil {
			return err
		}
	}
	m.reg = mlx5.QP{SQ: m.sq, RQ: m.rq}
	sendWR, recvWR, recvSGE, inline := mlx5.QPCaps(sqCfg, rqCfg)
	inline = max(inline, 0) // libmlx5 may report −4 (docs/mlx5.md §2)
	qp.lim = provider.SendLimits{QPType: provider.QPType(qp.typ), MaxSGE: sqCfg.MaxSGE, MaxInline: inline}
	qp.cap = QPCap{MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxSendSGE: sqCfg.MaxSGE, MaxRecvSGE: recvSGE, MaxInline: inline}
	if init.SRQ != nil {
		srq := init.SRQ
		srq.mu.Lock()
		if srq.mx != nil {
			m.reg.SRQ = srq.mx.q
			init.RecvCQ.registerMLX5SRQ(srq.srqn, srq.mx.q)
		}
		srq.mu.Unlock()
	}
	init.SendCQ.registerMLX5(m.key, &m.reg)
	if init.RecvCQ != init.SendCQ {
		init.RecvCQ.registerMLX5(m.key, &m.reg)
	}
	qp.mx = m
	return nil
}

// sendError is the error of an mlx5.SQ.Post that refused request i of
// wrs (writeSends calls Post itself; the formatting is in mlx5PostError,
// which is not inlined).
func (m *mlx5QP) sendError(op string, wrs []SendWR, i int, err error) error {
	return mlx5PostError(op, i, wrs[i].ID, len(wrs), m.sq.Config().MaxPost, err)
}

// mlx5PostError is the error of a post the provider refused at request i
// (ID id) of n. A full queue (the provider checks room request by request)
// says how much room there was; a refusal is mlx5's error, which matches
// ErrInvalidWR and the error of the same check on any device.
func mlx5PostError(op string, i int, id uint64, n, maxPost int, err error) error {
	if errors.Is(err, mlx5.ErrQueueFull) {
		err = fmt.Errorf("%w: %d work requests, room for %d of %d", ErrQueueFull, n, i, maxPost)
	}
	return &PostError{Op: op, Index: i, ID: id, Err: err}
}

// postRecv validates and posts receives on the QP's receive queue
// (qp.c mlx5_post_recv). The caller holds QP.recvMu; as for a send
// (writeSends), the CQ's lock is not taken.
func (m *mlx5QP) postRecv(op string, wrs []RecvWR) error {
	if m.rq == nil { // created with MaxRecvWR 0
		return &PostError{Op: op, ID: wrs[0].ID, Err: fmt.Errorf("%w: the QP was created without a receive queue (MaxRecvWR 0)", ErrQueueFull)}
	}
	rq := m.rq
	if err := validateRecvs(op, wrs, rq.MaxSGE()); err != nil {
		return err
	}
	if i, err := rq.Post(wrs); err != nil {
		return mlx5PostError(op, i, wrs[i].ID, len(wrs), rq.Config().MaxPost, err)
	}
	return nil
}

// validateRecvs checks every receive as the rxe path does
// (provider.CheckRecv), so both providers refuse bad input with the same
// errors.
func validateRecvs(op string, wrs []RecvWR, maxSGE int) error {
	for i := range wrs {
		// One SGE within the limit cannot fail (its length is one u32).
		if n := len(wrs[i].SGEs); n <= 1 && n <= maxSGE {
			continue
		}
		if err := provider.CheckRecv(wrs[i].SGEs, maxSGE); err != nil {
			return &PostError{Op: op, Index: i, ID: wrs[i].ID, Err: err}
		}
	}
	return nil
}

// outstanding counts the requests the CQs have not completed yet. It
// needs no CQ lock: tail is the one counter a poll moves (mlx5.SQ).
func (m *mlx5QP) outstanding() (send, recv int) {
	send = m.sq.Outstanding()
	if m.rq != nil {
		recv = m.rq.Outstanding()
	}
	return send, recv
}

// reset starts both queues over after a move to RESET, as libmlx5 does
// (verbs.c mlx5_modify_qp: mlx5_init_qp_indices, both doorbell-record
// words zeroed). Modify refuses the move while requests are outstanding,
// so the CQs hold no completion of the QP. The caller holds both QP locks.
func (m *mlx5QP) reset(qp *QP) {
	sq, err := mlx5.NewSQ(m.sqRing, m.mem.DBRec[:8], &m.bf.BF, m.sq.Config())
	if err != nil {
		panic("uverbs: mlx5 send queue rebuilt with its own configuration: " + err.Error())
	}
	var rq *mlx5.RQ
	if m.rq != nil {
		if rq, err = mlx5.NewRQ(m.rqRing, m.mem.DBRec[:8], m.rq.Config()); err != nil {
			panic("uverbs: mlx5 receive queue rebuilt with its own configuration: " + err.Error())
		}
	}
	clear(m.mem.DBRec[:8]) // polls never touch a QP's doorbell record
	// One CQ lock at a time: the CQs' polls read the queues through reg.
	qp.sendCQ.mu.Lock()
	m.sq, m.reg.SQ = sq, sq
	qp.sendCQ.mu.Unlock()
	qp.recvCQ.mu.Lock()
	m.rq, m.reg.RQ = rq, rq
	qp.recvCQ.mu.Unlock()
}

// usesLKey reports whether an outstanding request may name lkey: any
// outstanding send (the send ring is not parsed back), or a posted receive
// whose scatter list names it. The caller holds both QP locks; no CQ lock
// is needed (outstanding).
func (m *mlx5QP) usesLKey(lkey uint32) (used bool, send, recv int) {
	send, recv = m.outstanding()
	if m.rq != nil {
		used = m.rq.PendingUsesLKey(lkey)
	}
	return used || send > 0, send, recv
}

// release forgets the QP in its CQs, frees its user index and unmaps its
// buffer; after DESTROY_QP.
func (m *mlx5QP) release(qp *QP) {
	qp.sendCQ.unregisterMLX5(m.key)
	if qp.recvCQ != qp.sendCQ {
		qp.recvCQ.unregisterMLX5(m.key)
	}
	qp.ctx.mlx.FreeUIDX(m.uidx)
	m.mem.Unmap()
}
