package uverbs

import (
	"sync"

	"github.com/goverbs/rdma/internal/abi"
)

// PD is a protection domain: MRs, QPs, SRQs and AHs are created in one, and
// a QP can only use memory regions and address handles of its own PD.
//
// Close refuses (ErrBusy) while any of them is open. Close is idempotent and
// safe on a nil *PD; every other method of a closed PD returns an error
// matching ErrClosed.
//
// rdma-core: struct ibv_pd.
type PD struct {
	ctx    *Device
	h      uint64
	handle uint32
	kids   children

	mrMu sync.RWMutex
	mrs  []mrRange // open MRs (mr.go)

	// usersMu guards byLKey, the open MRs by lkey, and which QPs and SRQs
	// use which MR (MR.users, QP.mrs, SRQ.mrs; mrusers.go).
	usersMu sync.Mutex
	byLKey  map[uint32]*MR
}

// AllocPD allocates a protection domain (write() command ALLOC_PD).
//
// rdma-core: ibv_alloc_pd.
func (c *Device) AllocPD() (*PD, error) {
	const op = "alloc_pd"
	r, err := c.objects(op)
	if err != nil {
		return nil, err
	}
	var req abi.UverbsAllocPD
	var resp abi.UverbsAllocPDResp
	if err := c.write(op, abi.IB_USER_VERBS_CMD_ALLOC_PD, bytesOf(&req), bytesOf(&resp)); err != nil {
		return nil, err
	}
	pd := &PD{ctx: c, h: newHandle(), handle: resp.PDHandle}
	if err := r.add(op, pd.h, kindPD, pd); err != nil {
		pd.close(true)
		return nil, err
	}
	return pd, nil
}

// Device returns the Device the PD was allocated from.
//
// rdma-core: the context of struct ibv_pd.
func (pd *PD) Device() *Device { return pd.ctx }

// Close deallocates the PD (DEALLOC_PD). It refuses with an error matching
// ErrBusy, naming what is still open, while MRs, QPs, SRQs or AHs of the PD
// exist. If the kernel refuses, the PD stays open and Close can retry.
//
// rdma-core: ibv_dealloc_pd.
func (pd *PD) Close() error {
	if pd == nil {
		return nil
	}
	return pd.close(false)
}

func (pd *PD) close(force bool) error {
	const op = "dealloc_pd"
	already, err := pd.kids.beginClose(op, "PD", force)
	if already || err != nil {
		return err
	}
	req := abi.UverbsDeallocPD{PDHandle: pd.handle}
	err = pd.ctx.write(op, abi.IB_USER_VERBS_CMD_DEALLOC_PD, bytesOf(&req), nil)
	if err != nil && !force && !objectGone(err) {
		// The kernel kept the PD: it stays open and Close can retry.
		pd.kids.reopen()
		return err
	}
	pd.ctx.forget(pd.h)
	return ignoreClosedContext(err)
}

// use checks that the PD is open and belongs to c, for a child being
// created, and holds a child slot.
func (pd *PD) hold(op string) error {
	if pd == nil {
		return &OpError{Op: op, Err: errNilParent("PD")}
	}
	return pd.kids.hold(op, "PD")
}
