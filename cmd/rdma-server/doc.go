// Command rdma-server is the server side of the classic RDMA tutorials,
// wire-compatible with their C programs, so that the tutorial's C client
// (or rdma-client) can connect to it. It connects through the rdmacm
// package and moves data with the uverbs package: no librdmacm, no cgo.
//
// Usage:
//
//	rdma-server [--proto P] [-a ADDR] [-p PORT] [-v] [MODE]
//
// Protocols (--proto) and their modes, each with the tutorial's default
// port:
//
//	geek          write, read (port 22222): tarickb/the-geek-in-the-corner
//	              02_read-write; send: 01_basic-client-server
//	rdma-example  write-read (port 20886): animeshtrivedi/rdma-example
//	roce-lab      write (port 7471): montybeatnik/rdma-roce-lab
//	              examples/c/minimal; imm (port 7472): src/server_imm.c
//
// The server listens on -a (default all addresses) and serves any number
// of clients at once, each connection in its own goroutine with its own PD,
// CQ, completion channel and QP, all freed when the connection ends. It
// prints "PEER: connection request" when a client connects, the
// tutorial's result line prefixed with the peer ("PEER: remote buffer:
// ..."), and "PEER: connection closed" (or "connection failed: why"). It
// waits on CM events and on the completion channel, never polling in a
// loop. SIGINT or SIGTERM closes the listener and every connection, and it
// exits 0.
//
// A client that connects with retry count 0 (the geek C client does) gets
// a note: its connection ends at the first lost or late packet.
//
// -v prints the step trace on stderr: "[time #step who] KIND text" lines,
// SLOW for the control plane (listen, connection request, PD/CQ/QP with a QP
// dump, MRs with their keys, accept, private data, ESTABLISHED,
// disconnect; the CM's own steps as "cm"), FAST for each work request
// posted and each work completion, DATA for the bytes moved.
//
// The wire formats, and where each fact comes from in the C programs, are
// in the documentation of package cmd/internal/tutorial.
//
// iWARP devices (siw) have no immediate data, so roce-lab's imm mode
// cannot run on them: bound to an iWARP device's address (-a), the server
// says so and exits 1 before listening; listening on every address, it
// rejects each request that arrives on one ("connection failed: ...").
//
// Exit status: 0 when stopped by a signal, 1 when it cannot listen (no
// RDMA device: the message says how to make one with rdma-link; port in
// use; an address not of this host; imm on an iWARP device), 2 for a bad
// command line.
package main
