package provider

import (
	"fmt"
	"math"

	"github.com/goverbs/rdma"
)

// The checks of a post that do not depend on the driver: the opcodes each
// QP type takes, SGE count, the total length in 32 bits, atomic alignment
// and length, inline length and the opcodes inline applies to, and the UD
// address. The facts are those of rdma-core's providers/rxe/rxe.c
// (validate_send_wr, RXE_SUP_RC/UC/UD_QP_SEND_OPS_FLAGS,
// rxe_post_one_recv). A provider refuses what its device lacks on its own
// (mlx5: atomics without the capability), with its own errors.

// opcodeSupported reports whether a QP of type t takes op.
func opcodeSupported(t QPType, op rdma.WROpcode) bool {
	switch t {
	case QPTypeRC:
		return op <= OpSendInv || op == OpFlush || op == OpAtomicWrite
	case QPTypeUC:
		return op <= rdma.OpSendImm || op == OpBindMW || op == OpSendInv
	case QPTypeUD:
		return op == rdma.OpSend || op == rdma.OpSendImm
	}
	return false
}

func isAtomic(op rdma.WROpcode) bool {
	return op == rdma.OpAtomicCmpSwap || op == rdma.OpAtomicFetchAdd
}

// PlainSend reports whether CheckSend accepts a request without looking
// further: a WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM or READ on an RC
// QP with no UD address, or a SEND or SEND_WITH_IMM on a UD QP with an AH;
// no flag but fence, signaled and solicited; at most one SGE (one length
// cannot overflow) within max_send_sge. For an inline request, ask it with
// SendInline left out of flags, and PlainInline too. Both are small
// enough to be inlined, so the common request skips the call; every other
// request (UC ones too) goes to CheckSend.
func PlainSend(op rdma.WROpcode, flags rdma.SendFlags, nsge int, ud UDAddr, lim *SendLimits) bool {
	if flags&^(rdma.SendFence|rdma.SendSignaled|rdma.SendSolicited) != 0 || nsge > 1 || nsge > lim.MaxSGE || op > rdma.OpRead {
		return false
	}
	if lim.QPType == QPTypeUD {
		return (op == rdma.OpSend || op == rdma.OpSendImm) && ud.AHNum != 0
	}
	return lim.QPType == QPTypeRC && ud == UDAddr{}
}

// PlainInline reports whether CheckSend's inline checks pass for a
// request PlainSend passed with SendInline left out of its flags: not a
// READ, and the one SGE's bytes, if any, within max_inline_data.
func PlainInline(op rdma.WROpcode, sges []rdma.SGE, lim *SendLimits) bool {
	return op != rdma.OpRead && (len(sges) == 0 || int64(sges[0].Length) <= int64(lim.MaxInline))
}

// CheckSend checks a send work request's fields against the QP's limits
// before anything is written, so that a post refuses bad input at once
// with a clear error rather than a failed completion.
func CheckSend(op rdma.WROpcode, flags rdma.SendFlags, sges []rdma.SGE, remoteAddr uint64, ud UDAddr, lim *SendLimits) error {
	if !opcodeSupported(lim.QPType, op) {
		return fmt.Errorf("%w: opcode %d on a %v QP", rdma.ErrOpcodeNotSupported, op, lim.QPType)
	}
	switch op {
	case OpBindMW, OpFlush, OpAtomicWrite:
		return fmt.Errorf("%w: opcode %d", ErrOpcodeNotImplemented, op)
	}
	if flags&^SendFlagsKnown != 0 {
		return fmt.Errorf("%w: %#x", rdma.ErrBadSendFlags, uint32(flags&^SendFlagsKnown))
	}
	if len(sges) > lim.MaxSGE {
		return fmt.Errorf("%w: %d SGEs, max_send_sge is %d", rdma.ErrTooManySGEs, len(sges), lim.MaxSGE)
	}
	// Sum in 64 bits so that many large SGEs cannot wrap around (rdma-core
	// 665294c5a / 1e8ed0aff).
	var length uint64
	for i := range sges {
		length += uint64(sges[i].Length)
	}
	if length > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes", rdma.ErrLengthOverflow, length)
	}
	if isAtomic(op) {
		if remoteAddr&7 != 0 {
			return fmt.Errorf("%w: remote address %#x", rdma.ErrAtomicAlignment, remoteAddr)
		}
		if length < 8 {
			return fmt.Errorf("%w: local SGEs total %d bytes", rdma.ErrAtomicLength, length)
		}
	}
	if flags&rdma.SendInline != 0 {
		switch op {
		case rdma.OpWrite, rdma.OpWriteImm, rdma.OpSend, rdma.OpSendImm, OpSendInv:
		default:
			return fmt.Errorf("%w: opcode %d", rdma.ErrInlineNotAllowed, op)
		}
		if length > uint64(lim.MaxInline) {
			return fmt.Errorf("%w: %d bytes, max_inline_data is %d", rdma.ErrInlineTooLong, length, lim.MaxInline)
		}
	}
	if lim.QPType == QPTypeUD {
		if ud.AHNum == 0 {
			return fmt.Errorf("%w: UD send to QPN %#x without an AH", rdma.ErrUDAddress, ud.RemoteQPN)
		}
	} else if ud != (UDAddr{}) {
		return fmt.Errorf("%w: UD address %+v on a %v QP", rdma.ErrUDAddress, ud, lim.QPType)
	}
	return nil
}

// CheckRecv checks a receive's SGE list against the queue's max_recv_sge
// (or the SRQ's max_sge) and that its total length fits in 32 bits.
func CheckRecv(sges []rdma.SGE, maxSGE int) error {
	if len(sges) > maxSGE {
		return fmt.Errorf("%w: %d SGEs, max_recv_sge is %d", rdma.ErrTooManySGEs, len(sges), maxSGE)
	}
	var length uint64
	for i := range sges {
		length += uint64(sges[i].Length)
	}
	if length > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes", rdma.ErrLengthOverflow, length)
	}
	return nil
}
