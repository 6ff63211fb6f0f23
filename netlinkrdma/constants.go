package netlinkrdma

// Kernel UAPI values from <rdma/rdma_netlink.h> (RDMA_NL_*, RDMA_NLDEV_*) and
// <rdma/ib_user_ioctl_verbs.h> (enum rdma_driver_id), checked against
// /usr/include/rdma of linux-libc-dev 6.1.187. They are ABI: the kernel only
// appends to these enums.
//
// The abi_ prefix stands in for the internal/abi package: once it carries
// these names, `sed 's/abi_/abi./'` switches this package over.
const (
	abi_RDMA_NL_NLDEV            = 5  // RDMA_NL_NLDEV, client of RDMA_NL_GET_TYPE
	abi_RDMA_NL_GET_CLIENT_SHIFT = 10 // RDMA_NL_GET_TYPE(client, op) = client<<10 + op

	abi_RDMA_NLDEV_CMD_GET         = 1
	abi_RDMA_NLDEV_CMD_NEWLINK     = 3
	abi_RDMA_NLDEV_CMD_DELLINK     = 4
	abi_RDMA_NLDEV_CMD_PORT_GET    = 5
	abi_RDMA_NLDEV_CMD_SYS_GET     = 6
	abi_RDMA_NLDEV_CMD_GET_CHARDEV = 15

	abi_RDMA_NLDEV_ATTR_PAD              = 0 // u64 values are preceded by a pad attribute
	abi_RDMA_NLDEV_ATTR_DEV_INDEX        = 1
	abi_RDMA_NLDEV_ATTR_DEV_NAME         = 2
	abi_RDMA_NLDEV_ATTR_PORT_INDEX       = 3
	abi_RDMA_NLDEV_ATTR_FW_VERSION       = 5
	abi_RDMA_NLDEV_ATTR_NODE_GUID        = 6
	abi_RDMA_NLDEV_ATTR_SYS_IMAGE_GUID   = 7
	abi_RDMA_NLDEV_ATTR_PORT_STATE       = 12
	abi_RDMA_NLDEV_ATTR_PORT_PHYS_STATE  = 13
	abi_RDMA_NLDEV_ATTR_DEV_NODE_TYPE    = 14
	abi_RDMA_NLDEV_ATTR_NDEV_INDEX       = 50
	abi_RDMA_NLDEV_ATTR_NDEV_NAME        = 51
	abi_RDMA_NLDEV_ATTR_LINK_TYPE        = 65
	abi_RDMA_NLDEV_SYS_ATTR_NETNS_MODE   = 66
	abi_RDMA_NLDEV_ATTR_DEV_PROTOCOL     = 67
	abi_RDMA_NLDEV_ATTR_CHARDEV_TYPE     = 69
	abi_RDMA_NLDEV_ATTR_CHARDEV_NAME     = 70
	abi_RDMA_NLDEV_ATTR_CHARDEV_ABI      = 71
	abi_RDMA_NLDEV_ATTR_CHARDEV          = 72
	abi_RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID = 73
	abi_RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK = 93

	// IB_DEVICE_NAME_MAX from <rdma/ib_verbs.h> (kernel-internal, 64 with the
	// NUL); nldev_policy limits RDMA_NLDEV_ATTR_DEV_NAME to IB_DEVICE_NAME_MAX-1.
	abi_IB_DEVICE_NAME_MAX = 64
)

// enum rdma_driver_id, <rdma/ib_user_ioctl_verbs.h>.
const (
	abi_RDMA_DRIVER_UNKNOWN    = 0
	abi_RDMA_DRIVER_MLX5       = 1
	abi_RDMA_DRIVER_MLX4       = 2
	abi_RDMA_DRIVER_CXGB3      = 3
	abi_RDMA_DRIVER_CXGB4      = 4
	abi_RDMA_DRIVER_MTHCA      = 5
	abi_RDMA_DRIVER_BNXT_RE    = 6
	abi_RDMA_DRIVER_OCRDMA     = 7
	abi_RDMA_DRIVER_NES        = 8
	abi_RDMA_DRIVER_I40IW      = 9 // also RDMA_DRIVER_IRDMA
	abi_RDMA_DRIVER_VMW_PVRDMA = 10
	abi_RDMA_DRIVER_QEDR       = 11
	abi_RDMA_DRIVER_HNS        = 12
	abi_RDMA_DRIVER_USNIC      = 13
	abi_RDMA_DRIVER_RXE        = 14
	abi_RDMA_DRIVER_HFI1       = 15
	abi_RDMA_DRIVER_QIB        = 16
	abi_RDMA_DRIVER_EFA        = 17
	abi_RDMA_DRIVER_SIW        = 18
	abi_RDMA_DRIVER_ERDMA      = 19
	abi_RDMA_DRIVER_MANA       = 20 // not yet in the 6.1 headers; added in 6.2
)

// nlType is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd): the nlmsg_type of an nldev
// request. NETLINK_RDMA has no family header; attributes follow nlmsghdr.
func nlType(cmd int) int {
	return abi_RDMA_NL_NLDEV<<abi_RDMA_NL_GET_CLIENT_SHIFT | cmd
}
