package uverbs

import "github.com/goverbs/rdma"

// The names of device identity are package rdma's, shared with package
// netlinkrdma and named here.

// GUID is a 64-bit InfiniBand global identifier (node GUID, system image
// GUID) as a number: the kernel stores it big-endian, the value here is in
// host order. String prints it the way sysfs and ibv_devinfo do.
type GUID = rdma.GUID

// ParseGUID parses the sysfs form "5054:00ff:fe12:3456".
func ParseGUID(s string) (GUID, error) { return rdma.ParseGUID(s) }

// NodeType is the kind of RDMA node (kernel: enum rdma_node_type); String
// gives the sysfs spelling.
type NodeType = rdma.NodeType

// Node types.
const (
	NodeCA, NodeSwitch, NodeRouter, NodeRNIC = rdma.NodeCA, rdma.NodeSwitch, rdma.NodeRouter, rdma.NodeRNIC
	NodeUSNIC, NodeUSNICUDP, NodeUnspecified = rdma.NodeUSNIC, rdma.NodeUSNICUDP, rdma.NodeUnspecified
)

// Transport is rdma-core's enum ibv_transport_type. RoCE and rxe devices are
// TransportIB: the link layer, not the transport, says Ethernet.
type Transport = rdma.Transport

// Transports.
const (
	TransportIB, TransportIWARP, TransportUSNIC = rdma.TransportIB, rdma.TransportIWARP, rdma.TransportUSNIC
	TransportUSNICUDP, TransportUnspecified     = rdma.TransportUSNICUDP, rdma.TransportUnspecified
)

// DriverID identifies the kernel driver of a device (enum rdma_driver_id).
// It selects the data-path provider and goes into every ioctl header.
// String gives rdma-core's provider name ("rxe"); the ids of the drivers
// this package has a provider for, or may, are named here, and every id of
// the enum converts: DriverID(n).
type DriverID = rdma.DriverID

// Driver ids.
const (
	DriverUnknown, DriverRXE, DriverMLX5 = rdma.DriverUnknown, rdma.DriverRXE, rdma.DriverMLX5
	DriverSIW, DriverEFA, DriverIRDMA    = rdma.DriverSIW, rdma.DriverEFA, rdma.DriverIRDMA
)

// PortState is the logical port state (kernel: enum ib_port_state).
// String gives the kernel's names ("ACTIVE"); libibverbs prints them with
// a PORT_ prefix.
type PortState = rdma.PortState

// Port states.
const (
	PortNop, PortDown, PortInit            = rdma.PortNop, rdma.PortDown, rdma.PortInit
	PortArmed, PortActive, PortActiveDefer = rdma.PortArmed, rdma.PortActive, rdma.PortActiveDefer
)

// PhysState is the physical port state (IBTA PortPhysicalState).
type PhysState = rdma.PhysState

// Physical port states; PhysTraining is PortConfigurationTraining.
const (
	PhysSleep, PhysPolling, PhysDisabled, PhysTraining = rdma.PhysSleep, rdma.PhysPolling, rdma.PhysDisabled, rdma.PhysTraining
	PhysLinkUp, PhysLinkErrorRecovery, PhysPhyTest     = rdma.PhysLinkUp, rdma.PhysLinkErrorRecovery, rdma.PhysPhyTest
)
