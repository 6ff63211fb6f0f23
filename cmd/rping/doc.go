// Command rping checks an RDMA connection the way rdma-core's rping
// (rdmacm-utils, librdmacm/examples/rping.c) does, and speaks its protocol,
// so either side can be the C program. It connects through the rdmacm
// package and moves data with the uverbs package: no librdmacm, no cgo.
//
// Usage:
//
//	rping -s [-vVdP] [-S size] [-a addr] [-p port]
//	rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
//
// The options are rping's, read as its getopt does (-vV, -C10 and -C 10 all
// work):
//
//	-s        server: listen on -a (default 0.0.0.0; -a ::0 for IPv6)
//	-c        client: connect to the server at -a
//	-a addr   address (or host name) to listen on or connect to
//	-I addr   source address of the client
//	-p port   port (default 7174)
//	-C count  pings to send, client (default 0: until the server goes)
//	-S size   ping size, 23 to 65535 bytes (default 64)
//	-v        print each ping: "ping data: ..." (client), "server ping
//	          data: ..." (server)
//	-V        client: check that each ping comes back as it was sent
//	-d        debug: the CM's steps (lines starting "cm: ") and the data
//	          path's, on stdout
//	-P        persistent server: serve any number of clients, each on its
//	          own, until stopped
//
// # Protocol
//
// The client sends the address, rkey and size of its ping buffer in a
// 16-byte message, struct rping_rdma_info {__be64 buf; __be32 rkey; __be32
// size} in network byte order. The server RDMA READs the ping and SENDs a
// 16-byte "go ahead"; the client sends the same message for a second
// buffer, the sink; the server RDMA WRITEs the ping there (up to and with
// its terminating 0) and sends "go ahead" again. Then the next ping. Ping n
// is "rdma-ping-n: " followed by letters from 'A' to 'z' and round again,
// starting one letter later each ping, with a 0 as the last byte. The
// client connects with one outstanding RDMA READ each way and 7 retries of
// each kind; both sides use 16 send and 2 receive work requests, one
// receive posted at a time.
//
// # Output and exit codes
//
// As rping: the -v lines on stdout, "client DISCONNECT EVENT..." or
// "server DISCONNECT EVENT..." on stderr when the connection ends. A client
// that sent its -C pings disconnects and exits 0; a server exits 0 when its
// client disconnects. Errors are one line on stderr, "rping: ...", with
// rping's exit codes: 22 (EINVAL) for a bad command line, 19 (ENODEV) when
// the machine has no RDMA device (the message says how to create one:
// `rdma-link add rxe0 netdev eth0`), and 255 for everything else: an
// address that cannot be reached, nothing listening on the port, a
// rejected connection, a failed work completion, a -V mismatch.
//
// # Differences from rping
//
//   - A client whose server disconnects before -C pings are done exits 255
//     (rping exits 0).
//   - A server (without -P) refuses connection requests once it has one
//     (rping leaves them waiting).
//   - A server refuses pings larger than its -S with a clear error (rping's
//     RDMA READ fails with a local length error).
//   - A peer that goes in the middle of a ping (an endless -C 0 client
//     stopped, say) ends the run as its disconnect does, exit 0, even when
//     the work in flight failed because its memory went first (a remote
//     access or operation error, or retries exceeded) and the disconnect
//     follows within 5 s. rping prints "cq completion failed status N"
//     and exits 255.
//   - On a siw (soft-iWARP) device, while a side waits for its peer's first
//     message it nudges the peer with a zero-length RDMA operation: the
//     client WRITEs zero bytes each second, the server READs zero bytes
//     each 15 s. The kernel's siw can leave the client's first message
//     unread in the server's socket until more data comes, and two rpings
//     then wait for each other for good (docs/siw.md §10). With -d each
//     nudge shows as a line starting "siw: zero-length rdma".
//   - -q (a QP moved without the CM) is not supported.
//   - Stopped by SIGINT or SIGTERM, it closes everything and exits 130.
//
// # Soft-RoCE
//
// The RDMA CM needs the server's address on a netdev with an RDMA device; a
// device on lo does not work with the CM. Two rxe devices on the ends of a
// veth pair, or two hosts, do.
package main
