// Command rdma-client is the client side of the classic RDMA tutorials,
// wire-compatible with their C programs, so that it can connect to the
// tutorial's C server (or rdma-server). It connects through the rdmacm
// package and moves data with the uverbs package: no librdmacm, no cgo.
//
// Usage:
//
//	rdma-client [--proto P] [-a ADDR] [-p PORT] [-s STRING] [-v] [MODE] [ADDR [PORT]]
//
// For example, with an rdma-server on 10.9.0.1:
//
//	rdma-client write 10.9.0.1 22222
//	rdma-client send 10.9.0.1 22223
//	rdma-client --proto rdma-example -a 10.9.0.1 -s "hello world 789"
//	rdma-client --proto roce-lab -s "client-wrote-this" write 10.9.0.1 7471
//	rdma-client --proto roce-lab -s "imm payload 42" imm 10.9.0.1 7472
//
// Protocols (--proto) and modes are those of rdma-server: geek (write,
// read, send; port 22222), rdma-example (write-read; port 20886), roce-lab
// (write, port 7471; imm, port 7472). -s replaces the text the tutorial's
// client sends: geek "message from active/client side with pid N",
// rdma-example "hello world" (its C client requires -s), roce-lab
// "client-wrote-this" and "client-wrote-with-imm". A string that cannot fit
// the peer's buffer (geek 1024 bytes, roce-lab 4096, each with the NUL) is
// refused before connecting.
//
// Results go to stdout as the tutorials print them ("remote buffer: ...",
// "received message: ...", "SUCCESS, source and destination buffers
// match", "Client read back: '...'"); -v prints the step trace on stderr
// (see rdma-server).
//
// Errors are one line on stderr with exit status 1: no RDMA device (with
// how to make one with rdma-link), a server that cannot be reached,
// nothing listening on the port, a rejected connection, a failed work
// completion (by its status name), a peer that disconnects early, roce-lab
// imm on an iWARP device (siw), which has no immediate data (said before
// the connection request is sent). A bad
// command line, including a -s too long for the peer's buffer, exits 2;
// Ctrl-C (SIGINT) or SIGTERM exits 130 after freeing everything.
package main
