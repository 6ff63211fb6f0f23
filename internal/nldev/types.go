package nldev

import "github.com/goverbs/rdma/internal/rdmadev"

// The names of device identity, from internal/rdmadev.
type (
	GUID      = rdmadev.GUID
	NodeType  = rdmadev.NodeType
	DriverID  = rdmadev.DriverID
	PortState = rdmadev.PortState
	PhysState = rdmadev.PhysState
)
