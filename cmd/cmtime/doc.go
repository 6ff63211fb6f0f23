// Command cmtime measures how long the RDMA connection manager takes for
// each step of setting up and tearing down many connections, as rdma-core's
// cmtime (rdmacm-utils, librdmacm/examples/cmtime.c) does, with the same
// flags, output and exit codes, so that either side can be the C program.
// It drives the rdmacm package's CM IDs directly: no librdmacm, no cgo.
//
// Usage:
//
//	cmtime [-b bind_address] [-p port]                        server
//	cmtime -s server_address [-b bind_address] [-c connections]
//	       [-p port] [-r retries] [-t timeout_ms]             client
//
//	-s addr  client: connect to the server at addr
//	-b addr  bind to this local address (server: listen there)
//	-c n     connections to make (default 100)
//	-p port  port (default 7471)
//	-r n     retries of address and route resolution, and the connection's
//	         retry count (default 2)
//	-t ms    timeout of address and route resolution (default 2000)
//
// The client creates all its IDs on one asynchronous event channel
// (rdmacm.NewAsyncEventChannel), then runs each step for every connection
// before the next step: bind (with -b), resolve address, resolve route,
// create QP, connect, disconnect, destroy. Address and route resolution,
// connecting and disconnecting are started for every connection at once
// and their events are taken from the one channel by one goroutine, as
// rdma-core's cmtime does; the step ends when the last connection has its
// answer. Creating IDs, QPs and destroying are done one connection after
// another. On iWARP devices (siw) the connect step ends with ESTABLISHED
// rather than CONNECT_RESPONSE, on both sides. It then
// prints, for each step, the time of the whole step, the longest and
// shortest time of one connection, and the step's time divided by the
// number of connections:
//
//	step              total ms     max ms     min us  us / conn
//	create id    :       0.89       0.03       5.00       8.90
//	...
//
// The server takes the events of its listener and of all its connections
// from one asynchronous channel: it accepts every request (with a QP of
// its own) and tears the connection down when the client disconnects,
// until it is stopped
// (SIGINT, SIGTERM).
//
// Exit status: 0; 1 for a bad command line (the usage is printed) or when
// a connection failed.
package main
