package uverbs

import "github.com/goverbs/rdma/internal/rdmadev"

// The names of device identity are defined once, in internal/rdmadev, and
// shared with package netlinkrdma.

// GUID is a 64-bit InfiniBand global identifier (node GUID, system image
// GUID) as a number: the kernel stores it big-endian, the value here is in
// host order. String prints it the way sysfs and ibv_devinfo do.
type GUID = rdmadev.GUID

// ParseGUID parses the sysfs form "5054:00ff:fe12:3456".
func ParseGUID(s string) (GUID, error) { return rdmadev.ParseGUID(s) }

// NodeType is the kind of RDMA node (kernel: enum rdma_node_type); String
// gives the sysfs spelling.
type NodeType = rdmadev.NodeType

// Node types.
const (
	NodeCA, NodeSwitch, NodeRouter, NodeRNIC = rdmadev.NodeCA, rdmadev.NodeSwitch, rdmadev.NodeRouter, rdmadev.NodeRNIC
	NodeUSNIC, NodeUSNICUDP, NodeUnspecified = rdmadev.NodeUSNIC, rdmadev.NodeUSNICUDP, rdmadev.NodeUnspecified
)

// Transport is rdma-core's enum ibv_transport_type. RoCE and rxe devices are
// TransportIB: the link layer, not the transport, says Ethernet.
type Transport = rdmadev.Transport

// Transports.
const (
	TransportIB, TransportIWARP, TransportUSNIC = rdmadev.TransportIB, rdmadev.TransportIWARP, rdmadev.TransportUSNIC
	TransportUSNICUDP, TransportUnspecified     = rdmadev.TransportUSNICUDP, rdmadev.TransportUnspecified
)

// DriverID identifies the kernel driver of a device (enum rdma_driver_id).
// It selects the data-path provider and goes into every ioctl header.
// String gives rdma-core's provider name ("rxe"); the ids of the drivers
// this package has a provider for, or may, are named here, and every id of
// the enum converts: DriverID(n).
type DriverID = rdmadev.DriverID

// Driver ids.
const (
	DriverUnknown, DriverRXE, DriverMLX5 = rdmadev.DriverUnknown, rdmadev.DriverRXE, rdmadev.DriverMLX5
	DriverSIW, DriverEFA, DriverIRDMA    = rdmadev.DriverSIW, rdmadev.DriverEFA, rdmadev.DriverIRDMA
)

// PortState is the logical port state (kernel: enum ib_port_state).
// String gives the kernel's names ("ACTIVE"); libibverbs prints them with
// a PORT_ prefix.
type PortState = rdmadev.PortState

// Port states.
const (
	PortNop, PortDown, PortInit            = rdmadev.PortNop, rdmadev.PortDown, rdmadev.PortInit
	PortArmed, PortActive, PortActiveDefer = rdmadev.PortArmed, rdmadev.PortActive, rdmadev.PortActiveDefer
)

// PhysState is the physical port state (IBTA PortPhysicalState).
type PhysState = rdmadev.PhysState

// Physical port states; PhysTraining is PortConfigurationTraining.
const (
	PhysSleep, PhysPolling, PhysDisabled, PhysTraining = rdmadev.PhysSleep, rdmadev.PhysPolling, rdmadev.PhysDisabled, rdmadev.PhysTraining
	PhysLinkUp, PhysLinkErrorRecovery, PhysPhyTest     = rdmadev.PhysLinkUp, rdmadev.PhysLinkErrorRecovery, rdmadev.PhysPhyTest
)
