package rsocket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

var portSeq = 7700

// labListen listens on the first rxe end of the lab's veth pair and
// returns the listener and the address to dial.
func labListen(t *testing.T, lc *ListenConfig) (*Listener, string) {
	t.Helper()
	return listenAt(t, testutil.VethPair(t)[0].Addr, lc)
}

// listenAt listens on host, a lab address, on the next port.
func listenAt(t *testing.T, host string, lc *ListenConfig) (*Listener, string) {
	t.Helper()
	portSeq++
	if lc == nil {
		lc = &ListenConfig{}
	}
	l, err := lc.Listen(context.Background(), "rdma", fmt.Sprintf("%s:%d", host, portSeq))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().String()
}

// pair returns a connected client and server on the lab's rxe devices.
func pair(t *testing.T, d *Dialer, lc *ListenConfig) (client, server *Conn) {
	t.Helper()
	return pairAt(t, testutil.VethPair(t)[0].Addr, d, lc)
}

// pairAt returns a connected client and server, the server listening on
// host.
func pairAt(t *testing.T, host string, d *Dialer, lc *ListenConfig) (client, server *Conn) {
	t.Helper()
	l, addr := listenAt(t, host, lc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second*testutil.RaceSlowdown)
	defer cancel()
	if d == nil {
		d = &Dialer{}
	}
	type res struct {
		c   *Conn
		err error
	}
	acc := make(chan res, 1)
	go func() {
		c, err := l.AcceptConn(ctx)
		acc <- res{c, err}
	}()
	client, err := d.Dial(ctx, "rdma", addr)
	if err != nil {
		cancel()
		if r := <-acc; r.c != nil {
			r.c.Close()
		}
		t.Fatal(err)
	}
	r := <-acc
	if r.err != nil {
		client.Close()
		t.Fatal(r.err)
	}
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}

func TestEcho(t *testing.T) {
	c, s := pair(t, &Dialer{Options: Options{Logf: t.Logf}}, &ListenConfig{Options: Options{Logf: t.Logf}})
	if c.msgSend || s.msgSend {
		t.Fatal("rxe has immediate data, but the connection uses iWARP's message SENDs")
	}
	echo(t, c, s)
}

// echo has s echo what c writes, from 1 byte to 1 MiB, then checks that
// c's CloseWrite ends the echo.
func echo(t *testing.T, c, s *Conn) {
	t.Helper()
	go func() {
		n, err := io.Copy(s, s)
		if err == nil {
			err = s.CloseWrite()
		}
		t.Logf("echo ended after %d bytes: %v", n, err)
	}()
	for _, n := range []int{1, 64, 4096, 65536, 1 << 20} {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(i*7 + n)
		}
		go func() {
			if _, err := c.Write(msg); err != nil {
				t.Errorf("write %d: %v", n, err)
			}
		}()
		got := make([]byte, n)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: echo differs", n)
		}
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after CloseWrite, the echo ends: Read = %d, %v; want EOF", n, err)
	}
}

// TestBulkSHA256 sends 256 MiB through io.Copy each way in random write
// sizes and checks the digest.
func TestBulkSHA256(t *testing.T) {
	total := int64(256 << 20)
	if testing.Short() {
		total = 16 << 20
	}
	c, s := pair(t, nil, nil)
	bulk(t, c, s, total)
}

// bulk sends total bytes from c to s through io.Copy in random write sizes
// and checks the digest.
func bulk(t *testing.T, c, s *Conn, total int64) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	src := &randReader{r: rand.New(rand.NewPCG(seed, 1)), data: rand.NewChaCha8(key), left: total}
	want := sha256.New()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(c, io.TeeReader(src, want))
		if err == nil {
			err = c.CloseWrite()
		}
		done <- err
	}()
	got := sha256.New()
	n, err := io.Copy(got, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n != total || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("received %d bytes, digest %x; sent %d, digest %x", n, got.Sum(nil), total, want.Sum(nil))
	}
}

// randReader gives left random bytes in reads of random sizes.
type randReader struct {
	r    *rand.Rand
	data *rand.ChaCha8
	left int64
}

func (r *randReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.left, int64(1+r.r.IntN(200000)))
	r.data.Read(p[:n])
	r.left -= n
	return int(n), nil
}

var _ net.Conn = (*Conn)(nil)
var _ net.Listener = (*Listener)(nil)
