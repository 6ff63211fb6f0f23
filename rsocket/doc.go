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
// # Closing
//
// Conn.Close and Listener.Close always release what they hold, as
// net.Conn's and net.Listener's do, and never return uverbs.ErrBusy: the
// QP, CQ, registered buffers and CM ID of a connection are its own, made
// and closed by this package in order (docs/rsocket.md), and they are
// released even when Close returns an error. Close after Close returns what
// the first returned; Read and Write on a closed Conn return net.ErrClosed.
// ExampleConn_Close shows it.
package rsocket
