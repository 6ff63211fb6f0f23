// Command rdma-pingpong bounces messages between two RDMA queue pairs, and
// speaks the protocol of rdma-core's ibv_rc_pingpong and ibv_ud_pingpong
// (libibverbs/examples), so either side can be the C program. It is built on
// the uverbs package alone: no libibverbs, no cgo.
//
// Usage:
//
//	rdma-pingpong [rc|ud] [options]          start a server and wait for a client
//	rdma-pingpong [rc|ud] [options] HOST     connect to the server on HOST
//
// rc (the default) uses a reliable-connected QP like ibv_rc_pingpong, ud an
// unreliable-datagram QP like ibv_ud_pingpong. The options have the letters
// (and long names) of the C programs:
//
//	-p, --port      TCP port of the address exchange (default 18515)
//	-d, --ib-dev    RDMA device (default: the first one)
//	-i, --ib-port   port of the device (default 1)
//	-s, --size      message size (default 4096 for rc, 1024 for ud)
//	-m, --mtu       path MTU in bytes, rc only (default 1024)
//	-r, --rx-depth  receives to keep posted (default 500)
//	-n, --iters     number of exchanges (default 1000)
//	-l, --sl        service level (default 0)
//	-e, --events    sleep on completion events instead of polling
//	-g, --gid-idx   local GID index (default: the GID of the local IP address
//	                of the TCP connection)
//	-c, --chk       check the data: the client sends a pattern and checks that
//	                it comes back, the server checks the last message it got
//
// # Protocol
//
// The client connects to TCP port 18515 (-p) of the server and sends its
// address as one 52-byte message, "LLLL:QQQQQQ:PPPPPP:GGGG...GGGG" and a NUL:
// LID, QPN and first PSN in hexadecimal, then the GID as 32 hex digits, its 16
// bytes in order (rdma-core: pingpong.c gid_to_wire_gid). The server reads it,
// moves its QP to RTS (UD: also creates the address handle), answers with its
// own address in the same form, and waits for the client's "done" (5 bytes
// with the NUL). The client then connects its QP and sends first. Each side
// counts the exchange done when it has sent and received -n messages, and
// prints the throughput and the latency per exchange as the C programs do:
//
//	8192000 bytes in 0.50 seconds = 131.07 Mbit/sec
//	1000 iters in 0.50 seconds = 500.00 usec/iter
//
// A UD message is limited by the port's active MTU; the receive buffers have
// 40 bytes more for the GRH, and the UD QKey is 0x11111111 (ud_pingpong.c).
//
// # Soft-RoCE
//
// On an rxe device every path needs a GRH, so the peers must exchange GIDs.
// rdma-core's programs send an empty GID unless they get -g; give them the
// index of the GID of the address they talk over (on rxe over lo, GID index 1
// is ::ffff:127.0.0.1). This program finds that index by itself from the local
// address of the TCP connection when -g is not given.
//
// # iWARP
//
// An iWARP device (siw, Chelsio, E810 in iWARP mode) is refused at once:
// its QPs are connected only through the RDMA CM, so this exchange cannot
// connect them (nor does iWARP have UD), as with ibv_rc_pingpong. rping and
// rdma-perf -R connect through the CM and run there.
package main
