package rxe

import "github.com/goverbs/rdma/internal/mmio"

// Scans of the work requests a queue holds, for deciding whether memory is
// still in use. They only read: the slots between consumer_index (loaded
// with acquire) and the producer's private index, which the kernel has not
// retired yet. The kernel updates a posted send WQE's bookkeeping (state,
// status, dma.resid, dma.cur_sge, dma.sge_offset) but never its SGE list or
// dma.num_sge (kernel: sw/rxe/rxe_req.c, rxe_comp.c, rxe_resp.c), so the
// keys read here are those that were posted.

// PendingNow is the number of published entries the kernel has not
// consumed. Unlike Pending it does not update the cached consumer index, so
// it may run while another goroutine reads the ring, as long as no one
// posts.
func (p *Producer) PendingNow() int {
	cons := mmio.LoadAcquire32(p.cons) & p.mask
	return int((p.next - cons) & p.mask)
}

// forPending calls f on each slot the kernel has not consumed, oldest
// first, until f returns true; it reports whether f did.
func (p *Producer) forPending(f func(slot []byte) bool) bool {
	cons := mmio.LoadAcquire32(p.cons) & p.mask
	for i := cons; i != p.next; i = (i + 1) & p.mask {
		if f(p.slot(i)) {
			return true
		}
	}
	return false
}

// sgesUseLKey reports whether one of the num SGEs at the start of payload
// has lkey. num is clamped to what fits in the slot, in case the slot does
// not hold what was posted.
func sgesUseLKey(payload []byte, num uint32, lkey uint32) bool {
	if fit := uint32(len(payload) / SGESize); num > fit {
		num = fit
	}
	for i := range num {
		s := payload[int(i)*SGESize:]
		if native.Uint32(s[sgeLKey:]) == lkey {
			return true
		}
	}
	return false
}

// PendingUsesLKey reports whether a send work request the kernel has not
// retired names lkey in its SGE list. Inline requests carry data, not keys.
func (q *SQ) PendingUsesLKey(lkey uint32) bool {
	return q.forPending(func(slot []byte) bool {
		if SendFlags(native.Uint32(slot[sendFlags:]))&SendInline != 0 {
			return false
		}
		num := native.Uint32(slot[sendDMA+dmaNumSGE:])
		return sgesUseLKey(slot[SendWQEHeaderSize:], num, lkey)
	})
}

// PendingUsesLKey reports whether a receive work request the kernel has
// not consumed names lkey in its SGE list.
func (q *RQ) PendingUsesLKey(lkey uint32) bool {
	return q.forPending(func(slot []byte) bool {
		num := native.Uint32(slot[recvDMA+dmaNumSGE:])
		return sgesUseLKey(slot[RecvWQEHeaderSize:], num, lkey)
	})
}
