package rdma

import "strconv"

// PortState is the logical port state (IB spec PortInfo:PortState; enum
// ib_port_state in the kernel). An rxe port is ACTIVE when its netdev is up
// and has carrier, DOWN otherwise.
type PortState uint8

// Port states, with the values RDMA_NLDEV_ATTR_PORT_STATE carries.
const (
	PortNop PortState = iota
	PortDown
	PortInit
	PortArmed
	PortActive
	PortActiveDefer
)

var portStateNames = [...]string{
	PortNop: "NOP", PortDown: "DOWN", PortInit: "INIT", PortArmed: "ARMED",
	PortActive: "ACTIVE", PortActiveDefer: "ACTIVE_DEFER",
}

// String returns the kernel's name, which `rdma link show` prints: DOWN,
// INIT, ARMED, ACTIVE, ACTIVE_DEFER (libibverbs prefixes them with PORT_).
func (s PortState) String() string {
	if n, ok := nameOf(portStateNames[:], int(s)); ok {
		return n
	}
	return "UNKNOWN(" + strconv.Itoa(int(s)) + ")"
}

// PhysState is the physical port state (IB spec PortInfo:PortPhysicalState;
// enum ib_port_phys_state). rxe reports LINK_UP while the port is ACTIVE,
// POLLING when the netdev is up without carrier and DISABLED when it is down
// (sw/rxe/rxe_verbs.c rxe_query_port).
type PhysState uint8

// Physical port states, with the values RDMA_NLDEV_ATTR_PORT_PHYS_STATE carries.
const (
	PhysSleep PhysState = iota + 1
	PhysPolling
	PhysDisabled
	PhysTraining // PortConfigurationTraining
	PhysLinkUp
	PhysLinkErrorRecovery
	PhysPhyTest
)

var physStateNames = [...]string{
	PhysSleep: "SLEEP", PhysPolling: "POLLING", PhysDisabled: "DISABLED",
	PhysTraining: "PORT_CONFIGURATION_TRAINING", PhysLinkUp: "LINK_UP",
	PhysLinkErrorRecovery: "LINK_ERROR_RECOVER", PhysPhyTest: "PHY_TEST",
}

// String returns the name `rdma link show` prints as physical_state:
// SLEEP, POLLING, DISABLED, PORT_CONFIGURATION_TRAINING, LINK_UP,
// LINK_ERROR_RECOVER, PHY_TEST.
func (s PhysState) String() string {
	if n, ok := nameOf(physStateNames[:], int(s)); ok {
		return n
	}
	return "UNKNOWN(" + strconv.Itoa(int(s)) + ")"
}
