package sys

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CommandWaitContext on one end of a socket pair whose send buffer is
// full: the write answers EAGAIN, as GET_EVENT does with no event queued,
// and the end turns readable when the peer writes, as the CM's fd does when
// an event arrives. The wait ends with the context, and after a context
// that ended, a wait under another one still waits and then succeeds.
func TestCommandWaitContext(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	peer := fds[1]
	defer unix.Close(peer)
	ef, err := NewEventFile(fds[0], "socket pair")
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := unix.Write(fds[0], chunk); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	one := []byte{1}
	cmd := func(ctx context.Context) error {
		return ef.CommandWaitContext(ctx, "write", unsafe.Pointer(&one[0]), 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait under a cancelled context: %v, want context.Canceled", err)
	}
	go func() { done <- cmd(context.Background()) }()
	// Room to write, and the end readable: the wait retries and succeeds.
	buf := make([]byte, 1<<20)
	unix.SetNonblock(peer, true)
	for {
		if _, err := unix.Read(peer, buf); err == unix.EAGAIN {
			break
		}
	}
	if _, err := unix.Write(peer, one); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("wait after the peer wrote: %v", err)
	}
	ef.Close()
	if err := cmd(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait on a closed file: %v, want ErrClosed", err)
	}
}
