//go:build amd64 || arm64

package abi

// Values that cross the user/kernel boundary but are defined outside the UAPI
// headers, so cgo cannot read them from linux-libc-dev.

// RXE_UVERBS_ABI_VERSION is the uverbs ABI version rxe registers
// (drivers/infiniband/sw/rxe/rxe.h); /sys/class/infiniband_verbs/uverbsN/abi_version
// reads 2 for an rxe device.
const RXE_UVERBS_ABI_VERSION = 2

// enum rdma_cm_event_type (include/rdma/rdma_cm.h, the same in 6.1 and
// 6.12): the event field of struct rdma_ucm_event_resp.
const (
	RDMA_CM_EVENT_ADDR_RESOLVED    = 0
	RDMA_CM_EVENT_ADDR_ERROR       = 1
	RDMA_CM_EVENT_ROUTE_RESOLVED   = 2
	RDMA_CM_EVENT_ROUTE_ERROR      = 3
	RDMA_CM_EVENT_CONNECT_REQUEST  = 4
	RDMA_CM_EVENT_CONNECT_RESPONSE = 5
	RDMA_CM_EVENT_CONNECT_ERROR    = 6
	RDMA_CM_EVENT_UNREACHABLE      = 7
	RDMA_CM_EVENT_REJECTED         = 8
	RDMA_CM_EVENT_ESTABLISHED      = 9
	RDMA_CM_EVENT_DISCONNECTED     = 10
	RDMA_CM_EVENT_DEVICE_REMOVAL   = 11
	RDMA_CM_EVENT_MULTICAST_JOIN   = 12
	RDMA_CM_EVENT_MULTICAST_ERROR  = 13
	RDMA_CM_EVENT_ADDR_CHANGE      = 14
	RDMA_CM_EVENT_TIMEWAIT_EXIT    = 15
)

// RDMA_NL_GET_CLIENT returns the client (RDMA_NL_NLDEV, ...) of a NETLINK_RDMA
// message type: bits 10..15 (<rdma/rdma_netlink.h>).
func RDMA_NL_GET_CLIENT(typ uint16) uint16 { return (typ & (((1 << 6) - 1) << 10)) >> 10 }

// RDMA_NL_GET_OP returns the operation (RDMA_NLDEV_CMD_GET, ...) of a
// NETLINK_RDMA message type: bits 0..9 (<rdma/rdma_netlink.h>).
func RDMA_NL_GET_OP(typ uint16) uint16 { return typ & ((1 << 10) - 1) }

// RDMA_NL_GET_TYPE returns the NETLINK_RDMA message type of operation op of
// client: (client << 10) + op (<rdma/rdma_netlink.h>). For example
// RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET) is 0x1401.
func RDMA_NL_GET_TYPE(client, op uint16) uint16 { return client<<10 + op }
