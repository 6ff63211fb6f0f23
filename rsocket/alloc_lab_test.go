package rsocket

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// The data path allocates nothing once a connection is up: Write, Read and
// what they do when they wake (credit updates, reposted receives). testing.AllocsPerRun counts the whole process's allocations,
// the peer's side included.

// allocPair returns a connected client and server on the lab's veth pair,
// closed when the test ends.
func allocPair(tb testing.TB) (client, server *Conn) {
	tb.Helper()
	ends := testutil.VethPair(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := Listen(ctx, "rdma", ends[0].Addr+":0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	acc := make(chan error, 1)
	go func() {
		var err error
		server, err = l.AcceptConn(ctx)
		acc <- err
	}()
	client, err = Dial(ctx, "rdma", l.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	if err := <-acc; err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close() })
	return client, server
}

const (
	allocChunk = 4096
	allocRuns  = 500
)

// allocDrain reads from c into one buffer until an error, then sends the
// bytes read and the error.
func allocDrain(c *Conn, size int, done chan<- allocResult) {
	buf := make([]byte, size)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err != nil {
			done <- allocResult{n, err}
			return
		}
	}
}

type allocResult struct {
	n   int64
	err error
}

// TestAllocsWrite: a Write of 4 KiB allocates nothing while the peer
// reads.
func TestAllocsWrite(t *testing.T) {
	c, s := allocPair(t)
	done := make(chan allocResult, 1)
	go allocDrain(s, allocChunk, done)
	buf := make([]byte, allocChunk)
	var werr error
	write := func() {
		if _, err := c.Write(buf); err != nil && werr == nil {
			werr = err
		}
	}
	// Past the first credit updates and the first wrap of both rings.
	for range 2 * DefaultBuffer / allocChunk {
		write()
	}
	allocs := testing.AllocsPerRun(allocRuns, write)
	if werr != nil {
		t.Fatal(werr)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if want := int64(2*DefaultBuffer/allocChunk+allocRuns+1) * allocChunk; r.err != io.EOF || r.n != want {
		t.Fatalf("the reader got %d bytes, then %v; want %d, then EOF", r.n, r.err, want)
	}
	if allocs != 0 {
		t.Fatalf("Write of %d bytes: %v allocations per call, want 0", allocChunk, allocs)
	}
}

// TestAllocsRead: a Read of 4 KiB allocates nothing while the peer writes.
func TestAllocsRead(t *testing.T) {
	c, s := allocPair(t)
	warm := 2 * DefaultBuffer / allocChunk
	total := warm + allocRuns + 1
	wrote := make(chan error, 1)
	go func() {
		buf := make([]byte, allocChunk)
		for range total {
			if _, err := c.Write(buf); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	buf := make([]byte, allocChunk)
	var rerr error
	read := func() {
		if _, err := io.ReadFull(s, buf); err != nil && rerr == nil {
			rerr = err
		}
	}
	for range warm {
		read()
	}
	allocs := testing.AllocsPerRun(allocRuns, read)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Fatalf("Read of %d bytes: %v allocations per call, want 0", allocChunk, allocs)
	}
}

// BenchmarkReadWrite: Writes of each size to a peer that Reads them into
// a buffer of that size; the time includes delivery of the last byte.
func BenchmarkReadWrite(b *testing.B) {
	for _, size := range []int{64, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			c, s := allocPair(b)
			done := make(chan allocResult, 1)
			go allocDrain(s, size, done)
			buf := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			if err := c.CloseWrite(); err != nil {
				b.Fatal(err)
			}
			r := <-done
			b.StopTimer()
			if r.err != io.EOF || r.n != int64(b.N)*int64(size) {
				b.Fatalf("the reader got %d bytes, then %v; want %d, then EOF", r.n, r.err, int64(b.N)*int64(size))
			}
		})
	}
}
