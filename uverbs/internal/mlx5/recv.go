package mlx5

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/mmio"
)

// RecvWR is a receive work request.
type RecvWR = rdma.RecvWR

// RQConfig describes a QP's receive queue as RQSize computes it.
type RQConfig struct {
	WQECount int // entries, a power of two
	WQEShift int // log2 of the entry size
	MaxPost  int // rq.max_post
	MaxSGE   int // rq.max_gs
}

// RQ is the receive queue of an mlx5 QP (not an SRQ). As with SQ, one
// post may run beside one poll of its CQ, ordered by head and tail.
type RQ struct {
	cfg  RQConfig
	ring []byte
	db   *atomic.Uint32
	head atomic.Uint32
	tail atomic.Uint32
	wrid []uint64
}

// NewRQ checks cfg against the ring (the start of the QP buffer, rq.offset
// 0) and the QP's doorbell record.
func NewRQ(ring, dbrec []byte, cfg RQConfig) (*RQ, error) {
	if cfg.WQECount <= 0 || cfg.WQECount&(cfg.WQECount-1) != 0 || cfg.WQEShift < 4 || cfg.WQEShift > 16 ||
		len(ring) != cfg.WQECount<<cfg.WQEShift || cfg.MaxPost <= 0 || cfg.MaxPost > cfg.WQECount ||
		cfg.MaxSGE < 1 || cfg.MaxSGE > (1<<cfg.WQEShift)/dataSegSize {
		return nil, fmt.Errorf("mlx5: receive queue of %d bytes does not match %+v", len(ring), cfg)
	}
	if err := mmio.CheckView(dbrec, 0, 8); err != nil {
		return nil, fmt.Errorf("mlx5: QP doorbell record: %w", err)
	}
	return &RQ{cfg: cfg, ring: ring, db: mmio.U32(dbrec, 4*rcvDBR), wrid: make([]uint64, cfg.WQECount)}, nil
}

// Config returns the queue's configuration.
func (q *RQ) Config() RQConfig { return q.cfg }

// MaxSGE is Config().MaxSGE without the copy.
func (q *RQ) MaxSGE() int { return q.cfg.MaxSGE }

// Outstanding is the number of posted receives the CQ has not completed.
func (q *RQ) Outstanding() int { return int(q.head.Load() - mmio.LoadAcquire32(&q.tail)) }

// Retire retires every posted receive, as a CQ's polls of their
// completions do. It is for queues with no device behind them (the native
// benchmarks).
func (q *RQ) Retire() { mmio.StoreRelease32(&q.tail, q.head.Load()) }

// Post validates every request, checks for room for all, writes them and
// updates the doorbell record once (qp.c mlx5_post_recv). On an error
// nothing was written. It allocates nothing.
func (q *RQ) Post(wrs []RecvWR) (int, error) {
	// One receive of one SGE, the common case, written without the
	// loops of postList (the same bytes, TestRecvOne). The entry is in
	// the ring, as in postList; MaxSGE is at least 1 (NewRQ).
	if len(wrs) == 1 && len(wrs[0].SGEs) == 1 && wrs[0].SGEs[0].Length != 0 && q.Outstanding() < q.cfg.MaxPost {
		head := q.head.Load()
		ind := head & uint32(len(q.wrid)-1)
		q.wrid[ind] = wrs[0].ID
		wqe := unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.ring)), uintptr(ind)<<(uint(q.cfg.WQEShift)&31))
		putDataSeg((*[dataSegSize]byte)(wqe), wrs[0].SGEs[0])
		if q.cfg.MaxSGE > 1 {
			putDataSegEnd((*[dataSegSize]byte)(unsafe.Add(wqe, dataSegSize)))
		}
		head++
		mmio.StoreRelease32(&q.head, head)
		mmio.StoreForDevice32(q.db, bits.ReverseBytes32(head&0xffff)) // qp.c: a plain store after the barrier
		return 0, nil
	}
	return q.postList(wrs)
}

// postList is Post for any list.
func (q *RQ) postList(wrs []RecvWR) (int, error) {
	head := q.head.Load()
	maxSGE := q.cfg.MaxSGE
	// libmlx5 checks room, then the SGE count, request by request: the
	// first refusal is the first request past the room or, before it, the
	// first with too many SGEs.
	fit := min(len(wrs), max(q.cfg.MaxPost-int(head-mmio.LoadAcquire32(&q.tail)), 0))
	for i := range wrs[:fit] {
		if len(wrs[i].SGEs) > maxSGE {
			return i, fmt.Errorf("%w: %d SGEs, max_recv_sge is %d", ErrTooManyRecvSGEs, len(wrs[i].SGEs), maxSGE)
		}
	}
	if fit < len(wrs) {
		return fit, ErrQueueFull
	}
	if len(wrs) == 0 {
		return 0, nil
	}
	// The WQEs are written through pointers into the ring, without a
	// bounds check per segment (which cost a third of a request here). The
	// writes stay inside the ring: NewRQ checked len(ring) == WQECount <<
	// WQEShift and that MaxSGE segments fit in one entry (by division, so
	// MaxSGE*16 cannot overflow); ind is masked to WQECount-1 (len(wrid));
	// and a list is cut to maxSGE segments here, which only a caller that
	// changed wrs during the call (PostRecv's doc forbids it) would see.
	ring, wrid := q.ring, q.wrid
	mask := uint32(len(wrid) - 1)
	shift := uint(q.cfg.WQEShift) & 31
	base := unsafe.Pointer(unsafe.SliceData(ring))
	for i := range wrs {
		ind := (head + uint32(i)) & mask
		wrid[ind] = wrs[i].ID
		sges := wrs[i].SGEs
		wqe := unsafe.Add(base, uintptr(ind)<<shift)
		if len(sges) == 1 && sges[0].Length != 0 { // the common receive, without the loop below
			putDataSeg((*[dataSegSize]byte)(wqe), sges[0])
			if maxSGE > 1 {
				putDataSegEnd((*[dataSegSize]byte)(unsafe.Add(wqe, dataSegSize)))
			}
			continue
		}
		if len(sges) > maxSGE {
			sges = sges[:maxSGE]
		}
		j := 0
		for k := range sges {
			// Zero-length entries are left out of a receive WQE.
			if sges[k].Length == 0 {
				continue
			}
			putDataSeg((*[dataSegSize]byte)(unsafe.Add(wqe, j*dataSegSize)), sges[k])
			j++
		}
		if j < maxSGE {
			putDataSegEnd((*[dataSegSize]byte)(unsafe.Add(wqe, j*dataSegSize)))
		}
	}
	head += uint32(len(wrs))
	mmio.StoreRelease32(&q.head, head)
	mmio.StoreForDevice32(q.db, bits.ReverseBytes32(head&0xffff)) // qp.c: a plain store after the barrier
	return 0, nil
}

// putDataSeg writes struct mlx5_wqe_data_seg: byte_count, lkey and addr,
// big-endian; the first two as one 8-byte store.
func putDataSeg(d *[dataSegSize]byte, s SGE) {
	be.PutUint64(d[0:], uint64(s.Length)<<32|uint64(s.LKey))
	be.PutUint64(d[8:], s.Addr)
}

// putDataSegEnd ends a scatter list shorter than max_gs (qp.c
// set_data_ptr_seg_end): byte_count 0, MLX5_INVALID_LKEY, address 0.
func putDataSegEnd(d *[dataSegSize]byte) {
	be.PutUint64(d[0:], invalidLKey)
	be.PutUint64(d[8:], 0)
}

// SRQConfig describes a shared receive queue as SRQSize computes it.
type SRQConfig struct {
	WQECount int // srq->max, a power of two
	WQEShift int // log2 of the entry size
	MaxSGE   int // srq->max_gs
	// Tail is the last entry of the initial free list 0..Tail
	// (srq.c mlx5_alloc_srq_buf); entries after it are spare.
	Tail int
	// WaitQueue: the spare entries Tail+1.. are linked as libmlx5 links
	// its on-demand-paging wait queue (unused here, but the ring's bytes
	// are libmlx5's).
	WaitQueue bool
}

// SRQ is an mlx5 shared receive queue: entries form a free list linked
// through their next segments; the device consumes any entry, and a
// completion returns it to the tail (srq.c). It is not safe for concurrent
// use; the CQ's poll frees entries, so the caller serialises the two.
type SRQ struct {
	cfg     SRQConfig
	ring    []byte
	db      *atomic.Uint32
	head    int
	tail    int
	counter uint16
	wrid    []uint64
}

// NewSRQ checks cfg, zeroes the ring and links entries 0..Tail into the free
// list (srq.c mlx5_alloc_srq_buf, set_srq_buf_ll). dbrec is the SRQ's
// 4-byte doorbell record.
func NewSRQ(ring, dbrec []byte, cfg SRQConfig) (*SRQ, error) {
	if cfg.WQECount <= 1 || cfg.WQECount&(cfg.WQECount-1) != 0 || cfg.WQEShift < 5 || cfg.WQEShift > 16 ||
		len(ring) != cfg.WQECount<<cfg.WQEShift || cfg.MaxSGE < 0 || cfg.MaxSGE > ((1<<cfg.WQEShift)-srqNextSize)/dataSegSize ||
		cfg.Tail <= 0 || cfg.Tail >= cfg.WQECount {
		return nil, fmt.Errorf("mlx5: shared receive queue of %d bytes does not match %+v", len(ring), cfg)
	}
	if err := mmio.CheckView(dbrec, 0, 4); err != nil {
		return nil, fmt.Errorf("mlx5: SRQ doorbell record: %w", err)
	}
	clear(ring)
	q := &SRQ{cfg: cfg, ring: ring, db: mmio.U32(dbrec, 0), tail: cfg.Tail, wrid: make([]uint64, cfg.WQECount)}
	for i := 0; i < cfg.Tail; i++ {
		be.PutUint16(q.wqe(i)[2:], uint16(i+1))
	}
	if cfg.WaitQueue {
		for i := cfg.Tail + 1; i < cfg.WQECount-1; i++ {
			be.PutUint16(q.wqe(i)[2:], uint16(i+1))
		}
	}
	return q, nil
}

func (q *SRQ) wqe(i int) []byte {
	off := i << q.cfg.WQEShift
	return q.ring[off : off+1<<q.cfg.WQEShift]
}

// Config returns the queue's configuration.
func (q *SRQ) Config() SRQConfig { return q.cfg }

// Post validates every request, checks the free list holds all of them,
// writes them and updates the doorbell record with the running count
// (srq.c mlx5_post_srq_recv). On an error nothing was written. It
// allocates nothing.
func (q *SRQ) Post(wrs []RecvWR) (int, error) {
	head := q.head
	for i := range wrs {
		if len(wrs[i].SGEs) > q.cfg.MaxSGE {
			return i, fmt.Errorf("%w: %d SGEs, max_recv_sge is %d", ErrTooManyRecvSGEs, len(wrs[i].SGEs), q.cfg.MaxSGE)
		}
		if head == q.tail {
			return i, ErrQueueFull
		}
		head = int(be.Uint16(q.wqe(head)[2:]))
	}
	if len(wrs) == 0 {
		return 0, nil
	}
	for i := range wrs {
		q.wrid[q.head] = wrs[i].ID
		wqe := q.wqe(q.head)
		q.head = int(be.Uint16(wqe[2:]))
		scat := wqe[srqNextSize:]
		// Unlike a QP's receive queue, every entry is written, even of
		// length zero.
		n := len(wrs[i].SGEs)
		for j, s := range wrs[i].SGEs {
			putDataSeg((*[dataSegSize]byte)(scat[j*dataSegSize:]), s)
		}
		if n < q.cfg.MaxSGE {
			putDataSegEnd((*[dataSegSize]byte)(scat[n*dataSegSize:]))
		}
	}
	q.counter += uint16(len(wrs))
	mmio.StoreForDevice32(q.db, bits.ReverseBytes32(uint32(q.counter))) // srq.c: a plain store after the barrier
	return 0, nil
}

// free returns entry ind to the tail of the free list (srq.c
// mlx5_free_srq_wqe).
func (q *SRQ) free(ind int) {
	be.PutUint16(q.wqe(q.tail)[2:], uint16(ind))
	q.tail = ind
}

// scatterUsesLKey reports whether a receive entry's data segments name
// lkey, up to the end marker (MLX5_INVALID_LKEY) or maxSGE segments.
func scatterUsesLKey(scat []byte, maxSGE int, lkey uint32) bool {
	for j := 0; j < maxSGE && (j+1)*dataSegSize <= len(scat); j++ {
		k := be.Uint32(scat[j*dataSegSize+4:])
		if k == invalidLKey {
			return false
		}
		if k == lkey {
			return true
		}
	}
	return false
}

// PendingUsesLKey reports whether a posted receive the CQ has not
// completed names lkey.
func (q *RQ) PendingUsesLKey(lkey uint32) bool {
	for i, head := mmio.LoadAcquire32(&q.tail), q.head.Load(); i != head; i++ {
		off := int(i&uint32(q.cfg.WQECount-1)) << q.cfg.WQEShift
		if scatterUsesLKey(q.ring[off:off+1<<q.cfg.WQEShift], q.cfg.MaxSGE, lkey) {
			return true
		}
	}
	return false
}

// Posted counts the posted receives (the entries of 0..Tail off the free
// list) and reports whether one names lkey.
func (q *SRQ) Posted(lkey uint32) (n int, usesLKey bool) {
	free := make([]bool, q.cfg.WQECount)
	for i, steps := q.head, 0; steps < q.cfg.WQECount; steps++ {
		free[i] = true
		if i == q.tail {
			break
		}
		i = int(be.Uint16(q.wqe(i)[2:]))
	}
	for i := 0; i <= q.cfg.Tail; i++ {
		if free[i] {
			continue
		}
		n++
		if !usesLKey && scatterUsesLKey(q.wqe(i)[srqNextSize:], q.cfg.MaxSGE, lkey) {
			usesLKey = true
		}
	}
	return n, usesLKey
}
