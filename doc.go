// Package rdma is the vocabulary the goverbs packages share: the work
// requests a program posts (SGE, RecvWR, WROpcode, SendFlags), the
// completions it polls (WC with its status, opcode and flags), the names of
// device identity (GUID, NodeType, Transport, DriverID, PortState,
// PhysState) and the errors every layer returns (OpError, ErrClosed,
// ErrNotSupported, the refusals of a post).
//
// It imports nothing of the module, so that the verbs (uverbs), the
// connection manager (rdmacm), rsocket, netlinkrdma and each driver's data
// path below uverbs speak it without a conversion. Package uverbs gives
// every name here under its own (uverbs.WC is rdma.WC); a program imports
// this package only to name the types without uverbs.
package rdma
