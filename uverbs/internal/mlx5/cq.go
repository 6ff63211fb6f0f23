package mlx5

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/mmio"
)

// WC is a work completion with libibverbs' values (struct ibv_wc: enum
// ibv_wc_status, ibv_wc_opcode, ibv_wc_flags). Poll writes the fields
// libmlx5 writes for the entry and leaves the others as they were: on an
// error only ID, Status, VendorErr and QPNum are set, on a successful send
// ByteLen only for READ and atomics (providers/mlx5/cq.c handle_good_req).
type WC struct {
	ID        uint64
	Status    uint32
	Opcode    uint32
	VendorErr uint32
	ByteLen   uint32
	// ImmData is the immediate value in host order (WCWithImm); the CQE
	// and ibv_wc.imm_data hold it big-endian.
	ImmData uint32
	// InvalidatedRKey is valid with WCWithInv; ibv_wc keeps it in a union
	// with imm_data.
	InvalidatedRKey uint32
	QPNum           uint32
	SrcQP           uint32
	Flags           uint32
	PKeyIndex       uint16
	SLID            uint16
	SL              uint8
	DLIDPathBits    uint8
	Port            uint8 // never set: ibv_wc has no port; the field keeps uverbs' layout
}

// Completion values: libibverbs' enum ibv_wc_opcode and ibv_wc_status,
// which the kernel's ib_wc_opcode and ib_wc_status equal, and the kernel's
// enum ib_wc_flags, which uverbs.WC carries (as rxe's CQEs do). libibverbs'
// ibv_wc_flags differ there: IBV_WC_WITH_INV is 8, and 4 is
// IBV_WC_IP_CSUM_OK.
const (
	WCOpSend        = 0
	WCOpRDMAWrite   = 1
	WCOpRDMARead    = 2
	WCOpCompSwap    = 3
	WCOpFetchAdd    = 4
	WCOpRecv        = 128
	WCOpRecvRDMAImm = 129

	WCFlagGRH     = 1
	WCFlagWithImm = 2
	WCFlagWithInv = 4 // IB_WC_WITH_INVALIDATE

	WCSuccess        = 0
	WCLocLenErr      = 1
	WCLocQPOpErr     = 2
	WCLocProtErr     = 4
	WCWRFlushErr     = 5
	WCMWBindErr      = 6
	WCBadRespErr     = 7
	WCLocAccessErr   = 8
	WCRemInvReqErr   = 9
	WCRemAccessErr   = 10
	WCRemOpErr       = 11
	WCRetryExcErr    = 12
	WCRNRRetryExcErr = 13
	WCRemAbortErr    = 16
	WCGeneralErr     = 21
)

// SyndromeStatus maps an error CQE's syndrome to the work-completion status
// (cq.c mlx5_handle_error_cqe; syndromes: mlx5dv.h MLX5_CQE_SYNDROME_*).
// Unknown syndromes are WCGeneralErr.
func SyndromeStatus(syndrome uint8) uint32 {
	switch syndrome {
	case 0x01:
		return WCLocLenErr
	case 0x02:
		return WCLocQPOpErr
	case 0x04:
		return WCLocProtErr
	case 0x05:
		return WCWRFlushErr
	case 0x06:
		return WCMWBindErr
	case 0x10:
		return WCBadRespErr
	case 0x11:
		return WCLocAccessErr
	case 0x12:
		return WCRemInvReqErr
	case 0x13:
		return WCRemAccessErr
	case 0x14:
		return WCRemOpErr
	case 0x15:
		return WCRetryExcErr
	case 0x16:
		return WCRNRRetryExcErr
	case 0x22:
		return WCRemAbortErr
	}
	return WCGeneralErr
}

// QP is what a CQ needs of a QP to complete its work requests: the send
// queue, and the receive queue or the SRQ its receives come from.
type QP struct {
	SQ  *SQ
	RQ  *RQ
	SRQ *SRQ
}

// CQConfig describes a completion queue.
type CQConfig struct {
	CQN        uint32
	Entries    int // ncqe, a power of two (ibv_cq.cqe + 1)
	CQEVersion int // 0: entries name QPs by QPN and SRQs by SRQN; 1: by user index
	// ClearWC zeroes each WC before Poll fills it. Without it the fields
	// a completion does not fill keep what they held, as libmlx5 leaves
	// them.
	ClearWC bool
}

// CQ is the user side of an mlx5 completion queue. It is not safe for
// concurrent use; Register and Poll must be serialised by the caller.
type CQ struct {
	cfg       CQConfig
	ring      []byte
	setCI     *atomic.Uint32
	armDB     *atomic.Uint32
	uar       []byte
	consIndex uint32
	armSN     uint32
	qps       map[uint32]*QP  // by QPN (version 0) or user index (1)
	srqs      map[uint32]*SRQ // by SRQN (version 0) or user index (1)
	// The QP of the last completion and its key, looked up again only
	// when the key changes (cq.c get_cur_rsc keeps cur_rsc the same way).
	lastQP  *QP
	lastKey uint32
}

// NewCQ checks the ring (Entries * 64 bytes), the 8-byte doorbell record and
// the UAR page the CQ doorbell is rung through.
func NewCQ(ring, dbrec, uar []byte, cfg CQConfig) (*CQ, error) {
	if cfg.Entries < 2 || cfg.Entries&(cfg.Entries-1) != 0 || len(ring) != cfg.Entries*CQESize {
		return nil, fmt.Errorf("mlx5: completion ring of %d bytes for %d entries; the count must be a power of two and the ring count*64 bytes", len(ring), cfg.Entries)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(ring)))%CQESize != 0 {
		// Poll loads the word of each entry's op_own atomically.
		return nil, fmt.Errorf("mlx5: completion ring at %p is not 64-byte aligned", unsafe.SliceData(ring))
	}
	if cfg.CQEVersion != 0 && cfg.CQEVersion != 1 {
		return nil, fmt.Errorf("mlx5: CQE version %d; versions 0 and 1 exist", cfg.CQEVersion)
	}
	if err := mmio.CheckView(dbrec, 0, 8); err != nil {
		return nil, fmt.Errorf("mlx5: CQ doorbell record: %w", err)
	}
	if err := mmio.CheckView(uar, cqDoorbellOff, 8); err != nil {
		return nil, fmt.Errorf("mlx5: CQ UAR page: %w", err)
	}
	return &CQ{
		cfg:   cfg,
		ring:  ring,
		setCI: mmio.U32(dbrec, 4*cqSetCI),
		armDB: mmio.U32(dbrec, 4*cqArmDB),
		uar:   uar,
		qps:   make(map[uint32]*QP),
		srqs:  make(map[uint32]*SRQ),
	}, nil
}

// RegisterQP makes completions naming key (the QPN, or the user index with
// CQE version 1) complete qp's work requests.
func (c *CQ) RegisterQP(key uint32, qp *QP) {
	c.qps[key] = qp
	c.lastQP = nil
}

// qp returns the QP registered under key, or nil.
func (c *CQ) qp(key uint32) *QP {
	if qp := c.lastQP; qp != nil && c.lastKey == key {
		return qp
	}
	qp := c.qps[key]
	c.lastQP, c.lastKey = qp, key
	return qp
}

// RegisterSRQ makes receive completions naming key (the SRQN, or the user
// index with CQE version 1) complete srq's work requests.
func (c *CQ) RegisterSRQ(key uint32, srq *SRQ) { c.srqs[key] = srq }

// Unregister forgets a QP or SRQ key.
func (c *CQ) Unregister(key uint32) {
	delete(c.qps, key)
	delete(c.srqs, key)
	c.lastQP = nil
}

// ConsumerIndex is the number of entries consumed so far.
func (c *CQ) ConsumerIndex() uint32 { return c.consIndex }

// next returns the offset of the next entry owned by software, or -1
// (cq.c get_sw_cqe: not MLX5_CQE_INVALID, and the owner bit equals the
// wrap parity of the consumer index).
func (c *CQ) next() int {
	n := c.consIndex
	off := int(n&uint32(c.cfg.Entries-1)) * CQESize
	opOwn := c.ring[off+cqeOpOwn]
	if opOwn>>4 == cqeInvalid {
		return -1
	}
	var parity uint8
	if n&uint32(c.cfg.Entries) != 0 {
		parity = 1
	}
	if opOwn&cqeOwnerMask != parity {
		return -1
	}
	return off
}

// Empty reports whether the CQ holds no completion for software, as Poll
// would find (it stores nothing; Poll stores the consumer index even when
// it finds none, as libmlx5 does).
func (c *CQ) Empty() bool { return c.next() < 0 }

// Poll decodes up to len(wcs) completions (cq.c poll_cq, mlx5_poll_one,
// mlx5_parse_cqe) and then writes the consumer index to the doorbell
// record. An entry it cannot attribute ends the call with ErrPoll after it
// was consumed, as libmlx5 does. It allocates nothing.
func (c *CQ) Poll(wcs []WC) (int, error) {
	n := 0
	var err error
	for n < len(wcs) {
		off := c.next()
		if off < 0 {
			break
		}
		c.consIndex++
		// Read the entry only after its owner bit (cq.c
		// mlx5_get_next_cqe: udma_from_device_barrier): the word that
		// holds it loaded again, with that ordering. (next reads it
		// plainly, as Empty needs no ordering.) The entry is in the ring
		// and 64-byte aligned, so the word is 4-byte aligned.
		mmio.LoadFromDevice32((*atomic.Uint32)(unsafe.Pointer(&c.ring[off+cqeOpOwn-3])))
		wc := &wcs[n]
		if c.cfg.ClearWC {
			*wc = WC{}
		}
		if err = c.parse((*[CQESize]byte)(c.ring[off:]), wc); err != nil {
			break
		}
		n++
	}
	// cq.c update_cons_index: a plain store, so release rather than
	// sync/atomic's XCHG.
	mmio.StoreRelease32(c.setCI, bits.ReverseBytes32(c.consIndex&0xffffff))
	return n, err
}

func (c *CQ) parse(cqe *[CQESize]byte, wc *WC) error {
	qpn := be.Uint32(cqe[cqeSopDropQPN:]) & 0xffffff
	srqnUIDX := be.Uint32(cqe[cqeSRQNUIDX:]) & 0xffffff
	wc.Flags = 0
	wc.QPNum = qpn
	opcode := cqe[cqeOpOwn] >> 4
	if cqe[cqeOpOwn]&cqeInlineScatter != 0 && opcode <= cqeRespSendInv {
		// Data scattered into the CQE: QPs are created without
		// scatter-to-CQE, so this entry is not ours (docs/mlx5.md §5).
		return ErrPoll
	}
	switch opcode {
	case cqeReq, cqeReqErr:
		key := qpn
		if c.cfg.CQEVersion == 1 {
			key = srqnUIDX
		}
		qp := c.qp(key)
		if qp == nil || qp.SQ == nil {
			return ErrPoll
		}
		sq := qp.SQ
		idx := int(be.Uint16(cqe[cqeWQECounter:])) & (sq.cfg.WQECount - 1)
		if opcode == cqeReq {
			goodReq(wc, cqe)
			wc.Status = WCSuccess
		} else {
			errorCQE(wc, cqe)
		}
		mmio.LoadAcquire32(&sq.head) // the post's IDs before them (SQ)
		wc.ID = sq.wrid[idx]
		// After the ID is read: a post may reuse the slot once it sees
		// the new tail.
		mmio.StoreRelease32(&sq.tail, sq.wqeHead[idx]+1)
	case cqeRespWrImm, cqeRespSend, cqeRespSendImm, cqeRespSendInv, cqeRespErr:
		if opcode == cqeRespErr {
			errorCQE(wc, cqe)
		} else {
			wc.ByteLen = be.Uint32(cqe[cqeByteCnt:])
		}
		rq, srq, ok := c.responder(qpn, srqnUIDX)
		if !ok {
			return ErrPoll
		}
		if srq != nil {
			ctr := int(be.Uint16(cqe[cqeWQECounter:]))
			if ctr >= srq.cfg.WQECount {
				return ErrPoll
			}
			wc.ID = srq.wrid[ctr]
			srq.free(ctr)
		} else {
			// v44 takes a QP receive's wr_id from the tail, in order
			// (docs/mlx5.md §5).
			tail := rq.tail.Load()
			mmio.LoadAcquire32(&rq.head)
			wc.ID = rq.wrid[tail&uint32(rq.cfg.WQECount-1)]
			mmio.StoreRelease32(&rq.tail, tail+1)
		}
		if opcode != cqeRespErr {
			wc.Status = WCSuccess
			responder(wc, cqe, opcode)
		}
	case cqeResize:
		// Nothing but flags and QPN (cq.c mlx5_parse_cqe).
	default:
		// NO_PACKET (tag matching), SIG_ERR (signature MRs) and the
		// reserved opcodes: not produced for the queues this package
		// creates.
		return ErrPoll
	}
	return nil
}

// responder finds the receive queue of a responder completion (cq.c
// get_cur_rsc).
func (c *CQ) responder(qpn, srqnUIDX uint32) (*RQ, *SRQ, bool) {
	if c.cfg.CQEVersion == 1 {
		if qp := c.qp(srqnUIDX); qp != nil {
			if qp.SRQ != nil {
				return nil, qp.SRQ, true
			}
			return qp.RQ, nil, qp.RQ != nil
		}
		if srq := c.srqs[srqnUIDX]; srq != nil {
			return nil, srq, true
		}
		return nil, nil, false
	}
	if srqnUIDX != 0 {
		srq := c.srqs[srqnUIDX]
		return nil, srq, srq != nil
	}
	qp := c.qp(qpn)
	if qp == nil || qp.RQ == nil {
		return nil, nil, false
	}
	return qp.RQ, nil, true
}

// goodReq fills a successful send completion (cq.c handle_good_req): the
// opcode of the WQE is the top byte of sop_drop_qpn.
func goodReq(wc *WC, cqe *[CQESize]byte) {
	switch cqe[cqeSopDropQPN] {
	case opcodeRDMAWriteImm:
		wc.Flags |= WCFlagWithImm
		wc.Opcode = WCOpRDMAWrite
	case opcodeRDMAWrite:
		wc.Opcode = WCOpRDMAWrite
	case opcodeSendImm:
		wc.Flags |= WCFlagWithImm
		wc.Opcode = WCOpSend
	case opcodeSend, opcodeSendInval:
		wc.Opcode = WCOpSend
	case opcodeRDMARead:
		wc.Opcode = WCOpRDMARead
		wc.ByteLen = be.Uint32(cqe[cqeByteCnt:])
	case opcodeAtomicCS:
		wc.Opcode = WCOpCompSwap
		wc.ByteLen = 8
	case opcodeAtomicFA:
		wc.Opcode = WCOpFetchAdd
		wc.ByteLen = 8
	}
}

// responder fills a receive completion (cq.c handle_responder).
func responder(wc *WC, cqe *[CQESize]byte, opcode uint8) {
	immInval := be.Uint32(cqe[cqeImmInvalPKey:])
	switch opcode {
	case cqeRespWrImm:
		wc.Opcode = WCOpRecvRDMAImm
		wc.Flags |= WCFlagWithImm
		wc.ImmData = immInval
	case cqeRespSend:
		wc.Opcode = WCOpRecv
	case cqeRespSendImm:
		wc.Opcode = WCOpRecv
		wc.Flags |= WCFlagWithImm
		wc.ImmData = immInval
	case cqeRespSendInv:
		wc.Opcode = WCOpRecv
		wc.Flags |= WCFlagWithInv
		wc.InvalidatedRKey = immInval
	}
	flagsRQPN := be.Uint32(cqe[cqeFlagsRQPN:])
	wc.SLID = be.Uint16(cqe[cqeSLID:])
	wc.SL = uint8(flagsRQPN>>24) & 0xf
	wc.SrcQP = flagsRQPN & 0xffffff
	wc.DLIDPathBits = cqe[cqeMLPath] & 0x7f
	if (flagsRQPN>>28)&3 != 0 {
		wc.Flags |= WCFlagGRH
	}
	wc.PKeyIndex = uint16(immInval)
}

// errorCQE fills status and vendor syndrome from a struct mlx5_err_cqe.
func errorCQE(wc *WC, cqe *[CQESize]byte) {
	wc.Status = SyndromeStatus(cqe[cqeSyndrome])
	wc.VendorErr = uint32(cqe[cqeVendorSynd])
}

// Arm requests an event for the next completion, or the next solicited
// one (cq.c mlx5_arm_cq): the arm word of the doorbell record, then the
// 64-bit CQ doorbell in the UAR page.
func (c *CQ) Arm(solicited bool) {
	sn := c.armSN & 3
	ci := c.consIndex & 0xffffff
	cmd := uint32(cqReqNot)
	if solicited {
		cmd = cqReqNotSol
	}
	word := sn<<28 | cmd | ci
	c.armDB.Store(bits.ReverseBytes32(word))
	mmio.WCStart()
	mmio.Write64(mmio.Ptr64(c.uar, cqDoorbellOff), bits.ReverseBytes64(uint64(word)<<32|uint64(c.cfg.CQN)))
	mmio.FlushWrites()
}

// Event counts a completion event of this CQ; the next Arm uses the next
// arm sequence number (cq.c mlx5_cq_event).
func (c *CQ) Event() { c.armSN++ }

// CQEntries is the number of entries of a CQ created for depth
// completions, and the CQE count CREATE_CQ passes (entries − 1): libmlx5
// rounds depth+1 up to a power of two, at most 1<<24 (verbs.c create_cq).
func CQEntries(depth int) (int, error) {
	if depth <= 0 || depth >= 1<<24 {
		return 0, fmt.Errorf("mlx5: CQ depth %d: between 1 and %d", depth, 1<<24-1)
	}
	return roundupPow2(depth + 1), nil
}

// InitCQRing prepares a new CQ ring of 64-byte entries the way libmlx5
// does before CREATE_CQ (cq.c mlx5_alloc_cq_buf): zeroed, every entry's
// opcode MLX5_CQE_INVALID, so that none looks owned by software until the
// device writes it.
func InitCQRing(ring []byte) {
	clear(ring)
	for off := 0; off+CQESize <= len(ring); off += CQESize {
		ring[off+cqeOpOwn] = cqeInvalid << 4
	}
}
