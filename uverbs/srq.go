package uverbs

import (
	"fmt"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// srqAttrLimit is the MODIFY_SRQ attribute mask bit of the limit (kernel:
// include/rdma/ib_verbs.h enum ib_srq_attr_mask IB_SRQ_LIMIT, not in the
// UAPI headers; rdma-core: IBV_SRQ_LIMIT).
const srqAttrLimit = 2

// SRQInit describes a shared receive queue to create.
type SRQInit struct {
	MaxWR  int // receive work requests it holds (rounded up by the kernel)
	MaxSGE int // scatter/gather entries per work request (rxe: at most 27)
	// Limit, if not 0, arms the limit event: when fewer than Limit work
	// requests remain, the kernel raises EventSRQLimitReached once
	// (AsyncEvent.SRQ names the SRQ) and disarms it. SetLimit re-arms.
	Limit int
	// SingleGoroutine declares that one goroutine at a time uses the SRQ,
	// and PostRecv then takes no lock (BENCHMARKS.md, "Ring locks"). The
	// caller promises that no two of these overlap: the SRQ's own calls
	// (PostRecv, SetLimit, Query, Resize, Close), creating a QP with the
	// SRQ (on mlx5 it registers the SRQ with the QP's receive CQ), and
	// Device.Close while the SRQ is open. Calls made in turn from several
	// goroutines, each after the last has returned as seen through the
	// caller's own synchronisation, keep the promise. With it, MR.Close
	// does not look for posted receives that name the MR (ibv_dereg_mr
	// never does): close it only once no receive needs it. Overlapping
	// calls corrupt the ring; race builds (go test -race) panic on those
	// they catch, naming this option, and the race detector reports
	// calls from two goroutines that the caller's synchronisation does
	// not order, even calls that never overlap.
	//
	// rdma-core: an SRQ created in a parent domain with a thread domain
	// (ibv_alloc_td, ibv_alloc_parent_domain), whose lock libmlx5 then
	// leaves out; the same as MLX5_SINGLE_THREADED=1 for one SRQ.
	SingleGoroutine bool
}

// SRQAttr are the attributes QUERY_SRQ reports.
type SRQAttr struct {
	MaxWR  int
	MaxSGE int
	Limit  int // 0 once the limit event fired
}

// SRQ is a shared receive queue: QPs created with it take their receive
// buffers from it. PostRecv writes to the ring shared with the kernel
// without a system call and without allocating.
//
// Close refuses (ErrBusy) while QPs use the SRQ. Close is idempotent and safe
// on a nil *SRQ; every other method of a closed SRQ returns an error matching
// ErrClosed.
//
// rdma-core: struct ibv_srq.
type SRQ struct {
	ctx    *Device
	pd     *PD
	h      uint64
	handle uint32
	srqn   uint32
	kids   children // QPs

	mu   ringLock
	keys lkeyCache    // lkeys the SRQ's posts recorded (mrusers.go), under mu
	drv  provider.SRQ // the provider's SRQ (provider.go); nil once closed

	mrs map[*MR]struct{} // MRs whose users include the SRQ, under pd.usersMu
}

// CreateSRQ creates a shared receive queue (write() command CREATE_SRQ) and
// maps its ring.
//
// rdma-core: ibv_create_srq.
func (pd *PD) CreateSRQ(init SRQInit) (*SRQ, error) {
	const op = "create_srq"
	if init.MaxWR < 1 || init.MaxSGE < 0 || init.Limit < 0 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("SRQInit %+v: MaxWR must be at least 1, MaxSGE and Limit not negative", init)}
	}
	if pd == nil {
		return nil, &OpError{Op: op, Err: errNilParent("PD")}
	}
	c := pd.ctx
	if err := c.checkSRQSize(init.MaxWR, init.MaxSGE); err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	r, err := c.objects(op)
	if err != nil {
		return nil, err
	}
	if err := pd.hold(op); err != nil {
		return nil, err
	}
	srq := &SRQ{ctx: c, pd: pd, h: newHandle()}
	if init.SingleGoroutine {
		srq.mu.elide("an SRQ")
	}
	req := abi.UverbsCreateSRQ{
		UserHandle: srq.h,
		PDHandle:   pd.handle,
		MaxWR:      uint32(init.MaxWR),
		MaxSGE:     uint32(init.MaxSGE),
		SRQLimit:   uint32(init.Limit),
	}
	if err := srq.create(op, &req, init); err != nil {
		pd.kids.unhold()
		return nil, err
	}
	pd.kids.adopt(srq, kindSRQ)
	if err := r.add(op, srq.h, kindSRQ, srq); err != nil {
		srq.close(true)
		return nil, err
	}
	return srq, nil
}

// SRQN returns the SRQ number.
//
// rdma-core: ibv_get_srq_num.
func (srq *SRQ) SRQN() uint32 { return srq.srqn }

// PD returns the SRQ's protection domain.
//
// rdma-core: the pd of struct ibv_srq.
func (srq *SRQ) PD() *PD { return srq.pd }

// usesLKey reports whether a posted receive the kernel has not consumed
// names lkey, and how many receives are posted.
func (srq *SRQ) usesLKey(lkey uint32) (used bool, n int) {
	if srq.mu.elided {
		return false, 0 // not looked at: another goroutine may be posting (SRQInit.SingleGoroutine)
	}
	srq.mu.Lock()
	defer srq.mu.Unlock()
	return srq.usesLKeyLocked(lkey)
}

// releaseLKey is usesLKey for MR.Close: under the same lock it also
// removes lkey from the SRQ's cache (mrusers.go). A SingleGoroutine SRQ is
// left alone, as QP.releaseLKey says.
func (srq *SRQ) releaseLKey(lkey uint32) (used bool, n int) {
	if srq.mu.elided {
		return false, 0
	}
	srq.mu.Lock()
	defer srq.mu.Unlock()
	srq.keys.forget(lkey)
	return srq.usesLKeyLocked(lkey)
}

// SetLimit arms the limit event (MODIFY_SRQ with IB_SRQ_LIMIT): when fewer
// than n work requests remain, the kernel raises EventSRQLimitReached once.
// 0 disarms it.
//
// rdma-core: ibv_modify_srq with IBV_SRQ_LIMIT.
func (srq *SRQ) SetLimit(n int) error {
	const op = "modify_srq"
	if n < 0 {
		return &OpError{Op: op, Err: fmt.Errorf("limit %d is negative", n)}
	}
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.gone() {
		return closedErr(op)
	}
	return srq.modify(op, srqAttrLimit, n)
}

// modify issues MODIFY_SRQ for the limit, with the driver input the
// device's provider takes (Device.srqModifyData). The caller holds mu.
func (srq *SRQ) modify(op string, mask uint32, limit int) error {
	core := abi.UverbsModifySRQ{SRQHandle: srq.handle, AttrMask: mask, SRQLimit: uint32(limit)}
	in := bytesOf(&core)
	if n := srq.ctx.srqModifyData(); n > 0 {
		in = append(append([]byte(nil), in...), make([]byte, n)...)
	}
	return srq.ctx.write(op, abi.IB_USER_VERBS_CMD_MODIFY_SRQ, in, nil)
}

// Query returns the SRQ's attributes (write() command QUERY_SRQ).
//
// rdma-core: ibv_query_srq.
func (srq *SRQ) Query() (SRQAttr, error) {
	const op = "query_srq"
	srq.mu.Lock()
	defer srq.mu.Unlock()
	if srq.gone() {
		return SRQAttr{}, closedErr(op)
	}
	req := abi.UverbsQuerySRQ{SRQHandle: srq.handle}
	var resp abi.UverbsQuerySRQResp
	if err := srq.ctx.write(op, abi.IB_USER_VERBS_CMD_QUERY_SRQ, bytesOf(&req), bytesOf(&resp)); err != nil {
		return SRQAttr{}, err
	}
	return SRQAttr{MaxWR: int(resp.MaxWR), MaxSGE: int(resp.MaxSGE), Limit: int(resp.SRQLimit)}, nil
}

// Close destroys the SRQ (DESTROY_SRQ) and unmaps its ring. It refuses with
// an error matching ErrBusy while QPs use it. Receives still posted are
// discarded without completions.
//
// rdma-core: ibv_destroy_srq.
func (srq *SRQ) Close() error {
	if srq == nil {
		return nil
	}
	return srq.close(false)
}

func (srq *SRQ) close(force bool) error {
	already, err := srq.kids.beginClose("destroy_srq", "SRQ", force)
	if already || err != nil {
		return err
	}
	srq.mu.Lock()
	err = srq.destroy()
	srq.release()
	srq.mu.Unlock()
	srq.pd.dropUser(lkeyUser{srq: srq}) // no receive of it is left for an MR to wait for
	srq.pd.kids.drop(srq)
	srq.ctx.forget(srq.h)
	return ignoreClosedContext(err)
}

func (srq *SRQ) destroy() error {
	req := abi.UverbsDestroySRQ{SRQHandle: srq.handle}
	var resp abi.UverbsDestroySRQResp
	return srq.ctx.write("destroy_srq", abi.IB_USER_VERBS_CMD_DESTROY_SRQ, bytesOf(&req), bytesOf(&resp))
}
