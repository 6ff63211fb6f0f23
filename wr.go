package rdma

import "strconv"

// SGE is a scatter/gather entry: Length bytes at address Addr inside the
// memory region whose local key is LKey (rdma-core: struct ibv_sge).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// RecvWR is a receive work request (rdma-core: struct ibv_recv_wr): ID, given
// back in the completion, and the buffers that receive the message.
type RecvWR struct {
	ID   uint64
	SGEs []SGE
}

// WROpcode is the operation of a send work request (enum ib_wr_opcode;
// rdma-core: enum ibv_wr_opcode; the kernel's IB_UVERBS_WR_* have the
// same values).
type WROpcode uint32

const (
	OpWrite          WROpcode = 0 // IBV_WR_RDMA_WRITE
	OpWriteImm       WROpcode = 1 // IBV_WR_RDMA_WRITE_WITH_IMM: also consumes a receive at the peer
	OpSend           WROpcode = 2 // IBV_WR_SEND
	OpSendImm        WROpcode = 3 // IBV_WR_SEND_WITH_IMM
	OpRead           WROpcode = 4 // IBV_WR_RDMA_READ
	OpAtomicCmpSwap  WROpcode = 5 // IBV_WR_ATOMIC_CMP_AND_SWP
	OpAtomicFetchAdd WROpcode = 6 // IBV_WR_ATOMIC_FETCH_AND_ADD
	OpSendInv        WROpcode = 9 // IBV_WR_SEND_WITH_INV: a SEND that also asks the peer to invalidate an rkey (RC and UC; uverbs.OpSendInv says what peers do)
)

// String returns rdma-core's ibv_wr_opcode_str text ("rdma-write";
// libibverbs/enum_strs.c).
func (o WROpcode) String() string {
	switch o {
	case OpWrite:
		return "rdma-write"
	case OpWriteImm:
		return "rdma-write-with-imm"
	case OpSend:
		return "send"
	case OpSendImm:
		return "send-with-imm"
	case OpRead:
		return "rdma-read"
	case OpAtomicCmpSwap:
		return "atomic-cmp-and-swp"
	case OpAtomicFetchAdd:
		return "atomic-fetch-and-add"
	case OpSendInv:
		return "send-with-inv"
	}
	return "opcode " + strconv.Itoa(int(o))
}

// SendFlags modify a send work request (enum ib_send_flags; rdma-core:
// enum ibv_send_flags).
type SendFlags uint32

const (
	SendFence     SendFlags = 1 // wait for earlier RDMA READs and atomics
	SendSignaled  SendFlags = 2 // complete with a WC on success too
	SendSolicited SendFlags = 4 // set the solicited-event bit
	SendInline    SendFlags = 8 // copy the data into the work request at post time
)
