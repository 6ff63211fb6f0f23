package provider

import (
	"fmt"
	"math"
)

// The checks of a post that do not depend on the driver: the opcodes each
// QP type takes, SGE count, the total length in 32 bits, atomic alignment
// and length, inline length and the opcodes inline applies to, and the UD
// address. The facts are those of rdma-core's providers/rxe/rxe.c
// (validate_send_wr, RXE_SUP_RC/UC/UD_QP_SEND_OPS_FLAGS,
// rxe_post_one_recv). A provider refuses what its device lacks on its own
// (mlx5: atomics without the capability), with its own errors.

// opcodeSupported reports whether a QP of type t takes op.
func opcodeSupported(t QPType, op WROpcode) bool {
	switch t {
	case QPTypeRC:
		return op <= OpSendInv || op == OpFlush || op == OpAtomicWrite
	case QPTypeUC:
		return op <= OpSendImm || op == OpBindMW || op == OpSendInv
	case QPTypeUD:
		return op == OpSend || op == OpSendImm
	}
	return false
}

func isAtomic(op WROpcode) bool {
	return op == OpAtomicCmpSwap || op == OpAtomicFetchAdd
}

// PlainSend reports whether CheckSend accepts a request without looking
// further: a WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM or READ on an RC
// QP with no UD address, or a SEND or SEND_WITH_IMM on a UD QP with an AH;
// no flag but fence, signaled and solicited; at most one SGE (one length
// cannot overflow) within max_send_sge. For an inline request, ask it with
// SendInline left out of flags, and PlainInline too. Both are small
// enough to be inlined, so the common request skips the call; every other
// request (UC ones too) goes to CheckSend.
func PlainSend(op WROpcode, flags SendFlags, nsge int, ud UDAddr, lim *SendLimits) bool {
	if flags&^(SendFence|SendSignaled|SendSolicited) != 0 || nsge > 1 || nsge > lim.MaxSGE || op > OpRead {
		return false
	}
	if lim.QPType == QPTypeUD {
		return (op == OpSend || op == OpSendImm) && ud.AHNum != 0
	}
	return lim.QPType == QPTypeRC && ud == UDAddr{}
}

// PlainInline reports whether CheckSend's inline checks pass for a
// request PlainSend passed with SendInline left out of its flags: not a
// READ, and the one SGE's bytes, if any, within max_inline_data.
func PlainInline(op WROpcode, sges []SGE, lim *SendLimits) bool {
	return op != OpRead && (len(sges) == 0 || int64(sges[0].Length) <= int64(lim.MaxInline))
}

// CheckSend checks a send work request's fields against the QP's limits
// before anything is written, so that a post refuses bad input at once
// with a clear error rather than a failed completion.
func CheckSend(op WROpcode, flags SendFlags, sges []SGE, remoteAddr uint64, ud UDAddr, lim *SendLimits) error {
	if !opcodeSupported(lim.QPType, op) {
		return fmt.Errorf("%w: opcode %d on a %v QP", ErrOpcodeNotSupported, op, lim.QPType)
	}
	switch op {
	case OpBindMW, OpFlush, OpAtomicWrite:
		return fmt.Errorf("%w: opcode %d", ErrOpcodeNotImplemented, op)
	}
	if flags&^SendFlagsKnown != 0 {
		return fmt.Errorf("%w: %#x", ErrBadSendFlags, uint32(flags&^SendFlagsKnown))
	}
	if len(sges) > lim.MaxSGE {
		return fmt.Errorf("%w: %d SGEs, max_send_sge is %d", ErrTooManySGEs, len(sges), lim.MaxSGE)
	}
	// Sum in 64 bits so that many large SGEs cannot wrap around (rdma-core
	// 665294c5a / 1e8ed0aff).
	var length uint64
	for i := range sges {
		length += uint64(sges[i].Length)
	}
	if length > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes", ErrLengthOverflow, length)
	}
	if isAtomic(op) {
		if remoteAddr&7 != 0 {
			return fmt.Errorf("%w: remote address %#x", ErrAtomicAlignment, remoteAddr)
		}
		if length < 8 {
			return fmt.Errorf("%w: local SGEs total %d bytes", ErrAtomicLength, length)
		}
	}
	if flags&SendInline != 0 {
		switch op {
		case OpWrite, OpWriteImm, OpSend, OpSendImm, OpSendInv:
		default:
			return fmt.Errorf("%w: opcode %d", ErrInlineNotAllowed, op)
		}
		if length > uint64(lim.MaxInline) {
			return fmt.Errorf("%w: %d bytes, max_inline_data is %d", ErrInlineTooLong, length, lim.MaxInline)
		}
	}
	if lim.QPType == QPTypeUD {
		if ud.AHNum == 0 {
			return fmt.Errorf("%w: UD send to QPN %#x without an AH", ErrUDAddress, ud.RemoteQPN)
		}
	} else if ud != (UDAddr{}) {
		return fmt.Errorf("%w: UD address %+v on a %v QP", ErrUDAddress, ud, lim.QPType)
	}
	return nil
}

// CheckRecv checks a receive's SGE list against the queue's max_recv_sge
// (or the SRQ's max_sge) and that its total length fits in 32 bits.
func CheckRecv(sges []SGE, maxSGE int) error {
	if len(sges) > maxSGE {
		return fmt.Errorf("%w: %d SGEs, max_recv_sge is %d", ErrTooManySGEs, len(sges), maxSGE)
	}
	var length uint64
	for i := range sges {
		length += uint64(sges[i].Length)
	}
	if length > math.MaxUint32 {
		return fmt.Errorf("%w: %d bytes", ErrLengthOverflow, length)
	}
	return nil
}
