// Package siw is the soft-iWARP (siw) provider: the codec for the rings
// the kernel's siw driver shares with user space (ring.go, send.go,
// recv.go, cq.go: no system calls), and the objects uverbs drives through
// the provider interfaces (objects.go: the create commands with siw's
// driver data, the rings mapped through the keys they return, the
// POST_SEND doorbell, the count of outstanding work). uverbs registers
// Open in its providers table. docs/siw.md gathers the kernel and
// rdma-core facts it relies on, by section; §9 says how uverbs drives siw.
//
// # What siw is
//
// siw (drivers/infiniband/sw/siw) runs iWARP, RDMA over TCP, in software
// on any network device. Its queues are arrays of fixed-size elements in
// memory the kernel allocates and user space maps: the send queue of
// struct siw_sqe, the receive queue and SRQ of struct siw_rqe, the
// completion queue of struct siw_cqe followed by a struct siw_cq_ctrl word
// (include/uapi/rdma/siw-abi.h). There are no shared indexes: every element
// carries a VALID flag, set by whoever fills it and cleared by whoever
// takes it (§3). SQ, RQ and CQ implement that handshake with the
// acquire/release views of internal/mmio.
//
// # What it supports, and what iWARP lacks
//
// siw user QPs are RC only (CheckQPType). They take RDMA WRITE, SEND,
// SEND_WITH_INV and RDMA READ (an RDMA READ with exactly one SGE and no
// fence), up to 6 SGEs, and inline data up to 80 bytes for SEND and RDMA
// WRITE; SRQs and completion events (CQ.Arm, no command needed) work.
// iWARP has no immediate data, so SEND_WITH_IMM and RDMA_WRITE_WITH_IMM are
// refused (ErrNoImmediate), as are atomics, which siw does not implement
// (ErrNoAtomics), and UD and UC QPs. CheckSend refuses all of these before
// anything is written, with an error naming the device and the reason;
// those refusals match syscall.EOPNOTSUPP, the ones that break a limit
// syscall.EINVAL, a full ring syscall.ENOMEM, and every refusal
// ErrInvalidWR.
//
// # Types
//
// SendWR, RecvWR, SGE and WC, the opcodes (WROpcode), flags (SendFlags)
// and completion values (WCStatus, WCOpcode, WCFlags) are the provider
// vocabulary uverbs speaks (type aliases), so the caller's values are read
// where they lie (TestTypesMatchUverbs). The opcodes and flags the caller gives are the
// verbs' values (enum ib_wr_opcode, ib_send_flags); completions carry enum
// ib_wc_status, ib_wc_opcode and ib_wc_flags values, mapped from siw's.
//
// The hot path (SQ.Write and Post, RQ.Write and Post, CQ.Poll, CheckSend
// and CheckRecv on success, DoorbellNeeded, CQ.Arm) allocates nothing.
package siw
