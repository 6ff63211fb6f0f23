package mlx5

import "encoding/binary"

// All device structures are big-endian (providers/mlx5/mlx5dv.h: __be32,
// __be64 fields).
var be = binary.BigEndian

// Segment and block sizes (providers/mlx5/mlx5dv.h, wqe.h).
const (
	SendWQEBB    = 64 // MLX5_SEND_WQE_BB: a send WQE basic block
	ctrlSegSize  = 16 // struct mlx5_wqe_ctrl_seg
	raddrSegSize = 16 // struct mlx5_wqe_raddr_seg
	atomicSeg    = 16 // struct mlx5_wqe_atomic_seg
	DatagramSize = 48 // struct mlx5_wqe_datagram_seg (an mlx5_wqe_av)
	dataSegSize  = 16 // struct mlx5_wqe_data_seg
	inlSegHdr    = 4  // struct mlx5_wqe_inl_data_seg (byte_count)
	srqNextSize  = 16 // struct mlx5_wqe_srq_next_seg
	CQESize      = 64 // struct mlx5_cqe64
	atomicSize   = 8  // MLX5_ATOMIC_SIZE

	// umr ctrl 48 + mkey context 64 + max(klm 16, 64): the room libmlx5
	// reserves for BIND_MW / LOCAL_INV on RC and UC (verbs.c _sq_overhead).
	umrOverhead = ctrlSegSize + 48 + 64 + 64
)

// Device opcodes of a send WQE (mlx5dv.h MLX5_OPCODE_*).
const (
	opcodeSendInval    = 0x01
	opcodeRDMAWrite    = 0x08
	opcodeRDMAWriteImm = 0x09
	opcodeSend         = 0x0a
	opcodeSendImm      = 0x0b
	opcodeRDMARead     = 0x10
	opcodeAtomicCS     = 0x11
	opcodeAtomicFA     = 0x12
)

// Control segment fm_ce_se bits (mlx5dv.h MLX5_WQE_CTRL_*).
const (
	ctrlCQUpdate  = 2 << 2
	ctrlSolicited = 1 << 1
	ctrlFence     = 4 << 5
)

const (
	inlineSeg     = 0x80000000 // MLX5_INLINE_SEG: byte_count of an inline segment
	invalidLKey   = 0x100      // MLX5_INVALID_LKEY: ends a short scatter list
	extendedUDAV  = 0x80000000 // MLX5_EXTENDED_UD_AV, or'ed into the AV's dqp_dct
	rcvDBR        = 0          // MLX5_RCV_DBR: receive counter word of a QP doorbell record
	sndDBR        = 1          // MLX5_SND_DBR: send counter word
	cqSetCI       = 0          // MLX5_CQ_SET_CI: consumer index word of a CQ doorbell record
	cqArmDB       = 1          // MLX5_CQ_ARM_DB: arm word
	cqDoorbellOff = 0x20       // MLX5_CQ_DOORBELL: the CQ doorbell's offset in the UAR page
	cqReqNotSol   = 1 << 24    // MLX5_CQ_DB_REQ_NOT_SOL
	cqReqNot      = 0 << 24    // MLX5_CQ_DB_REQ_NOT
)

// BFRegOffset is the offset of the first BlueFlame register in a UAR page
// (MLX5_BF_OFFSET, providers/mlx5/mlx5.h); a bfreg's two halves of
// bf_reg_size/2 bytes each alternate (docs/mlx5.md §4).
const BFRegOffset = 0x800

// Completion entry offsets (struct mlx5_cqe64, struct mlx5_err_cqe).
const (
	cqeMLPath       = 17
	cqeSLID         = 22
	cqeFlagsRQPN    = 24
	cqeHdsIPExt     = 28
	cqeL4HdrType    = 29
	cqeSRQNUIDX     = 32
	cqeImmInvalPKey = 36
	cqeApp          = 40
	cqeByteCnt      = 44
	cqeVendorSynd   = 54
	cqeSyndrome     = 55
	cqeSopDropQPN   = 56
	cqeWQECounter   = 60
	cqeOpOwn        = 63
)

// Completion opcodes, the high nibble of op_own (mlx5dv.h MLX5_CQE_*).
const (
	cqeReq         = 0
	cqeRespWrImm   = 1
	cqeRespSend    = 2
	cqeRespSendImm = 3
	cqeRespSendInv = 4
	cqeResize      = 5
	cqeNoPacket    = 6
	cqeSigErr      = 12
	cqeReqErr      = 13
	cqeRespErr     = 14
	cqeInvalid     = 15

	cqeOwnerMask     = 1
	cqeInlineScatter = 0x4 | 0x8 // MLX5_INLINE_SCATTER_32 | _64
)
