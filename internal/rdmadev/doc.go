// Package rdmadev holds the names of RDMA device identity that both uverbs
// (the verbs) and netlinkrdma (RDMA netlink) use: GUIDs, node types and
// transports, driver ids, and the logical and physical port states. Each is
// defined once here; the public packages re-export them with type aliases.
package rdmadev
