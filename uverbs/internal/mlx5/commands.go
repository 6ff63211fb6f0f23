package mlx5

import (
	"fmt"
	"syscall"

	"github.com/goverbs/rdma/internal/abi"
)

// The driver data of the create commands, as libmlx5 fills it for the
// queues this package sizes (docs/mlx5.md §10). buf and db are the
// addresses of the ring and of the doorbell record, which the kernel pins.

// CreateCQCmd is CREATE_CQ's struct mlx5_ib_create_cq (verbs.c create_cq):
// 64-byte CQEs, no compression, no flags (no dedicated UAR page).
func CreateCQCmd(buf, db uint64) abi.Mlx5CreateCQ {
	return abi.Mlx5CreateCQ{BufAddr: buf, DbAddr: db, CQESize: CQESize}
}

// CreateQPCmd is CREATE_QP's struct mlx5_ib_create_qp (verbs.c create_qp)
// for a QP whose buffer holds rq at offset 0 and sq after it: the queue
// sizes and the user index (MLX5_IB_DEFAULT_UIDX with CQE version 0); no
// flags (no scatter-to-CQE, no bfreg index: the kernel picks the bfreg).
func CreateQPCmd(buf, db uint64, sq SQConfig, rq RQConfig, uidx uint32) abi.Mlx5CreateQP {
	return abi.Mlx5CreateQP{
		BufAddr:    buf,
		DbAddr:     db,
		SQWQECount: uint32(sq.WQECount),
		RQWQECount: uint32(rq.WQECount),
		RQWQEShift: uint32(rq.WQEShift),
		Uidx:       uidx,
	}
}

// CreateSRQCmd is CREATE_SRQ's struct mlx5_ib_create_srq (verbs.c
// mlx5_create_srq) for a basic SRQ: no flags, and uidx 0 (a basic SRQ has
// no user index).
func CreateSRQCmd(buf, db uint64) abi.Mlx5CreateSRQ {
	return abi.Mlx5CreateSRQ{BufAddr: buf, DbAddr: db}
}

// SRQCoreMaxWR is the max_wr CREATE_SRQ passes: every entry of the ring
// less one, the wait queue included, so that the kernel sizes the ring as
// this package does (verbs.c mlx5_create_srq).
func SRQCoreMaxWR(cfg SRQConfig) int { return cfg.WQECount - 1 }

// QPCaps are the capabilities libmlx5 reports for a created QP
// (verbs.c create_qp): max_send_wr and max_recv_wr the queues' max_post,
// max_recv_sge the receive queue's max_gs, max_inline_data the send
// queue's (which can be negative, §2).
func QPCaps(sq SQConfig, rq RQConfig) (maxSendWR, maxRecvWR, maxRecvSGE, maxInline int) {
	return sq.MaxPost, rq.MaxPost, rq.MaxSGE, sq.MaxInline
}

// DefaultUIDX is the user index CREATE_QP passes with CQE version 0
// (MLX5_IB_DEFAULT_UIDX): completions then name the QP by QPN.
const DefaultUIDX = 0xffffff

// CoreMaxInline is the max_inline_data CREATE_QP's core command carries:
// libmlx5 replaces the caller's with the send queue's (verbs.c
// mlx5_calc_sq_size), −4 included, which travels as 0xfffffffc.
func CoreMaxInline(sq SQConfig) uint32 { return uint32(int32(sq.MaxInline)) }

// CheckSRQAttr refuses what libmlx5 refuses before sizing an SRQ (verbs.c
// mlx5_create_srq): more work requests than the device's max_srq_recv_wr,
// more SGEs than a receive descriptor of max_rq_desc_sz holds.
func CheckSRQAttr(lim *DeviceLimits, maxWR, maxSGE int) error {
	if maxWR > lim.MaxSRQRecvWR {
		return fmt.Errorf("mlx5: SRQ max_wr %d exceeds the device's %d: %w", maxWR, lim.MaxSRQRecvWR, syscall.EINVAL)
	}
	if maxSGE > lim.MaxRQDescSize/dataSegSize {
		return fmt.Errorf("mlx5: SRQ max_sge %d exceeds the %d a %d-byte receive descriptor holds: %w", maxSGE, lim.MaxRQDescSize/dataSegSize, lim.MaxRQDescSize, syscall.EINVAL)
	}
	return nil
}
