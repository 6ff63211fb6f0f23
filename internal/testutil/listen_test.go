package testutil

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// WaitListening sees a TCP listener, and reports a server that ended
// first or a wait that ran out.
func TestWaitListening(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitListening(ctx, port, false, make(chan error)); err != nil {
		t.Errorf("a listening port: %v", err)
	}
	ln.Close()

	// Nothing listens on port 0.
	ended := make(chan error, 1)
	ended <- errors.New("exit status 1")
	want := "the server ended before listening on port 0: exit status 1"
	if err := WaitListening(ctx, 0, false, ended); err == nil || err.Error() != want {
		t.Errorf("a server that ended: %v, want its error", err)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if err := WaitListening(short, 0, false, make(chan int)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("nothing listening: %v, want context.DeadlineExceeded", err)
	}
}
