package rsocket_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/goverbs/rdma/rsocket"
)

// An echo server: the address is that of an RDMA device's netdev (here
// every device's) and a port of the RDMA CM, which is apart from TCP's.
// These examples need an RDMA device, so they are compiled, not run; the
// lab runs the same code (example_lab_test.go).
func ExampleListen() {
	l, err := rsocket.Listen(context.Background(), "rdma", ":7471")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer c.Close()
			io.Copy(c, c) // until the client closes its side
		}()
	}
}

// An echo client: it writes a line, closes its writing side so that the
// server's copy ends, and reads the echo up to the end of the stream.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := rsocket.Dial(ctx, "rdma", "10.0.0.1:7471")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "hello over RDMA\n"); err != nil {
		log.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		log.Fatal(err)
	}
	echo, err := io.ReadAll(c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s", echo)
}

// Close releases what the connection holds, like net.Conn's Close, even
// when it returns an error; a second Close returns the same, and a Read
// after it net.ErrClosed.
func ExampleConn_Close() {
	c, err := rsocket.Dial(context.Background(), "rdma", "10.0.0.1:7471")
	if err != nil {
		log.Fatal(err)
	}
	err = c.Close()
	fmt.Println("close:", err, "again:", c.Close())
	_, err = c.Read(make([]byte, 1))
	fmt.Println("read after close:", errors.Is(err, net.ErrClosed))
}

// Options size a connection's buffers and queues; each side chooses its
// own, and they need not match the peer's.
func ExampleDialer() {
	d := &rsocket.Dialer{
		Options: rsocket.Options{SendBuffer: 1 << 20, RecvBuffer: 1 << 20, KeepAlive: 30 * time.Second},
		Timeout: 10 * time.Second,
	}
	c, err := d.Dial(context.Background(), "rdma", "10.0.0.1:7471")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("connected from", c.LocalAddr(), "to", c.RemoteAddr())
}

// net/http over rsocket: http.Serve takes the Listener, and
// http.Transport dials with a Dialer (it asks for network "tcp", which
// Dial takes as "rdma").
func Example_http() {
	l, err := rsocket.Listen(context.Background(), "rdma", "10.0.0.1:8080")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s from %v\n", r.Method, r.URL.Path, r.RemoteAddr)
	})}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	client := &http.Client{Transport: &http.Transport{DialContext: (&rsocket.Dialer{}).DialContext}}
	resp, err := client.Post("http://10.0.0.1:8080/hello", "text/plain", strings.NewReader("hi"))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s", resp.Status, body)
}

// gRPC-Go over rsocket: grpc.Server.Serve takes the Listener, and the
// client dials through grpc.WithContextDialer with the network added:
//
//	s := grpc.NewServer()
//	... register services ...
//	go s.Serve(l)
//
//	cc, err := grpc.NewClient("passthrough:///10.0.0.1:7471",
//		grpc.WithContextDialer(dial),
//		grpc.WithTransportCredentials(insecure.NewCredentials()))
//
// The module github.com/goverbs/rdma/examples/grpc (directory
// examples/grpc) is a complete server and client with its lab tests; it is
// a module of its own, so this one does not depend on gRPC.
func Example_grpc() {
	l, err := rsocket.Listen(context.Background(), "rdma", "10.0.0.1:7471")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	var _ net.Listener = l // what grpc.Server.Serve takes

	d := &rsocket.Dialer{}
	dial := func(ctx context.Context, addr string) (net.Conn, error) { // what grpc.WithContextDialer takes
		return d.DialContext(ctx, "rdma", addr)
	}
	_ = dial
}
