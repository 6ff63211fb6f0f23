package rdma

import "strconv"

// NodeType is the kind of RDMA node (kernel: enum rdma_node_type, also the
// number in sysfs node_type and netlink RDMA_NLDEV_ATTR_DEV_NODE_TYPE).
type NodeType uint8

// Node types, numbered from 1 as in the kernel's enum.
const (
	NodeCA NodeType = iota + 1 // channel adapter: InfiniBand HCAs, RoCE NICs, rxe
	NodeSwitch
	NodeRouter
	NodeRNIC // iWARP
	NodeUSNIC
	NodeUSNICUDP
	NodeUnspecified
)

var nodeTypeNames = [...]string{
	NodeCA: "CA", NodeSwitch: "switch", NodeRouter: "router", NodeRNIC: "RNIC",
	NodeUSNIC: "usNIC", NodeUSNICUDP: "usNIC UDP", NodeUnspecified: "unspecified",
}

// String returns the sysfs spelling (kernel: core/sysfs.c node_type_show).
func (t NodeType) String() string {
	if n, ok := nameOf(nodeTypeNames[:], int(t)); ok {
		return n
	}
	return "unknown node type " + strconv.Itoa(int(t))
}

var nodeTransports = [...]Transport{
	NodeCA: TransportIB, NodeSwitch: TransportIB, NodeRouter: TransportIB, NodeRNIC: TransportIWARP,
	NodeUSNIC: TransportUSNIC, NodeUSNICUDP: TransportUSNICUDP, NodeUnspecified: TransportUnspecified,
}

// Transport returns the transport of a node type, as the kernel's
// rdma_node_get_transport and rdma-core's ibv_get_device_list derive it.
func (t NodeType) Transport() Transport {
	if t == 0 || int(t) >= len(nodeTransports) {
		return TransportUnspecified
	}
	return nodeTransports[t]
}

// Transport is rdma-core's enum ibv_transport_type. RoCE and rxe devices are
// TransportIB: the link layer, not the transport, says Ethernet.
type Transport int

const (
	TransportIB Transport = iota
	TransportIWARP
	TransportUSNIC
	TransportUSNICUDP
	TransportUnspecified
)

var transportNames = [...]string{
	TransportIB: "InfiniBand", TransportIWARP: "iWARP", TransportUSNIC: "usNIC",
	TransportUSNICUDP: "usNIC UDP", TransportUnspecified: "unspecified",
}

// String returns ibv_devinfo's spelling.
func (t Transport) String() string {
	if n, ok := nameOf(transportNames[:], int(t)); ok {
		return n
	}
	return "invalid transport"
}

// DriverID identifies the kernel driver of a device (UAPI: enum
// rdma_driver_id in <rdma/ib_user_ioctl_verbs.h>). It selects the data-path
// provider and goes into every ioctl header, where the kernel rejects a
// mismatch with EINVAL (kernel: core/uverbs_ioctl.c ib_uverbs_cmd_verbs).
type DriverID uint32

// Driver ids: enum rdma_driver_id counts from 0 in this order and only
// grows (ABI); a test checks them against the UAPI header's values.
const (
	DriverUnknown DriverID = iota
	DriverMLX5
	DriverMLX4
	DriverCXGB3
	DriverCXGB4
	DriverMTHCA
	DriverBNXTRE
	DriverOCRDMA
	DriverNES
	DriverIRDMA
	DriverVMWPVRDMA
	DriverQEDR
	DriverHNS
	DriverUSNIC
	DriverRXE
	DriverHFI1
	DriverQIB
	DriverEFA
	DriverSIW
	DriverERDMA
	DriverMANA // 6.2 on; the pinned 6.1 headers end at ERDMA
)

var driverNames = [...]string{
	DriverUnknown:   "unknown",
	DriverMLX5:      "mlx5",
	DriverMLX4:      "mlx4",
	DriverCXGB3:     "cxgb3",
	DriverCXGB4:     "cxgb4",
	DriverMTHCA:     "mthca",
	DriverBNXTRE:    "bnxt_re",
	DriverOCRDMA:    "ocrdma",
	DriverNES:       "nes",
	DriverIRDMA:     "irdma",
	DriverVMWPVRDMA: "vmw_pvrdma",
	DriverQEDR:      "qedr",
	DriverHNS:       "hns",
	DriverUSNIC:     "usnic",
	DriverRXE:       "rxe",
	DriverHFI1:      "hfi1",
	DriverQIB:       "qib",
	DriverEFA:       "efa",
	DriverSIW:       "siw",
	DriverERDMA:     "erdma",
	DriverMANA:      "mana",
}

// String returns the provider name rdma-core uses for the driver ("rxe");
// "driver-<id>" for an id this package does not know.
func (d DriverID) String() string {
	if n, ok := nameOf(driverNames[:], int(d)); ok {
		return n
	}
	return "driver-" + strconv.Itoa(int(d))
}

// nameOf returns names[i] when the table has a name there.
func nameOf(names []string, i int) (string, bool) {
	if i < 0 || i >= len(names) || names[i] == "" {
		return "", false
	}
	return names[i], true
}
