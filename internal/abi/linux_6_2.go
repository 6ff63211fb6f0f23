//go:build amd64 || arm64

package abi

import (
	"structs"
	"unsafe"
)

// UAPI added in Linux 6.2, which the generated file cannot contain because it
// is generated from 6.1 headers. Linux 6.2 added RDMA FLUSH ("RDMA: Extend
// RDMA user ABI to support flush") and RDMA ATOMIC WRITE ("RDMA: Extend RDMA
// verbs API to support atomic write"); the values below are those of
// <rdma/ib_user_verbs.h>, <rdma/ib_user_ioctl_verbs.h> and
// <rdma/rdma_user_rxe.h> from 6.2 on (unchanged in 6.12). A 6.1 kernel
// rejects these opcodes and never reports these flags.

// enum ib_uverbs_wr_opcode, 6.2+.
const (
	IB_UVERBS_WR_FLUSH        = 14
	IB_UVERBS_WR_ATOMIC_WRITE = 15
)

// enum ib_uverbs_wc_opcode, 6.2+.
const (
	IB_UVERBS_WC_FLUSH        = 8
	IB_UVERBS_WC_ATOMIC_WRITE = 9
)

// enum ib_uverbs_access_flags, 6.2+.
const (
	IB_UVERBS_ACCESS_FLUSH_GLOBAL     = 1 << 8
	IB_UVERBS_ACCESS_FLUSH_PERSISTENT = 1 << 9
)

// enum ib_uverbs_device_cap_flags, 6.2+ (reported in the 64-bit
// device_cap_flags_ex of EX_QUERY_DEVICE only).
const (
	IB_UVERBS_DEVICE_FLUSH_GLOBAL     = 1 << 38
	IB_UVERBS_DEVICE_FLUSH_PERSISTENT = 1 << 39
	IB_UVERBS_DEVICE_ATOMIC_WRITE     = 1 << 40
)

// RxeSendWRFlush is member wr.flush of struct rxe_send_wr (6.2+), used with
// IB_UVERBS_WR_FLUSH. Like the other union variants it is laid over
// RxeSendWR.WR.
type RxeSendWRFlush struct {
	_          structs.HostLayout
	RemoteAddr uint64
	Length     uint32
	RKey       uint32
	Type       uint8 // placement type: global visibility or persistence
	Level      uint8 // selectivity: a range or the whole MR
	_          [6]byte
}

// Offsets of wr.flush members in struct rxe_send_wr (6.2+), derived from
// RxeSendWRFlush.
const (
	RxeSendWROffWRFlush           = unsafe.Offsetof(RxeSendWR{}.WR)
	RxeSendWROffWRFlushRemoteAddr = RxeSendWROffWRFlush + unsafe.Offsetof(RxeSendWRFlush{}.RemoteAddr)
	RxeSendWROffWRFlushLength     = RxeSendWROffWRFlush + unsafe.Offsetof(RxeSendWRFlush{}.Length)
	RxeSendWROffWRFlushRKey       = RxeSendWROffWRFlush + unsafe.Offsetof(RxeSendWRFlush{}.RKey)
	RxeSendWROffWRFlushType       = RxeSendWROffWRFlush + unsafe.Offsetof(RxeSendWRFlush{}.Type)
	RxeSendWROffWRFlushLevel      = RxeSendWROffWRFlush + unsafe.Offsetof(RxeSendWRFlush{}.Level)
)

// Offsets of the atomic_wr member (6.2+) of the flexible union that ends
// struct rxe_dma_info: the 8-byte ATOMIC WRITE payload sits where inline data
// would.
const (
	RxeDMAInfoOffAtomicWR    = RxeDMAInfoOffInlineData
	RxeSendWQEOffDMAAtomicWR = RxeSendWQEOffDMAInlineData
)
