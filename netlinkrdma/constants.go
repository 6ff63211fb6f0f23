package netlinkrdma

import "github.com/goverbs/rdma/internal/abi"

// RDMA_DRIVER_MANA is a value of enum rdma_driver_id in
// <rdma/ib_user_ioctl_verbs.h> that the pinned 6.1 headers of internal/abi
// lack (added in 6.2, right after RDMA_DRIVER_ERDMA; the enum only grows).
const abi_RDMA_DRIVER_MANA = abi.RDMA_DRIVER_ERDMA + 1

// nlType is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd): the nlmsg_type of an nldev
// request. NETLINK_RDMA has no family header; attributes follow nlmsghdr.
func nlType(cmd int) int {
	return int(abi.RDMA_NL_GET_TYPE(abi.RDMA_NL_NLDEV, uint16(cmd)))
}
