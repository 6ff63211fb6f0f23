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

const (
	NodeCA          = rdmadev.NodeCA
	NodeSwitch      = rdmadev.NodeSwitch
	NodeRouter      = rdmadev.NodeRouter
	NodeRNIC        = rdmadev.NodeRNIC
	NodeUSNIC       = rdmadev.NodeUSNIC
	NodeUSNICUDP    = rdmadev.NodeUSNICUDP
	NodeUnspecified = rdmadev.NodeUnspecified
)

// Transport is rdma-core's enum ibv_transport_type. RoCE and rxe devices are
// TransportIB: the link layer, not the transport, says Ethernet.
type Transport = rdmadev.Transport

const (
	TransportIB          = rdmadev.TransportIB
	TransportIWARP       = rdmadev.TransportIWARP
	TransportUSNIC       = rdmadev.TransportUSNIC
	TransportUSNICUDP    = rdmadev.TransportUSNICUDP
	TransportUnspecified = rdmadev.TransportUnspecified
)

// DriverID identifies the kernel driver of a device (enum rdma_driver_id).
// It selects the data-path provider and goes into every ioctl header.
type DriverID = rdmadev.DriverID

const (
	DriverUnknown   = rdmadev.DriverUnknown
	DriverMLX5      = rdmadev.DriverMLX5
	DriverMLX4      = rdmadev.DriverMLX4
	DriverCXGB3     = rdmadev.DriverCXGB3
	DriverCXGB4     = rdmadev.DriverCXGB4
	DriverMTHCA     = rdmadev.DriverMTHCA
	DriverBNXTRE    = rdmadev.DriverBNXTRE
	DriverOCRDMA    = rdmadev.DriverOCRDMA
	DriverNES       = rdmadev.DriverNES
	DriverIRDMA     = rdmadev.DriverIRDMA
	DriverVMWPVRDMA = rdmadev.DriverVMWPVRDMA
	DriverQEDR      = rdmadev.DriverQEDR
	DriverHNS       = rdmadev.DriverHNS
	DriverUSNIC     = rdmadev.DriverUSNIC
	DriverRXE       = rdmadev.DriverRXE
	DriverHFI1      = rdmadev.DriverHFI1
	DriverQIB       = rdmadev.DriverQIB
	DriverEFA       = rdmadev.DriverEFA
	DriverSIW       = rdmadev.DriverSIW
	DriverERDMA     = rdmadev.DriverERDMA
	DriverMANA      = rdmadev.DriverMANA
)

// PortState is the logical port state (kernel: enum ib_port_state).
// String gives the kernel's names ("ACTIVE"); libibverbs prints them with
// a PORT_ prefix.
type PortState = rdmadev.PortState

const (
	PortNop         = rdmadev.PortNop
	PortDown        = rdmadev.PortDown
	PortInit        = rdmadev.PortInit
	PortArmed       = rdmadev.PortArmed
	PortActive      = rdmadev.PortActive
	PortActiveDefer = rdmadev.PortActiveDefer
)

// PhysState is the physical port state (IBTA PortPhysicalState).
type PhysState = rdmadev.PhysState

const (
	PhysSleep             = rdmadev.PhysSleep
	PhysPolling           = rdmadev.PhysPolling
	PhysDisabled          = rdmadev.PhysDisabled
	PhysTraining          = rdmadev.PhysTraining
	PhysLinkUp            = rdmadev.PhysLinkUp
	PhysLinkErrorRecovery = rdmadev.PhysLinkErrorRecovery
	PhysPhyTest           = rdmadev.PhysPhyTest
)
