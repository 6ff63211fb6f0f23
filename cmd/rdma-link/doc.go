// Command rdma-link creates, removes and lists RDMA links without iproute2
// or rdma-core. It is a static, cgo-free replacement for
//
//	modprobe rdma_rxe
//	rdma link add rxe0 type rxe netdev eth0
//
// (the kernel loads rdma_rxe by itself when an rxe link is requested).
//
// Usage:
//
//	rdma-link add NAME netdev NETDEV         create a Soft-RoCE device on NETDEV
//	rdma-link add NAME type rxe netdev NETDEV
//	rdma-link del NAME                       remove a device (also: delete)
//	rdma-link show [NAME[/PORT]]             list devices and ports
//
// show prints one line per port in the format of `rdma link show`:
//
//	link rxe0/1 state ACTIVE physical_state LINK_UP netdev lo
//
// Exit status: 0 on success, 1 when the operation fails, 2 on bad usage.
// Adding and removing links needs CAP_NET_ADMIN (root).
package main
