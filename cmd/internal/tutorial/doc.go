// Package tutorial is rdma-server and rdma-client: the classic RDMA
// server/client tutorials, wire-compatible with their C programs, over the
// rdmacm and uverbs packages.
//
// Each tutorial is a Protocol with its modes (geek.go, rdmaexample.go,
// rocelab.go, each with the C programs' behaviour and defaults it follows);
// wire.go has the message layouts with the C declarations they come from.
// A session (one side of one mode on one connection) is written against
// Endpoint, which the programs implement over an rdmacm.Conn (rdma.go) and
// the unit tests over an in-memory connection, so the state machines are
// tested on any machine and in the lab against real rxe and siw devices.
//
// # Against the C programs
//
// make tutorials-c builds the tutorials' own C programs, unmodified, from
// the commits wire.go names (test/tutorials-c/build.sh) and runs
// TestAgainstC in the lab on 6.1 and 6.12: every protocol and mode, a C
// server with our client and our server with a C client, on rxe and on
// siw, checking what both sides print (docs/testing.md §9). Outside that
// target the test skips. What it found is in the code it changed: geek's
// server takes the 02_read-write C client's repeated MSG_MR (geek.go).
// On siw the roce-lab imm mode is our programs' refusal, and geek's
// 02_read-write C server takes no IPv4 connection at all: it listens on
// the IPv6 wildcard address, which siw listens for on IPv6 addresses only.
//
// # Waiting
//
// Nothing polls in a loop: the CM's events come from the rdmacm event
// channel (waited on through the Go netpoller), completions from the
// connection's CQ through CQ.PollWait, which arms it, polls once more and
// sleeps on its completion channel.
//
// # Ending a connection
//
// Flushed completions after a disconnect are the normal end of a
// connection, not a failure, when this side already has what the protocol
// needs from the peer: a peer that has our last message may disconnect
// before our SEND's completion is reported (geek send and MSG_DONE). Once
// the CM reports DISCONNECTED, Next still waits up to a second for
// completions that are on their way, so the peer's last message is never
// dropped.
package tutorial
