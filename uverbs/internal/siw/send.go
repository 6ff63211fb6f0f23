package siw

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/mmio"
)

// SendLimits are what a send work request is checked against: the send
// capabilities CREATE_QP returned, whether the QP signals every request
// (sq_sig_all), and the device's name for the errors.
type SendLimits struct {
	MaxSGE    int  // cap.max_send_sge, at most MaxSGE (6)
	MaxInline int  // cap.max_inline_data, at most MaxInline (80)
	SigAll    bool // sq_sig_all: every request gets SIGNALLED (libsiw push_send_wqe)
	Device    string
}

// CheckQPType refuses every QP type but RC: siw creates only RC QPs
// (kernel: siw_verbs.c siw_create_qp returns EOPNOTSUPP otherwise).
func CheckQPType(t QPType, device string) error {
	if t != QPTypeRC {
		return fmt.Errorf("%w (device %s, QP type %d)", ErrQPType, device, t)
	}
	return nil
}

// siwOpcode maps an ib_wr_opcode that siw accepts to enum siw_opcode
// (providers/siw/siw.c map_send_opcode; kernel: siw_verbs.c siw_post_send),
// with ok false for the others.
func siwOpcode(op WROpcode) (code uint8, ok bool) {
	switch op {
	case OpWrite:
		return abi.SIW_OP_WRITE, true
	case OpSend:
		return abi.SIW_OP_SEND, true
	case OpRead:
		return abi.SIW_OP_READ, true
	case OpSendInv:
		return abi.SIW_OP_SEND_REMOTE_INV, true
	}
	return 0, false
}

// CheckSend checks wr against siw's rules and the QP's limits before
// anything is written (docs/siw.md §5): the opcode (no immediate data, no
// atomics, nothing siw lacks), the flags, the SGE count and total length,
// an RDMA READ's single SGE and no fence on it, inline only for SEND and
// RDMA WRITE and within max_inline_data, and no UD address. Every refusal
// names lim.Device. It allocates only to build an error.
func CheckSend(wr *SendWR, lim *SendLimits) error {
	if _, ok := siwOpcode(wr.Op); !ok {
		switch wr.Op {
		case OpWriteImm, OpSendImm:
			return fmt.Errorf("%w (device %s, opcode %d)", ErrNoImmediate, lim.Device, wr.Op)
		case OpAtomicCmpSwap, OpAtomicFetchAdd:
			return fmt.Errorf("%w (device %s, opcode %d)", ErrNoAtomics, lim.Device, wr.Op)
		}
		return fmt.Errorf("%w (device %s, opcode %d)", ErrOpcodeNotSupported, lim.Device, wr.Op)
	}
	if wr.Flags&^siwFlags != 0 {
		return fmt.Errorf("%w (device %s, flags %#x)", ErrBadSendFlags, lim.Device, uint32(wr.Flags&^siwFlags))
	}
	sges := wr.SGEs
	if len(sges) > lim.MaxSGE {
		return fmt.Errorf("%w (device %s, %d SGEs, max_send_sge %d)", ErrTooManySGEs, lim.Device, len(sges), lim.MaxSGE)
	}
	var length uint64
	for i := range sges {
		length += uint64(sges[i].Length)
	}
	if length > math.MaxUint32 {
		return fmt.Errorf("%w (device %s, %d bytes)", ErrLengthOverflow, lim.Device, length)
	}
	if wr.Op == OpRead {
		// Kernel: siw_verbs.c siw_post_send (iWARP reads into one SGE);
		// siw_qp.c siw_activate_tx_from_sq forces num_sge to 1 and
		// refuses a fenced READ.
		if len(sges) != 1 {
			return fmt.Errorf("%w (device %s, %d SGEs)", ErrReadSGE, lim.Device, len(sges))
		}
		if wr.Flags&SendFence != 0 {
			return fmt.Errorf("%w (device %s)", ErrReadFence, lim.Device)
		}
	}
	if wr.Flags&SendInline != 0 {
		// Kernel: siw_qp.c siw_activate_tx_from_sq takes inline data only
		// for SIW_OP_SEND and SIW_OP_WRITE.
		if wr.Op != OpSend && wr.Op != OpWrite {
			return fmt.Errorf("%w (device %s, opcode %d)", ErrInlineNotAllowed, lim.Device, wr.Op)
		}
		if length > uint64(lim.MaxInline) {
			return fmt.Errorf("%w (device %s, %d bytes, max_inline_data %d)", ErrInlineTooLong, lim.Device, length, lim.MaxInline)
		}
	}
	if wr.AH != nil || wr.RemoteQPN != 0 || wr.RemoteQKey != 0 {
		return fmt.Errorf("%w (device %s)", ErrUDAddress, lim.Device)
	}
	return nil
}

// sqeFlags returns the SIW_WQE_* flags of wr, VALID included
// (providers/siw/siw.c map_send_flags).
func sqeFlags(f SendFlags, sigAll bool) uint32 {
	w := uint32(abi.SIW_WQE_VALID)
	if f&SendSignaled != 0 || sigAll {
		w |= abi.SIW_WQE_SIGNALLED
	}
	if f&SendSolicited != 0 {
		w |= abi.SIW_WQE_SOLICITED
	}
	if f&SendInline != 0 {
		w |= abi.SIW_WQE_INLINE
	}
	if f&SendFence != 0 {
		w |= abi.SIW_WQE_READ_FENCE
	}
	return w
}

// encodeSQE writes every field of wr into the SQE at e except the flag
// word, and returns the flag word to publish: flags | num_sge<<16 |
// opcode<<24 (docs/siw.md §4). wr must have passed CheckSend.
func encodeSQE(e unsafe.Pointer, wr *SendWR, sigAll bool) uint32 {
	code, _ := siwOpcode(wr.Op)
	put64(e, sqeID, wr.ID)
	rkey := wr.RKey
	if wr.Op == OpSendInv {
		// The rkey to invalidate travels in the SQE's rkey (kernel:
		// siw_verbs.c siw_post_send sets it from ex.invalidate_rkey).
		rkey = wr.InvalidateRKey
	}
	put32(e, sqeRKey, rkey)
	put64(e, sqeRaddr, wr.RemoteAddr)
	sges := wr.SGEs
	num := uint32(len(sges))
	if wr.Flags&SendInline != 0 {
		// The bytes go after sge[0], whose length holds their count; the
		// kernel points sge[0] at them and sets num_sge to 1 when it takes
		// the SQE (siw_qp.c siw_activate_tx_from_sq).
		data := unsafe.Slice((*byte)(unsafe.Add(e, inlineData)), MaxInline)
		off := 0
		for i := range sges {
			n := int(sges[i].Length)
			copy(data[off:off+n], mmio.Bytes(sges[i].Addr, n))
			off += n
		}
		*(*SGE)(unsafe.Add(e, sqeSGE)) = SGE{Length: uint32(off)}
		num = 1
	} else {
		dst := unsafe.Slice((*SGE)(unsafe.Add(e, sqeSGE)), MaxSGE)
		copy(dst[:len(sges)], sges)
	}
	return sqeFlags(wr.Flags, sigAll) | num<<16 | uint32(code)<<24
}

// SQ is the user side of a siw send queue: the ring of struct siw_sqe
// mapped through sq_key, and the limits requests are checked against. It
// does not ring the doorbell; the caller writes POST_SEND (wr_count 0) when
// DoorbellNeeded says so (docs/siw.md §7).
//
// An SQ is not safe for concurrent use: hold the QP's send lock.
type SQ struct {
	ring
	lim SendLimits
}

// NewSQ checks a mapped send queue of num elements (num_sqe of struct
// siw_uresp_create_qp) against the limits.
func NewSQ(buf []byte, num uint32, lim SendLimits) (*SQ, error) {
	if lim.MaxSGE < 0 || lim.MaxSGE > MaxSGE || lim.MaxInline < 0 || lim.MaxInline > MaxInline {
		return nil, fmt.Errorf("siw: send queue limits max_send_sge %d, max_inline_data %d are outside the siw maxima %d and %d", lim.MaxSGE, lim.MaxInline, MaxSGE, MaxInline)
	}
	r, err := newRing(buf, num, SQESize, 0, "send queue")
	if err != nil {
		return nil, err
	}
	return &SQ{ring: r, lim: lim}, nil
}

// Limits returns the limits the SQ checks against.
func (q *SQ) Limits() SendLimits { return q.lim }

// Next returns the producer's counter: pass it, taken before a batch, to
// DoorbellNeeded after it.
func (q *SQ) Next() uint32 { return q.next }

// Write encodes wr into the next element and hands it to the kernel: the
// element's fields first, then its flag word with VALID, as one
// sequentially consistent store (libsiw's atomic_store in push_send_wqe).
// Release would do for the element itself; the full order is for
// DoorbellNeeded, which loads another element's flag right after (a store,
// then a load of another word: docs/siw.md §7). wr must have passed
// CheckSend with the SQ's limits, and the element must be free (Room).
// It allocates nothing.
func (q *SQ) Write(wr *SendWR) {
	e := q.elem(q.next)
	w := encodeSQE(e, wr, q.lim.SigAll)
	(*atomic.Uint32)(unsafe.Add(e, flagWordOff)).Store(w)
	q.next++
}

// Post checks wr, writes it into the next element and publishes it. It
// returns ErrQueueFull or a refusal (errors.Is(err, ErrInvalidWR)); in both
// cases nothing was written. It allocates nothing on success.
func (q *SQ) Post(wr *SendWR) error {
	if q.Full() {
		return ErrQueueFull
	}
	if err := CheckSend(wr, &q.lim); err != nil {
		return err
	}
	q.Write(wr)
	return nil
}

// DoorbellNeeded reports whether the kernel must be told about the
// elements written since the counter was start (libsiw siw_post_send): yes
// if the whole ring was written, or if the element before the first new
// one has been taken by the kernel (its VALID flag is clear), which means
// its send processing may have gone idle. While that element is still
// VALID, the kernel has work queued before the new ones and takes them in
// order without a doorbell. It reports false when nothing was written.
func (q *SQ) DoorbellNeeded(start uint32) bool {
	n := q.next - start
	if n == 0 {
		return false
	}
	if n >= q.num {
		return true
	}
	return !q.busy(start - 1)
}

// PendingUsesLKey reports whether a send work request the kernel has not
// taken yet names lkey in its SGE list. Inline requests carry data, not
// keys. A request the kernel has taken is in its own copy, no longer in
// the ring (docs/siw.md §8).
func (q *SQ) PendingUsesLKey(lkey uint32) bool {
	return q.forPending(func(e unsafe.Pointer) bool {
		w := get32(e, flagWordOff)
		if w&abi.SIW_WQE_INLINE != 0 {
			return false
		}
		return sgesUseLKey(unsafe.Add(e, sqeSGE), w>>16&0xff, lkey)
	})
}

// sgesUseLKey reports whether one of the first num SGEs at p (at most
// MaxSGE) has lkey.
func sgesUseLKey(p unsafe.Pointer, num uint32, lkey uint32) bool {
	sges := unsafe.Slice((*SGE)(p), MaxSGE)
	for i := range min(int(num), MaxSGE) {
		if sges[i].LKey == lkey {
			return true
		}
	}
	return false
}
