package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/goverbs/rdma/rsocket"
)

func main() {
	ctx, addr := context.Background(), os.Args[1] // an RDMA device's IP address and a port
	l, err := rsocket.Listen(ctx, "rdma", addr)   // a net.Listener over RDMA
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		if c, err := l.Accept(); err == nil {
			io.Copy(c, c) // echo
		}
	}()
	c, err := rsocket.Dial(ctx, "rdma", addr) // a net.Conn over RDMA
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(c, "hello over RDMA")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(line)
}
