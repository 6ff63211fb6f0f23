// Command rdma-perf measures RDMA bandwidth and latency as perftest's
// ib_write_bw, ib_send_bw, ib_read_bw, ib_write_lat, ib_send_lat,
// ib_read_lat and ib_atomic_lat do, with the same options, the same
// calculations and the same table, and speaks perftest's out-of-band
// exchange, so that either side may be perftest. It is built on the uverbs
// and rdmacm packages: no libibverbs, no cgo.
//
// Usage:
//
//	rdma-perf TEST [options]         start the server and wait for a client
//	rdma-perf TEST [options] HOST    run the client against the server on HOST
//
// TEST is write_bw, send_bw, read_bw, write_lat, send_lat, read_lat or
// atomic_lat (an "ib_" prefix is accepted). The options have perftest's
// letters and meanings: -d device, -i port, -x GID index, -s size, -n
// iterations, -D duration (with -f margin), -a all sizes from 2 to 8 MiB,
// -q number of QPs (not with -R; see below for latency tests), -b bidirectional
// (bandwidth tests: both sides send and each prints the sum), -t TX depth, -r RX depth, -Q CQ moderation, -I inline size, -o
// outstanding READs, -m MTU, -u QP timeout, -R connect through the RDMA CM,
// -e sleep on completion events, -p port, --report_gbits; -F is accepted
// and ignored. Defaults and dependencies are perftest's (v4.5-0.17): for
// example one signaled completion in 100 sends (-Q), but every send above
// 8192 bytes unless -e, and -t at most -n.
//
// # Measurements
//
// Time is read from the CPU's time-stamp counter, as perftest's get_cycles,
// and converted with a rate measured against the wall clock over the run.
//
//   - Bandwidth (client): size × iterations from the first post to the last
//     completion (with -q the iterations of every QP, posted to each QP in
//     turn and completed on one CQ); the peak is the best rate over spans that end on a
//     signaled completion; MsgRate in millions of messages per second. MB is
//     2^20 bytes; --report_gbits gives 10^9 bits.
//   - Latency: the deltas between consecutive posts, sorted, the two worst
//     dropped; typical is the median, with min, max (the better dropped
//     sample, as perftest prints), average, standard deviation, p99 and
//     p99.9; halved (RTT/2) for send and write, the full round trip for read
//     and atomics.
//   - Latency with -q N (send_lat and write_lat; ours, perftest refuses
//     -q in latency tests): both sides open N RC QPs on one CQ and the
//     ping-pong goes round-robin, exchange k over QP k mod N, one message
//     in flight at a time, so that each sample is what a service with N
//     connections open sees; -n counts the exchanges in all, and send_lat
//     posts on each QP at most as many receives as it has exchanges (with
//     -D, its share of -r, at least 2, reposted as they complete).
//   - write_lat uses no receives: each side spins on the last byte of the
//     message its peer writes into its memory, as perftest does; so -e is
//     refused for WRITE tests, as perftest refuses it.
//   - With -D, only the window between the margins (default D/4 each) is
//     counted; bandwidth then has no peak, latency reports the average and
//     the transactions per second.
//
// A run longer than two seconds prints a progress line on stderr each
// second. The measured loops allocate nothing and take one timestamp per
// post or completion.
//
// # Exchange
//
// Without -R the sides connect over TCP to port -p; with -R the exchange
// runs over an RDMA CM connection of its own to port -p and the test's QP
// over a second one, as perftest does. Either way they swap perftest's
// messages in its order: the version, page and cache line sizes, the MTU,
// then key messages (LID, READ depth, QPN, PSN, rkey, address, GID) before
// and after the QP is connected, and a last one when done.
//
// # Soft-RoCE
//
// On rxe, perftest turns inline data off (the device is not in its list),
// so -I defaults to 0 here too. Without -R give the GID index of the
// address the peers talk over (-x 1 is ::ffff:127.0.0.1 on rxe over lo);
// without -x this side picks the GID of the TCP connection's local address.
//
// # iWARP
//
// An iWARP QP (siw) connects through the RDMA CM only, so give -R. iWARP
// has no receiver-not-ready retries: a SEND that finds no receive posted
// ends the connection. So send_bw paces the sender by credits, as perftest
// does on iWARP: each side's address in the key exchange is a credit word,
// into which the receiver RDMA WRITEs its count of completed receives after
// every -r/3 of them, and the sender keeps fewer than -r messages beyond
// the count it last read. A sender waiting for a credit polls, also with
// -e: no completion announces the WRITE. Each side paces by its own -r, as
// perftest's does: give both sides the same -r, or a sender with the larger
// one can overrun the receiver and the connection ends.
package main
