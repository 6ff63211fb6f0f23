// Command rstream is rdma-core's rstream (rdmacm-utils) on package rsocket:
// the same flags, output and exit status, so that the same command lines
// run either program, on either side of a connection.
//
// Without -s it is the server; with -s it connects to the server. Both sides
// need the same -S, -C, -I and -T v. Custom mode (-S n, -C or -I) runs one
// test on one connection and exits with 0, or 255 if the test failed;
// default mode runs the latency tests on one connection and the bandwidth
// tests on a second, reports failed tests and exits 0 once both
// connections were made. A bad command line prints the usage on stdout and
// exits with 1.
//
// What differs: Go's calls wait by themselves, so -T a (rpoll) and -T b
// (blocking) run the same code; -T n (the default) makes Read and Write
// poll the completion queue much longer before they sleep, as rstream's
// non-blocking loop does. -T s uses kernel TCP. -T f (fork) and -f gid
// (AF_IB) are refused. -T r has no effect: the CM resolves every address.
// End of stream during a transfer is an error here (rrecv: connection
// closed by the peer), where rstream keeps calling rrecv.
package main
