package mlx5

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/mmio"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The vocabulary is the providers' (uverbs/internal/provider): opcodes
// and flags with the libibverbs values (enum ibv_wr_opcode, ibv_send_flags).
type (
	SendOpcode = rdma.WROpcode
	SendFlags  = rdma.SendFlags
	QPType     = provider.QPType
	SGE        = rdma.SGE
)

const (
	OpRDMAWrite         = rdma.OpWrite
	OpRDMAWriteWithImm  = rdma.OpWriteImm
	OpSend              = rdma.OpSend
	OpSendWithImm       = rdma.OpSendImm
	OpRDMARead          = rdma.OpRead
	OpAtomicCmpAndSwp   = rdma.OpAtomicCmpSwap
	OpAtomicFetchAndAdd = rdma.OpAtomicFetchAdd
	OpSendWithInv       = rdma.OpSendInv

	SendFence     = rdma.SendFence
	SendSignaled  = rdma.SendSignaled
	SendSolicited = rdma.SendSolicited
	SendInline    = rdma.SendInline

	sendFlagsKnown = SendFence | SendSignaled | SendSolicited | SendInline

	QPTypeRC = provider.QPTypeRC
	QPTypeUC = provider.QPTypeUC
	QPTypeUD = provider.QPTypeUD
)

// deviceOpcode maps an opcode to the WQE opcode (qp.c mlx5_ib_opcode).
// LOCAL_INV (7) and BIND_MW (8), UMR WQEs in libmlx5, have no entry:
// opcodeAllowed refuses them.
var deviceOpcode = [...]uint8{
	OpRDMAWrite:         opcodeRDMAWrite,
	OpRDMAWriteWithImm:  opcodeRDMAWriteImm,
	OpSend:              opcodeSend,
	OpSendWithImm:       opcodeSendImm,
	OpRDMARead:          opcodeRDMARead,
	OpAtomicCmpAndSwp:   opcodeAtomicCS,
	OpAtomicFetchAndAdd: opcodeAtomicFA,
	OpSendWithInv:       opcodeSendInval,
}

// AddressVector is an AH's struct mlx5_wqe_av (48 bytes), as libmlx5 builds
// it in mlx5_create_ah; a UD send copies it into the datagram segment.
type AddressVector [DatagramSize]byte

// SendWR is a send work request.
type SendWR struct {
	ID     uint64
	Opcode SendOpcode
	Flags  SendFlags
	// SGEs are the local buffers. With SendInline their bytes are copied
	// into the WQE from the addresses in Addr, which must be mapped.
	SGEs []SGE
	// ImmData is the immediate value of *_WITH_IMM in host order; the WQE
	// carries it big-endian (ibv_send_wr.imm_data is __be32).
	ImmData uint32
	// InvalidateRKey is the peer's key SEND_WITH_INV invalidates, in host
	// order (ibv_send_wr.invalidate_rkey); the WQE carries it big-endian
	// where the immediate goes (qp.c send_ieth).
	InvalidateRKey uint32
	RemoteAddr     uint64
	RKey           uint32
	CompareAdd     uint64
	Swap           uint64
	// UD only: the AH's address vector, the destination QPN and Q_Key.
	AV         *AddressVector
	RemoteQPN  uint32
	RemoteQKey uint32
}

// SQConfig describes a send queue as CREATE_QP set it up (SQSize gives
// WQECount, MaxPost and MaxInline as libmlx5 computes them).
type SQConfig struct {
	QPType    QPType
	QPN       uint32
	WQECount  int  // WQEBBs in the ring, a power of two
	MaxPost   int  // work requests the ring holds (sq.max_post)
	MaxSGE    int  // sq.max_gs
	MaxInline int  // max_inline_data
	SignalAll bool // sq_sig_all: every WQE asks for a completion
	Atomics   bool // the device supports atomics (qp->atomics_enabled)
}

// BlueFlame is a QP's UAR register pair (struct mlx5_bf): Reg is the
// mapped register area, two halves of BufSize bytes each (bf_reg_size / 2),
// starting BFRegOffset into a UAR page. Dedicated is false for the bfreg
// every context shares (uuarn 0), which takes only 8-byte doorbells and
// has no halves: libmlx5 leaves its buf_size 0 (mlx5.c mlx5_init_context
// sets buf_size only for bfi != 0), so post_send_db's offset ^= buf_size
// never moves and every doorbell lands at the register's start. BufSize
// is 0 there too. Reg
// and BufSize must not change once NewSQ has checked them: the doorbell
// writes the register through a pointer on their word.
type BlueFlame struct {
	Reg       []byte
	BufSize   int
	Dedicated bool
	// PreferBF uses BlueFlame for every single-WR post that fits, not
	// only for inline ones (libmlx5: MLX5_POST_SEND_PREFER_BF).
	PreferBF bool
	// Disabled never uses BlueFlame (libmlx5: MLX5_SHUT_UP_BF).
	Disabled bool
	// Lock, if not nil, is held around each doorbell: the register is
	// shared by QPs whose posts run at once, and a doorbell flips its
	// half. nil for a register one QP owns, whose posts are serialised
	// already (libmlx5: mlx5_bf.lock, taken when need_lock).
	Lock   sync.Locker
	offset int
}

// SQ is the send side of an mlx5 QP. Posts are not safe for concurrent
// use, and neither are polls of its CQ, but one post may run beside one
// poll (libmlx5 reads sq.tail without the CQ's lock, qp.c
// mlx5_wq_overflow). They share the request IDs and two counters: a post
// stores head with release after the IDs, and a poll loads it with
// acquire before it reads one; a poll stores tail with release after it
// read the ID, and a post loads it with acquire before it reuses the
// slot. On hardware the device orders the first pair too (the doorbell
// comes after the IDs, the completion before the read), but the Go memory
// model and the race detector do not see the device.
type SQ struct {
	cfg     SQConfig
	ring    []byte // WQECount * 64 bytes
	db      *atomic.Uint32
	bf      *BlueFlame
	curPost uint32        // in WQEBBs (sq.cur_post)
	head    atomic.Uint32 // work requests posted (sq.head)
	tail    atomic.Uint32 // work requests retired by the CQ (sq.tail)
	wrid    []uint64
	wqeHead []uint32
}

// NewSQ checks cfg against the ring and the doorbell record (8 bytes, the
// QP's struct of receive and send counters) and returns the send queue.
func NewSQ(ring, dbrec []byte, bf *BlueFlame, cfg SQConfig) (*SQ, error) {
	switch cfg.QPType {
	case QPTypeRC, QPTypeUC, QPTypeUD:
	default:
		return nil, fmt.Errorf("mlx5: send queue for QP type %v; user QPs are RC, UC or UD", cfg.QPType)
	}
	if cfg.WQECount <= 0 || cfg.WQECount&(cfg.WQECount-1) != 0 || len(ring) != cfg.WQECount*SendWQEBB {
		return nil, fmt.Errorf("mlx5: send ring of %d bytes for %d WQEBBs; the count must be a power of two and the ring count*64 bytes", len(ring), cfg.WQECount)
	}
	if cfg.MaxPost <= 0 || cfg.MaxPost > cfg.WQECount || cfg.MaxSGE < 0 || cfg.MaxInline < -inlSegHdr {
		return nil, fmt.Errorf("mlx5: send queue limits max_post %d, max_gs %d, max_inline %d do not fit a ring of %d WQEBBs", cfg.MaxPost, cfg.MaxSGE, cfg.MaxInline, cfg.WQECount)
	}
	if err := mmio.CheckView(dbrec, 0, 8); err != nil {
		return nil, fmt.Errorf("mlx5: QP doorbell record: %w", err)
	}
	if bf == nil || bf.BufSize < 0 || bf.BufSize == 0 && bf.Dedicated || bf.BufSize%SendWQEBB != 0 || bf.BufSize > len(bf.Reg)/2 { // (2*BufSize could overflow)
		return nil, fmt.Errorf("mlx5: BlueFlame register area must hold two halves of a non-zero multiple of 64 bytes (no halves only on the shared bfreg)")
	}
	if err := mmio.CheckView(bf.Reg, 0, 8); err != nil {
		return nil, fmt.Errorf("mlx5: BlueFlame register: %w", err)
	}
	return &SQ{
		cfg:     cfg,
		ring:    ring,
		db:      mmio.U32(dbrec, 4*sndDBR),
		bf:      bf,
		wrid:    make([]uint64, cfg.WQECount),
		wqeHead: make([]uint32, cfg.WQECount),
	}, nil
}

// Config returns the queue's configuration.
func (q *SQ) Config() SQConfig { return q.cfg }

// Outstanding is the number of posted work requests the CQ has not retired.
func (q *SQ) Outstanding() int { return int(q.head.Load() - mmio.LoadAcquire32(&q.tail)) }

// Retire retires every posted work request, as a CQ's poll of the last
// one's completion does. It is for queues with no device behind them (the
// native benchmarks); a real QP's requests are retired by its CQ.
func (q *SQ) Retire() { mmio.StoreRelease32(&q.tail, q.head.Load()) }

// Validate checks wr as libmlx5 does while it builds the WQE, and the
// request's shape for the QP type, without writing anything.
func (q *SQ) Validate(wr *SendWR) error {
	if int(wr.Opcode) >= len(deviceOpcode) || !opcodeAllowed(q.cfg.QPType, wr.Opcode) {
		return fmt.Errorf("%w: opcode %d on a %v QP", ErrBadOpcode, wr.Opcode, q.cfg.QPType)
	}
	if wr.Flags&^sendFlagsKnown != 0 {
		return fmt.Errorf("%w: %#x", ErrBadSendFlags, uint32(wr.Flags&^sendFlagsKnown))
	}
	if len(wr.SGEs) > q.cfg.MaxSGE {
		return fmt.Errorf("%w: %d SGEs, max_send_sge is %d", ErrTooManySGEs, len(wr.SGEs), q.cfg.MaxSGE)
	}
	if wr.Opcode == OpAtomicCmpAndSwp || wr.Opcode == OpAtomicFetchAndAdd {
		if !q.cfg.Atomics {
			return ErrAtomicsDisabled
		}
	}
	if wr.Flags&SendInline != 0 && len(wr.SGEs) > 0 {
		// Inline without SGEs is an empty send (qp.c checks num_sge).
		switch wr.Opcode {
		case OpRDMAWrite, OpRDMAWriteWithImm, OpSend, OpSendWithImm, OpSendWithInv:
		default:
			return fmt.Errorf("%w: opcode %d", ErrInlineNotAllowed, wr.Opcode)
		}
		// qp.c set_data_inl_seg: the running total against max_inline_data.
		var n uint64
		for i := range wr.SGEs {
			n += uint64(wr.SGEs[i].Length)
		}
		if q.cfg.MaxInline < 0 || n > uint64(q.cfg.MaxInline) {
			return fmt.Errorf("%w: %d bytes, max_inline_data is %d", ErrInlineTooLong, n, q.cfg.MaxInline)
		}
	}
	if (q.cfg.QPType == QPTypeUD) != (wr.AV != nil) {
		return fmt.Errorf("%w: %v QP", ErrUDAddress, q.cfg.QPType)
	}
	return nil
}

// plain reports whether Validate accepts a request whose opcode the QP
// type allows without looking further: not an atomic, no flag but fence,
// signaled, solicited and inline, SGEs within max_send_sge, an address
// vector exactly on a UD QP, and inline data, if any, from one SGE within
// max_inline_data and not for a READ. It is inlined, so the common request
// skips the call.
func (q *SQ) plain(wr *SendWR) bool {
	if wr.Flags&^(SendFence|SendSignaled|SendSolicited|SendInline) != 0 || wr.Opcode > OpRDMARead ||
		len(wr.SGEs) > q.cfg.MaxSGE || (q.cfg.QPType == QPTypeUD) != (wr.AV != nil) {
		return false
	}
	if wr.Flags&SendInline == 0 || len(wr.SGEs) == 0 {
		return true
	}
	return len(wr.SGEs) == 1 && wr.Opcode != OpRDMARead && int64(wr.SGEs[0].Length) <= int64(q.cfg.MaxInline)
}

// opcodeAllowed reports whether a QP of type t takes op, an index of
// deviceOpcode. libmlx5 looks only at the table's bounds (qp.c
// _mlx5_post_send) and leaves the rest to the device; here a request the
// QP type cannot carry is refused before it is written, as
// provider.CheckSend refuses it.
func opcodeAllowed(t QPType, op SendOpcode) bool {
	switch t {
	case QPTypeRC:
		return op <= OpAtomicFetchAndAdd || op == OpSendWithInv
	case QPTypeUC:
		return op <= OpSendWithImm || op == OpSendWithInv
	case QPTypeUD:
		return op == OpSend || op == OpSendWithImm
	}
	return false
}

// Post validates every request of wrs, checks the queue has room for all
// (qp.c mlx5_wq_overflow), writes them and rings the doorbell once
// (qp.c _mlx5_post_send, post_send_db). On an error nothing was written and
// the index of the refused request is returned with it. It allocates
// nothing.
func (q *SQ) Post(wrs []SendWR) (int, error) { return q.post(wrs, false) }

// PostPlain is Post for a list the caller has checked already, each
// request with provider.PlainSend (and provider.PlainInline if inline) against the
// SQ's max_send_sge and max_inline_data (0 for libmlx5's −4), as uverbs'
// PostSend does: such a request passes Post's per-request checks, so only
// the room is checked here (TestPostPlain posts every such request both
// ways). What a refusal returns is Post's.
func (q *SQ) PostPlain(wrs []SendWR) (int, error) { return q.post(wrs, true) }

// post is Post, and with checked PostPlain.
func (q *SQ) post(wrs []SendWR, checked bool) (int, error) {
	// A queue whose max_inline_data is libmlx5's −4 refuses even an empty
	// inline SGE, which a check against a limit of 0 lets past.
	checked = checked && q.cfg.MaxInline >= 0
	// One request that passes every check, the common case, in one pass
	// without postList's loops (the same bytes and doorbell, TestPostOne);
	// anything else, refusals included, takes postList.
	if len(wrs) == 1 {
		wr := &wrs[0]
		if op := wr.Opcode; q.Outstanding() < q.cfg.MaxPost && (checked || int(op) < len(deviceOpcode) && opcodeAllowed(q.cfg.QPType, op) && q.plain(wr)) {
			head := q.head.Load()
			inline := wr.Flags&SendInline != 0 && len(wr.SGEs) > 0
			var ctrl, size int
			switch {
			case inline && q.cfg.QPType != QPTypeUD && op < OpRDMARead:
				// encodeInline knows the opcodes below READ only, as
				// in postList.
				ctrl, size = q.encodeInline(wr, head)
			case inline || len(wr.SGEs) > maxBlockSGEs:
				ctrl, size = q.encode(wr, head)
			case q.cfg.QPType != QPTypeUD && op <= OpRDMARead:
				ctrl, size = q.encodeBlocks(wrs, head)
			case q.cfg.QPType == QPTypeUD && q.cfg.WQECount > 1:
				ctrl, size = q.encodeUD(wr, head)
			default:
				ctrl, size = q.encode(wr, head)
			}
			mmio.StoreRelease32(&q.head, head+1)
			q.ringDoorbell(1, inline, ctrl, size)
			return 0, nil
		}
	}
	return q.postList(wrs, checked)
}

// postList is post for any list.
func (q *SQ) postList(wrs []SendWR, checked bool) (int, error) {
	outstanding := q.Outstanding()
	// The requests that pass the checks at once, in a loop without calls
	// (which would cost every request the spills of the registers the
	// calls' arguments need); from the first other one on, checkList. A
	// checked list needs only room, looked at once.
	i := 0
	if checked && outstanding+len(wrs) <= q.cfg.MaxPost {
		i = len(wrs)
	}
	for ; i < len(wrs); i++ {
		wr := &wrs[i]
		if outstanding+i >= q.cfg.MaxPost || !checked && (int(wr.Opcode) >= len(deviceOpcode) || !opcodeAllowed(q.cfg.QPType, wr.Opcode) || !q.plain(wr)) {
			break
		}
	}
	if i < len(wrs) {
		if j, err := q.checkList(wrs, i, outstanding); err != nil {
			return j, err
		}
	}
	if len(wrs) == 0 {
		return 0, nil
	}
	head := q.head.Load()
	inline := false
	var ctrl, size int
	connected := q.cfg.QPType != QPTypeUD
	done := 0
	if connected {
		// The common list, requests of an RC or UC QP that encodeBlocks
		// takes: one call for all, or for those before the first it
		// does not take.
		before := q.curPost
		ctrl, size = q.encodeBlocks(wrs, head)
		done = int(q.curPost - before) // one WQEBB each
	}
	// The rest, each to an encoder that writes whole blocks (encodeBlocks,
	// encodeUD) if it can, else to encode.
	udBlocks := !connected && q.cfg.WQECount > 1
	for i := done; i < len(wrs); i++ {
		wr := &wrs[i]
		switch {
		case wr.Flags&SendInline != 0 && len(wr.SGEs) > 0:
			inline = true
			if connected && wr.Opcode < OpRDMARead {
				ctrl, size = q.encodeInline(wr, head+uint32(i))
			} else {
				ctrl, size = q.encode(wr, head+uint32(i))
			}
		case len(wr.SGEs) > maxBlockSGEs:
			ctrl, size = q.encode(wr, head+uint32(i))
		case connected && wr.Opcode <= OpRDMARead:
			ctrl, size = q.encodeBlocks(wrs[i:i+1], head+uint32(i))
		case udBlocks:
			ctrl, size = q.encodeUD(wr, head+uint32(i))
		default:
			ctrl, size = q.encode(wr, head+uint32(i))
		}
	}
	// Published to the CQ's polls before the doorbell (SQ).
	mmio.StoreRelease32(&q.head, head+uint32(len(wrs)))
	q.ringDoorbell(len(wrs), inline, ctrl, size)
	return 0, nil
}

// checkList is postList's check of wrs from index i on, where the first
// request its loop did not pass is: libmlx5's order, the opcode, then
// room, then the rest (Validate for a request plain does not pass). It
// returns the index of the first request refused, with the error.
func (q *SQ) checkList(wrs []SendWR, i, outstanding int) (int, error) {
	for ; i < len(wrs); i++ {
		if op := wrs[i].Opcode; int(op) >= len(deviceOpcode) || !opcodeAllowed(q.cfg.QPType, op) {
			return i, fmt.Errorf("%w: opcode %d on a %v QP", ErrBadOpcode, op, q.cfg.QPType)
		}
		if outstanding+i >= q.cfg.MaxPost {
			return i, ErrQueueFull
		}
		if !q.plain(&wrs[i]) {
			if err := q.Validate(&wrs[i]); err != nil {
				return i, err
			}
		}
	}
	return 0, nil
}

// encode writes one WQE at cur_post and advances it; it returns the offset
// of the control segment and the WQE size in 16-byte units.
func (q *SQ) encode(wr *SendWR, wrIndex uint32) (ctrl, size int) {
	ring := q.ring
	qend := len(ring)
	idx := int(q.curPost) & (q.cfg.WQECount - 1)
	ctrl = idx * SendWQEBB
	c := ring[ctrl : ctrl+ctrlSegSize]
	// qp.c: *(uint32_t *)(seg + 8) = 0, then imm (send_ieth: the
	// immediate, or htobe32(invalidate_rkey) for SEND_WITH_INV) and
	// fm_ce_se.
	c[8], c[9], c[10] = 0, 0, 0
	switch wr.Opcode {
	case OpSendWithImm, OpRDMAWriteWithImm:
		be.PutUint32(c[12:], wr.ImmData)
	case OpSendWithInv:
		be.PutUint32(c[12:], wr.InvalidateRKey)
	default:
		be.PutUint32(c[12:], 0)
	}
	var fmCESE uint8
	if q.cfg.SignalAll {
		fmCESE = ctrlCQUpdate
	}
	if wr.Flags&SendFence != 0 {
		fmCESE |= ctrlFence
	}
	if wr.Flags&SendSignaled != 0 {
		fmCESE |= ctrlCQUpdate
	}
	if wr.Flags&SendSolicited != 0 {
		fmCESE |= ctrlSolicited
	}
	c[11] = fmCESE
	seg := ctrl + ctrlSegSize
	size = ctrlSegSize / 16

	switch q.cfg.QPType {
	case QPTypeRC, QPTypeUC:
		switch wr.Opcode {
		case OpRDMARead, OpRDMAWrite, OpRDMAWriteWithImm:
			putRaddr(ring[seg:seg+raddrSegSize], wr.RemoteAddr, wr.RKey)
			seg += raddrSegSize
			size += raddrSegSize / 16
		case OpAtomicCmpAndSwp, OpAtomicFetchAndAdd:
			putRaddr(ring[seg:seg+raddrSegSize], wr.RemoteAddr, wr.RKey)
			seg += raddrSegSize
			// qp.c _set_atomic_seg: FETCH_AND_ADD writes only swap_add.
			if wr.Opcode == OpAtomicCmpAndSwp {
				be.PutUint64(ring[seg:], wr.Swap)
				be.PutUint64(ring[seg+8:], wr.CompareAdd)
			} else {
				be.PutUint64(ring[seg:], wr.CompareAdd)
			}
			seg += atomicSeg
			size += (raddrSegSize + atomicSeg) / 16
		}
	case QPTypeUD:
		// qp.c _set_datagram_seg: the AV, then dqp_dct and the Q_Key.
		d := ring[seg : seg+DatagramSize]
		copy(d, wr.AV[:])
		be.PutUint32(d[8:], wr.RemoteQPN|extendedUDAV)
		be.PutUint32(d[0:], wr.RemoteQKey)
		seg += DatagramSize
		size += DatagramSize / 16
		if seg == qend {
			seg = 0
		}
	}

	if wr.Flags&SendInline != 0 && len(wr.SGEs) > 0 {
		size += q.putInline(seg, wr.SGEs)
	} else {
		atomic := wr.Opcode == OpAtomicCmpAndSwp || wr.Opcode == OpAtomicFetchAndAdd
		for i := range wr.SGEs {
			if seg == qend {
				seg = 0
			}
			s := &wr.SGEs[i]
			if s.Length == 0 {
				continue
			}
			d := ring[seg : seg+dataSegSize]
			if atomic {
				be.PutUint32(d[0:], atomicSize)
			} else {
				be.PutUint32(d[0:], s.Length)
			}
			be.PutUint32(d[4:], s.LKey)
			be.PutUint64(d[8:], s.Addr)
			seg += dataSegSize
			size++
		}
	}

	be.PutUint32(c[0:], (q.curPost&0xffff)<<8|uint32(deviceOpcode[wr.Opcode]))
	be.PutUint32(c[4:], uint32(size)|q.cfg.QPN<<8)
	q.wrid[idx] = wr.ID
	q.wqeHead[idx] = wrIndex
	q.curPost += uint32((size*16 + SendWQEBB - 1) / SendWQEBB)
	return ctrl, size
}

// maxBlockSGEs is the most SGEs a WQE of a connected QP can carry
// within one WQEBB, after its control and remote-address segments.
const maxBlockSGEs = (SendWQEBB - ctrlSegSize - raddrSegSize) / dataSegSize

// encodeBlocks is encode, request after request of wrs, for the common
// request of an RC or UC QP: not an atomic, no inline data, at most
// maxBlockSGEs SGEs (isBlock). Each WQE fits in one WQEBB, so it never
// wraps, and it is written through a pointer into the ring as 8-byte
// stores, without a bounds check per field: the same bytes as encode
// (TestEncodeBlock). The block is inside the ring: NewSQ checked len(ring)
// == WQECount*64 and the index is masked. It stops before the first request
// that is not such a request (cur_post tells how many it wrote: one WQEBB
// each) and returns the last one's control offset and size. (One call for a whole list, where a call
// per request cost a list of WRITEs about 1.5 ns per request; the look at
// each request here, where its fields are loaded anyway, replaced a walk
// of the list of its own, about 1 ns per request.)
func (q *SQ) encodeBlocks(wrs []SendWR, wrIndex uint32) (ctrl, size int) {
	mask := q.cfg.WQECount - 1
	base := unsafe.Pointer(unsafe.SliceData(q.ring))
	for r := range wrs {
		wr := &wrs[r]
		sges := wr.SGEs
		if !isBlock(wr.Opcode, wr.Flags, len(sges)) {
			return ctrl, size
		}
		idx := int(q.curPost) & mask
		ctrl = idx * SendWQEBB
		w := (*[SendWQEBB / 8]uint64)(unsafe.Add(base, ctrl))
		// Each segment is big-endian; on a little-endian machine the first
		// four bytes of a segment are the low half of its first 8-byte word.
		seg := ctrlSegSize / 8
		switch wr.Opcode {
		case OpRDMARead, OpRDMAWrite, OpRDMAWriteWithImm:
			w[seg] = bits.ReverseBytes64(wr.RemoteAddr)
			w[seg+1] = uint64(bits.ReverseBytes32(wr.RKey))
			seg += raddrSegSize / 8
		}
		if len(sges) == 1 {
			// The common request, without the loop (whose counters the
			// compiler keeps on the stack).
			if s := &sges[0]; s.Length != 0 {
				w[seg&7] = uint64(bits.ReverseBytes32(s.Length)) | uint64(bits.ReverseBytes32(s.LKey))<<32
				w[(seg+1)&7] = bits.ReverseBytes64(s.Addr)
				seg += dataSegSize / 8
			}
		} else {
			for i := range sges {
				s := &sges[i]
				if s.Length == 0 {
					continue
				}
				w[seg&7] = uint64(bits.ReverseBytes32(s.Length)) | uint64(bits.ReverseBytes32(s.LKey))<<32
				w[(seg+1)&7] = bits.ReverseBytes64(s.Addr)
				seg += dataSegSize / 8
			}
		}
		size = seg / 2
		var fmCESE uint64
		if q.cfg.SignalAll || wr.Flags&SendSignaled != 0 {
			fmCESE = ctrlCQUpdate
		}
		if wr.Flags&SendFence != 0 {
			fmCESE |= ctrlFence
		}
		if wr.Flags&SendSolicited != 0 {
			fmCESE |= ctrlSolicited
		}
		var imm uint32
		if wr.Opcode == OpSendWithImm || wr.Opcode == OpRDMAWriteWithImm {
			imm = wr.ImmData
		}
		w[0] = uint64(bits.ReverseBytes32((q.curPost&0xffff)<<8|uint32(deviceOpcode[wr.Opcode]))) |
			uint64(bits.ReverseBytes32(uint32(size)|q.cfg.QPN<<8))<<32
		w[1] = fmCESE<<24 | uint64(bits.ReverseBytes32(imm))<<32
		q.wrid[idx] = wr.ID
		q.wqeHead[idx] = wrIndex + uint32(r)
		q.curPost++
	}
	return ctrl, size
}

// isBlock reports whether encodeBlocks takes a request of an RC or UC QP.
func isBlock(op SendOpcode, flags SendFlags, sges int) bool {
	return op <= OpRDMARead && sges <= maxBlockSGEs && (flags&SendInline == 0 || sges == 0)
}

// encodeInline is encode for an inline SEND, SEND_WITH_IMM, RDMA WRITE or
// RDMA WRITE_WITH_IMM of an RC or UC QP: the control segment and the
// remote address written as encodeBlocks writes them, the data by
// putInline, which wraps at the end of the ring (TestEncodeInline compares
// it with encode). (The control segment's words are computed here as in
// encodeBlocks and encodeUD, not by a helper: one costs the inliner 102,
// and a call per request is what these encoders exist to avoid.)
func (q *SQ) encodeInline(wr *SendWR, wrIndex uint32) (ctrl, size int) {
	idx := int(q.curPost) & (q.cfg.WQECount - 1)
	ctrl = idx * SendWQEBB
	w := (*[SendWQEBB / 8]uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.ring)), ctrl))
	seg := ctrlSegSize / 8
	var imm uint32
	switch wr.Opcode {
	case OpRDMAWriteWithImm:
		imm = wr.ImmData
		fallthrough
	case OpRDMAWrite:
		w[seg] = bits.ReverseBytes64(wr.RemoteAddr)
		w[seg+1] = uint64(bits.ReverseBytes32(wr.RKey))
		seg += raddrSegSize / 8
	case OpSendWithImm:
		imm = wr.ImmData
	}
	// One SGE whose bytes do not reach the end of the ring, the common
	// inline request, without putInline's call and loop.
	if at, sges := ctrl+seg*8, wr.SGEs; len(sges) == 1 && sges[0].Length != 0 && at+inlSegHdr+int(sges[0].Length) <= len(q.ring) {
		n := int(sges[0].Length)
		copy(q.ring[at+inlSegHdr:at+inlSegHdr+n], mmio.Bytes(sges[0].Addr, n))
		be.PutUint32(q.ring[at:], uint32(n)|inlineSeg)
		size = seg/2 + (n+inlSegHdr+15)/16
	} else {
		size = seg/2 + q.putInline(at, sges)
	}
	var fmCESE uint64
	if q.cfg.SignalAll || wr.Flags&SendSignaled != 0 {
		fmCESE = ctrlCQUpdate
	}
	if wr.Flags&SendFence != 0 {
		fmCESE |= ctrlFence
	}
	if wr.Flags&SendSolicited != 0 {
		fmCESE |= ctrlSolicited
	}
	w[0] = uint64(bits.ReverseBytes32((q.curPost&0xffff)<<8|uint32(deviceOpcode[wr.Opcode]))) |
		uint64(bits.ReverseBytes32(uint32(size)|q.cfg.QPN<<8))<<32
	w[1] = fmCESE<<24 | uint64(bits.ReverseBytes32(imm))<<32
	q.wrid[idx] = wr.ID
	q.wqeHead[idx] = wrIndex
	q.curPost += uint32((size*16 + SendWQEBB - 1) / SendWQEBB)
	return ctrl, size
}

// encodeUD is encode for a UD send without inline data and with at most
// maxBlockSGEs SGEs: the control and datagram segments fill one WQEBB, the
// data segments start the next (the one at index 0 after the last), so it
// is written as encodeBlocks writes, in two blocks (TestEncodeBlock). Post
// refused the opcode unless SEND or SEND_WITH_IMM and the request unless
// it has an address vector. The ring holds two WQEBBs or more. (Its
// control segment and its data segments are written as encodeBlocks
// writes them, not by shared helpers or one function for both: each of
// those measured 0.5-2.5 ns slower per request on a list of WRITEs.)
func (q *SQ) encodeUD(wr *SendWR, wrIndex uint32) (ctrl, size int) {
	mask := q.cfg.WQECount - 1
	idx := int(q.curPost) & mask
	ctrl = idx * SendWQEBB
	base := unsafe.Pointer(unsafe.SliceData(q.ring))
	w := (*[SendWQEBB / 8]uint64)(unsafe.Add(base, ctrl))
	d := (*[SendWQEBB / 8]uint64)(unsafe.Add(base, ((idx+1)&mask)*SendWQEBB))
	sges := wr.SGEs
	if len(sges) > maxBlockSGEs { // only if the caller changed the list during Post
		sges = sges[:maxBlockSGEs]
	}
	// qp.c _set_datagram_seg: the AV, then the Q_Key over its first four
	// bytes and dqp_dct over bytes 8-11.
	av := (*[DatagramSize / 8]uint64)(unsafe.Pointer(wr.AV))
	w[2] = av[0]&^0xffffffff | uint64(bits.ReverseBytes32(wr.RemoteQKey))
	w[3] = av[1]&^0xffffffff | uint64(bits.ReverseBytes32(wr.RemoteQPN|extendedUDAV))
	w[4], w[5], w[6], w[7] = av[2], av[3], av[4], av[5]
	seg := 0
	if len(sges) == 1 { // as encodeBlocks
		if s := &sges[0]; s.Length != 0 {
			d[0] = uint64(bits.ReverseBytes32(s.Length)) | uint64(bits.ReverseBytes32(s.LKey))<<32
			d[1] = bits.ReverseBytes64(s.Addr)
			seg = dataSegSize / 8
		}
	} else {
		for i := range sges {
			s := &sges[i]
			if s.Length == 0 {
				continue
			}
			d[seg&7] = uint64(bits.ReverseBytes32(s.Length)) | uint64(bits.ReverseBytes32(s.LKey))<<32
			d[(seg+1)&7] = bits.ReverseBytes64(s.Addr)
			seg += dataSegSize / 8
		}
	}
	size = (ctrlSegSize+DatagramSize)/16 + seg/2
	var fmCESE uint64
	if q.cfg.SignalAll || wr.Flags&SendSignaled != 0 {
		fmCESE = ctrlCQUpdate
	}
	if wr.Flags&SendFence != 0 {
		fmCESE |= ctrlFence
	}
	if wr.Flags&SendSolicited != 0 {
		fmCESE |= ctrlSolicited
	}
	var imm uint32
	if wr.Opcode == OpSendWithImm {
		imm = wr.ImmData
	}
	w[0] = uint64(bits.ReverseBytes32((q.curPost&0xffff)<<8|uint32(deviceOpcode[wr.Opcode]))) |
		uint64(bits.ReverseBytes32(uint32(size)|q.cfg.QPN<<8))<<32
	w[1] = fmCESE<<24 | uint64(bits.ReverseBytes32(imm))<<32
	q.wrid[idx] = wr.ID
	q.wqeHead[idx] = wrIndex
	q.curPost += uint32((size*16 + SendWQEBB - 1) / SendWQEBB)
	return ctrl, size
}

func putRaddr(b []byte, addr uint64, rkey uint32) {
	be.PutUint64(b[0:], addr)
	be.PutUint32(b[8:], rkey)
	be.PutUint32(b[12:], 0)
}

// putInline copies the SGEs' bytes after a 4-byte inline header at seg,
// wrapping at the end of the ring (qp.c set_data_inl_seg), and returns the
// segment's size in 16-byte units.
func (q *SQ) putInline(seg int, sges []SGE) int {
	ring := q.ring
	w := seg + inlSegHdr
	total := 0
	for i := range sges {
		src := mmio.Bytes(sges[i].Addr, int(sges[i].Length))
		total += len(src)
		if w+len(src) > len(ring) {
			n := copy(ring[w:], src)
			src = src[n:]
			w = 0
		}
		w += copy(ring[w:], src)
	}
	if total == 0 {
		return 0
	}
	be.PutUint32(ring[seg:], uint32(total)|inlineSeg)
	return (total + inlSegHdr + 15) / 16
}

// ringDoorbell publishes the posted WQEs (qp.c post_send_db): the doorbell
// record after a barrier, then either the whole WQE through BlueFlame (one
// inline request, or PreferBF) or the first 8 bytes of its control segment,
// and flips the BlueFlame half.
func (q *SQ) ringDoorbell(nreq int, inline bool, ctrl, size int) {
	// Big-endian in memory; qp.c stores it plainly after the barrier, so a
	// release store (a MOV on amd64) rather than sync/atomic's XCHG.
	db := bits.ReverseBytes32(q.curPost & 0xffff)
	bf := q.bf
	// qp.c post_send_db: mmio_wc_spinlock, or mmio_wc_start alone, then
	// the copy, then mmio_flush_writes before the lock is given up (the
	// next holder's block must not merge with this one). The lock is
	// taken before the record's store here, so that the record and the
	// burst can be one call; the record is the QP's own.
	if bf.Lock != nil {
		bf.Lock.Lock()
	}
	n := 0 // 64-byte BlueFlame blocks; none rings with the control segment's first 8 bytes
	if !bf.Disabled && nreq == 1 && bf.Dedicated && (inline || bf.PreferBF) && size > 1 && size <= bf.BufSize/16 {
		n = (size*16 + SendWQEBB - 1) / SendWQEBB
	}
	if ctrl+n*SendWQEBB <= len(q.ring) { // the WQE does not wrap: record, fences and copy in one call
		// Inside both: NewSQ checked the register's two halves, n blocks
		// fit a half (size <= BufSize/16 above) and this branch's test
		// keeps them inside the ring.
		base := unsafe.Pointer(unsafe.SliceData(bf.Reg))
		mmio.StoreForDevice32WC(q.db, db, (*uint64)(unsafe.Add(base, bf.offset)), (*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.ring)), ctrl)), n)
	} else {
		mmio.StoreForDevice32(q.db, db)
		mmio.WCStart()
		q.blueFlameCopy(ctrl, n*SendWQEBB)
		mmio.FlushWrites()
	}
	bf.offset ^= bf.BufSize
	if bf.Lock != nil {
		bf.Lock.Unlock()
	}
}

// blueFlameCopy writes n bytes of WQE from ctrl to the BlueFlame register in
// 64-byte blocks, wrapping the source at the end of the ring
// (qp.c mlx5_bf_copy; util/mmio.h mmio_memcpy_x64).
func (q *SQ) blueFlameCopy(ctrl, n int) {
	bf := q.bf
	src, dst := ctrl, bf.offset
	for n > 0 {
		mmio.WriteBlock64(bf.Reg, dst, q.ring[src:])
		n -= SendWQEBB
		dst += SendWQEBB
		src += SendWQEBB
		if src == len(q.ring) {
			src = 0
		}
	}
}
