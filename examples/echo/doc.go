// Command echo is the program of the README's first screen: it listens on
// an address of an RDMA device with package rsocket, dials it, sends a line
// and prints the line echoed back. Any RDMA device will do, rxe included:
//
//	sudo rdma-link add rxe0 netdev eth0
//	echo 10.0.0.1:7471
//
// docs/refs_test.go checks that the README shows main.go as it is.
package main
