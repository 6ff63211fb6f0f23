package nldev

import "github.com/goverbs/rdma/internal/abi"

// nlType is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd): the nlmsg_type of an nldev
// request. NETLINK_RDMA has no family header; attributes follow nlmsghdr.
func nlType(cmd int) int {
	return int(abi.RDMA_NL_GET_TYPE(abi.RDMA_NL_NLDEV, uint16(cmd)))
}
