// Package rsocket provides streams over RDMA as net.Conn and net.Listener,
// speaking the wire protocol of librdmacm's rsocket (rdma-core). A peer may
// be another program on this package or a C program on rsocket: rstream,
// or any program run under LD_PRELOAD=librspreload.so.
//
//	l, err := rsocket.Listen(ctx, "rdma", "10.0.0.1:7471")
//	...
//	c, err := rsocket.Dial(ctx, "rdma", "10.0.0.1:7471")
//
// Each connection is an RC queue pair made through the RDMA CM (package
// rdmacm) with two registered buffers: the peer writes data straight into
// our receive buffer with RDMA WRITE WITH IMMEDIATE, and the immediate says
// how much arrived. Credits and halves of the receive buffer flow back the
// same way; docs/rsocket.md §2 describes the protocol. On an iWARP device
// (siw), which has no immediate data, a connection speaks rsocket's
// message-send mode instead, as rsocket does there: each message is a
// 4-byte SEND, after a plain RDMA WRITE for data (docs/rsocket.md §7).
//
// A Conn is safe for one reader and one writer at a time (more are
// serialized). Read, Write, ReadFrom and WriteTo take completions
// themselves, as rsocket's calls do; after a short spin (Options.Spin) they
// arm the CQ and sleep on its completion channel, parked in Go's netpoller
// (no thread is held) until the kernel's event comes. A goroutine
// per connection watches the CM for the end of the connection. Deadlines
// behave as in package net.
//
// Differences from TCP: every connection pins its buffers (SendBuffer plus
// RecvBuffer, 128 KiB each by default) and a queue pair; a peer that
// vanishes is noticed when the transport's retries run out or the CM reports
// the disconnect (Options.KeepAlive probes idle connections); there is no
// urgent data and no socket options beyond Options. Direct placement
// (rsocket's riomap and riowrite) is not offered (docs/rsocket.md §5).
//
// # Close
//
// Every type of the module that holds something closes by one rule, the
// same in packages uverbs, rdmacm and rsocket:
//
//   - Close releases what the object holds, including what a package made
//     for it on its own, in order, and returns.
//   - While something the caller made from the object is open and needs
//     it, Close refuses instead: it returns an error matching
//     uverbs.ErrBusy that names what, releases nothing, and the object
//     stays open and usable. Close the dependants first, then call Close
//     again.
//   - The roots, whose kernel file takes everything made through it along
//     when it closes, close what is still open on them first, children
//     before parents, instead of refusing: uverbs.Device and
//     rdmacm.EventChannel.
//   - Close is idempotent and safe on a nil pointer. Every later call on
//     the object returns an error matching net.ErrClosed here (ErrClosed
//     of uverbs and rdmacm there), and so does a call that waits on it
//     when it closes: Close wakes it.
//   - Close waits for a bounded time only, and a caller can set the bound
//     where the wait is long.
//
// The refusal is the kernel's own rule: it answers a destroy of a PD, CQ,
// SRQ or MR still in use with EBUSY (kernel: core/rdma_core.c
// uverbs_destroy_uobject), which ErrBusy also matches, and rdma-core's
// ibv_destroy_comp_channel answers EBUSY while CQs use the channel. A
// Close that freed a parent under its children would leave them broken
// without telling their owner; so a Close here fails where ibv_destroy_*
// would, and a root's Close, like the close of its file, is the one call
// that cleans up everything.
//
// In this package nothing refuses: the QP, CQ, registered buffers and CM
// ID of a connection are its own, made and closed by this package in order
// (docs/rsocket.md), and a program makes nothing from a Conn or Listener.
// Conn.Close and Listener.Close always release what they hold, as
// net.Conn's and net.Listener's do, also when they return an error; the
// connections a Listener accepted outlive it. Close after Close returns
// what the first returned; Read and Write waiting or called on a closed
// Conn return net.ErrClosed, as package net's do. Conn.Close waits at most
// Options.CloseTimeout for what was written to reach the peer.
// ExampleConn_Close shows it.
package rsocket
