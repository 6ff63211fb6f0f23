package siw

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/mmio"
)

// RQ is the user side of a siw receive queue (mapped through rq_key of
// struct siw_uresp_create_qp) or shared receive queue (srq_key of struct
// siw_uresp_create_srq): a ring of struct siw_rqe. Receives need no
// doorbell: the kernel reads the ring when a message arrives (kernel:
// siw_qp_rx.c siw_rqe_get; libsiw siw_post_recv makes no system call).
//
// An RQ is not safe for concurrent use: hold the queue's receive lock.
type RQ struct {
	ring
	maxSGE int
	device string
}

// NewRQ checks a mapped receive queue or SRQ of num elements (num_rqe of
// the create response) against max_recv_sge (or the SRQ's max_sge).
func NewRQ(buf []byte, num uint32, maxSGE int, device string) (*RQ, error) {
	if maxSGE < 0 || maxSGE > MaxSGE {
		return nil, fmt.Errorf("siw: receive queue max_sge %d is outside 0..%d", maxSGE, MaxSGE)
	}
	r, err := newRing(buf, num, RQESize, 0, "receive queue")
	if err != nil {
		return nil, err
	}
	return &RQ{ring: r, maxSGE: maxSGE, device: device}, nil
}

// MaxSGE returns the SGE limit the RQ checks against.
func (q *RQ) MaxSGE() int { return q.maxSGE }

// CheckRecv checks a receive's SGE list against the queue's max_sge (the
// kernel's own check in siw_post_receive) and that its total length fits
// in 32 bits. A receive with no SGE is valid (it takes a message of zero
// bytes); libsiw refuses it (push_recv_wqe), the kernel does not
// (siw_qp_rx.c siw_rqe_get).
func (q *RQ) CheckRecv(wr *RecvWR) error {
	sges := wr.SGEs
	if len(sges) > q.maxSGE {
		return fmt.Errorf("%w (device %s, %d SGEs, max_recv_sge %d)", ErrTooManySGEs, q.device, len(sges), q.maxSGE)
	}
	var length uint64
	for i := range sges {
		length += uint64(sges[i].Length)
	}
	if length > math.MaxUint32 {
		return fmt.Errorf("%w (device %s, %d bytes)", ErrLengthOverflow, q.device, length)
	}
	return nil
}

// Write encodes wr into the next element (id, num_sge, the SGE list) and
// hands it to the kernel with a release store of its flag word: exactly
// SIW_WQE_VALID in the flags, which is what the kernel tests for
// (siw_rqe_get compares flags with SIW_WQE_VALID), num_sge in the third
// byte, opcode 0. wr must have passed CheckRecv and the element must be
// free (Room). It allocates nothing.
func (q *RQ) Write(wr *RecvWR) {
	e := q.elem(q.next)
	put64(e, rqeID, wr.ID)
	sges := wr.SGEs
	dst := unsafe.Slice((*SGE)(unsafe.Add(e, rqeSGE)), MaxSGE)
	copy(dst[:len(sges)], sges)
	mmio.StoreRelease32(q.flagWord(q.next), abi.SIW_WQE_VALID|uint32(len(sges))<<16)
	q.next++
}

// Post checks wr, writes it into the next element and publishes it. It
// returns ErrQueueFull or a refusal; in both cases nothing was written. It
// allocates nothing on success.
func (q *RQ) Post(wr *RecvWR) error {
	if q.Full() {
		return ErrQueueFull
	}
	if err := q.CheckRecv(wr); err != nil {
		return err
	}
	q.Write(wr)
	return nil
}

// PendingUsesLKey reports whether a receive the kernel has not taken yet
// names lkey in its SGE list.
func (q *RQ) PendingUsesLKey(lkey uint32) bool {
	return q.forPending(func(e unsafe.Pointer) bool {
		return sgesUseLKey(unsafe.Add(e, rqeSGE), get32(e, flagWordOff)>>16&0xff, lkey)
	})
}
