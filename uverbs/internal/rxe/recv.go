package rxe

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// RecvWQE is a receive work request in Go form, the input of EncodeRecv.
type RecvWQE struct {
	ID   uint64 // returned in the completion's wr_id; never a Go pointer
	SGEs []SGE
}

// ValidateRecv checks wr against the queue's max_recv_sge (or the SRQ's
// max_sge), as librxe's rxe_post_one_recv does, and that the total length
// fits the 32-bit dma.length.
func ValidateRecv(wr *RecvWQE, maxSGE int) error { return CheckRecv(wr.SGEs, maxSGE) }

// CheckRecv is ValidateRecv on the SGE list alone (provider.CheckRecv).
func CheckRecv(sges []SGE, maxSGE int) error { return provider.CheckRecv(sges, maxSGE) }

// EncodeRecv writes wr into slot as a struct rxe_recv_wqe: the header is
// zeroed, then wr_id, dma.length = dma.resid = total, dma.num_sge and the
// SGE list (providers/rxe/rxe.c rxe_post_one_recv). Only the header is
// cleared: librxe writes the fields and SGEs it sets, and the kernel reads
// dma.num_sge SGEs (docs/abi.md §3.4). wr must have passed
// ValidateRecv for the queue slot belongs to.
func EncodeRecv(slot []byte, wr *RecvWQE) {
	// The SGE list is read into a local first: the stores into slot could
	// alias *wr for all the compiler knows, so it would reload the slice
	// header for every field.
	sges := wr.SGEs
	h := (*[RecvWQEHeaderSize]byte)(slot)
	*h = [RecvWQEHeaderSize]byte{}
	native.PutUint64(h[recvWRID:], wr.ID)
	payload := slot[RecvWQEHeaderSize:]
	var length uint32
	for i := range sges {
		putSGE((*[SGESize]byte)(payload[i*SGESize:]), sges[i])
		length += sges[i].Length
	}
	native.PutUint32(h[recvDMA+dmaLength:], length)
	native.PutUint32(h[recvDMA+dmaResid:], length)
	native.PutUint32(h[recvDMA+dmaNumSGE:], uint32(len(sges)))
}

// EncodeRecvOne is EncodeRecv for a receive of one SGE, the common
// receive: the 56 bytes of its WQE as seven 8-byte stores, where
// EncodeRecv clears the header, then writes its fields and loops over the
// SGEs (docs/perf-history.md, "rxe post and poll: what each change
// bought" item 29). The slot belongs to a queue of max_sge 1 or more. The words are those of a little-endian machine, as
// every GOARCH this package builds for is.
func EncodeRecvOne(slot []byte, id uint64, sge SGE) {
	w := (*[(RecvWQEHeaderSize + SGESize) / 8]uint64)(unsafe.Pointer((*[RecvWQEHeaderSize + SGESize]byte)(slot)))
	w[recvWRID/8] = id
	w[1] = 0                                                    // reserved, padding
	w[(recvDMA+dmaLength)/8] = uint64(sge.Length) * (1<<32 + 1) // length, resid
	w[(recvDMA+dmaCurSGE)/8] = 1 << 32                          // cur_sge 0, num_sge 1
	w[(recvDMA+dmaSGEOffset)/8] = 0                             // sge_offset, reserved
	*(*SGE)(unsafe.Pointer(&w[RecvWQEHeaderSize/8])) = sge
}

// The offsets EncodeRecvOne's words rely on: a negative array length does
// not compile.
var (
	_ [0 - recvWRID]byte
	_ [recvDMA - 16]byte
	_ [16 - recvDMA]byte
	_ [0 - dmaLength]byte
	_ [dmaResid - 4]byte
	_ [4 - dmaResid]byte
	_ [dmaCurSGE - 8]byte
	_ [8 - dmaCurSGE]byte
	_ [dmaNumSGE - 12]byte
	_ [12 - dmaNumSGE]byte
	_ [dmaSGEOffset - 16]byte
	_ [16 - dmaSGEOffset]byte
	_ [RecvWQEHeaderSize - 40]byte
	_ [40 - RecvWQEHeaderSize]byte
)

// putSGE writes a struct rxe_sge, whose layout SGE has (checked at compile
// time below), as one copy of the struct (two 8-byte moves on amd64).
func putSGE(d *[SGESize]byte, g SGE) {
	*(*SGE)(unsafe.Pointer(d)) = g
}

// SGE has struct rxe_sge's size and offsets: a negative array length does
// not compile.
var (
	_ [unsafe.Sizeof(SGE{}) - unsafe.Sizeof(abi.RxeSGE{})]byte
	_ [unsafe.Sizeof(abi.RxeSGE{}) - unsafe.Sizeof(SGE{})]byte
	_ [unsafe.Offsetof(SGE{}.Length) - unsafe.Offsetof(abi.RxeSGE{}.Length)]byte
	_ [unsafe.Offsetof(abi.RxeSGE{}.Length) - unsafe.Offsetof(SGE{}.Length)]byte
	_ [unsafe.Offsetof(SGE{}.LKey) - unsafe.Offsetof(abi.RxeSGE{}.LKey)]byte
	_ [unsafe.Offsetof(abi.RxeSGE{}.LKey) - unsafe.Offsetof(SGE{}.LKey)]byte
	_ [unsafe.Offsetof(SGE{}.Addr) - unsafe.Offsetof(abi.RxeSGE{}.Addr)]byte
	_ [unsafe.Offsetof(abi.RxeSGE{}.Addr) - unsafe.Offsetof(SGE{}.Addr)]byte
)

// RQ is the user side of an rxe receive queue or SRQ. Receives need no
// doorbell: the kernel's responder reads the ring when a packet arrives
// (kernel: drivers/infiniband/sw/rxe/rxe_resp.c check_resource; rdma-core:
// providers/rxe/rxe.c rxe_post_recv makes no system call).
//
// An RQ is not safe for concurrent use: hold the queue's receive lock.
type RQ struct {
	Producer
	maxSGE int
}

// NewRQ validates a mapped receive queue (rq_mi of CREATE_QP) or SRQ
// (mi of CREATE_SRQ / MODIFY_SRQ) against the max_recv_sge / max_sge the
// kernel returned.
func NewRQ(buf []byte, maxSGE int) (*RQ, error) {
	if maxSGE < 0 || maxSGE > MaxSGE {
		return nil, fmt.Errorf("rxe: receive queue max_sge %d is outside 0..%d", maxSGE, MaxSGE)
	}
	p, err := NewProducer(buf, RecvWQEHeaderSize+maxSGE*SGESize)
	if err != nil {
		return nil, err
	}
	return &RQ{Producer: *p, maxSGE: maxSGE}, nil
}

// MaxSGE returns the SGE limit the RQ validates against.
func (q *RQ) MaxSGE() int { return q.maxSGE }

// Post validates wr, writes it into the next free slot and publishes it.
// It returns ErrQueueFull when the ring is full and a validation error
// otherwise; in both cases nothing was written. It allocates nothing on
// success. The caller must not post while the QP is in RESET (librxe
// refuses with EINVAL; the kernel wipes the ring on reset).
func (q *RQ) Post(wr *RecvWQE) error {
	if q.Full() {
		return ErrQueueFull
	}
	if err := ValidateRecv(wr, q.maxSGE); err != nil {
		return err
	}
	EncodeRecv(q.Slot(), wr)
	q.Publish()
	return nil
}
