package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/goverbs/rdma/rsocket"
)

// testSizes are rstream's sizes (test_size[]): the ones marked all run only
// with -S all.
var testSizes = []struct {
	size int
	all  bool
}{
	{1 << 6, false},
	{1 << 7, true}, {1<<7 + 1<<6, true},
	{1 << 8, true}, {1<<8 + 1<<7, true},
	{1 << 9, true}, {1<<9 + 1<<8, true},
	{1 << 10, true}, {1<<10 + 1<<9, true},
	{1 << 11, true}, {1<<11 + 1<<10, true},
	{1 << 12, false}, {1<<12 + 1<<11, true},
	{1 << 13, true}, {1<<13 + 1<<12, true},
	{1 << 14, true}, {1<<14 + 1<<13, true},
	{1 << 15, true}, {1<<15 + 1<<14, true},
	{1 << 16, false}, {1<<16 + 1<<15, true},
	{1 << 17, true}, {1<<17 + 1<<16, true},
	{1 << 18, true}, {1<<18 + 1<<17, true},
	{1 << 19, true}, {1<<19 + 1<<18, true},
	{1 << 20, false}, {1<<20 + 1<<19, true},
	{1 << 21, true}, {1<<21 + 1<<20, true},
	{1 << 22, true}, {1<<22 + 1<<21, true},
}

// busySpin is how long Read and Write poll before they sleep with -T n,
// rstream's default non-blocking busy loop.
const busySpin = 100000

type tester struct {
	o           options
	out, errOut io.Writer
	ln          net.Listener
	conn        net.Conn
	buf         []byte

	name                    string
	size, count, iterations int

	sendPattern, recvPattern byte  // format_buf's and verify_buf's running bytes
	received                 int64 // verify_buf's byte count

	// The listener and connections to close when ctx ends (Ctrl-C), so
	// that Accept, Read and Write waiting on them return.
	mu      sync.Mutex
	closers []io.Closer
	aborted bool
}

// track closes c when the run's context ends.
func (t *tester) track(c io.Closer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.aborted {
		c.Close()
		return
	}
	t.closers = append(t.closers, c)
}

func (t *tester) abort() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.aborted = true
	for _, c := range t.closers {
		c.Close()
	}
}

func (t *tester) run(ctx context.Context) error {
	o := t.o
	defer context.AfterFunc(ctx, t.abort)()
	if o.custom {
		t.buf = make([]byte, o.size)
	} else {
		t.buf = make([]byte, testSizes[len(testSizes)-1].size)
	}
	if o.server == "" {
		if err := t.listen(ctx); err != nil {
			return err
		}
		defer t.ln.Close()
	}
	fmt.Fprintf(t.out, "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n",
		"name", "bytes", "xfers", "iters", "total", "time", "Gb/sec", "usec/xfer")
	if o.custom {
		t.name, t.size, t.count, t.iterations = "custom", o.size, o.count, o.iterations
		if err := t.connect(ctx, o.inline); err != nil {
			return err
		}
		err := t.runTest()
		t.conn.Close()
		return err
	}
	// Default mode: a latency pass and a bandwidth pass on a connection
	// each; failed tests are reported and skipped, as rstream does.
	if err := t.connect(ctx, o.inline); err != nil {
		return err
	}
	for _, ts := range testSizes {
		if ts.all && !o.allSizes {
			continue
		}
		t.name, t.size, t.count, t.iterations = sizeStr(int64(ts.size), 4)+"_lat", ts.size, 1, sizeToCount(ts.size)
		t.runTest()
	}
	t.conn.Close()
	if err := t.connect(ctx, -1); err != nil {
		return err
	}
	for _, ts := range testSizes {
		if ts.all && !o.allSizes {
			continue
		}
		t.name, t.size, t.count, t.iterations = sizeStr(int64(ts.size), 4)+"_bw", ts.size, sizeToCount(ts.size), 1
		t.runTest()
	}
	t.conn.Close()
	return nil
}

// rsocketOptions are set_options': SO_SNDBUF and SO_RCVBUF of -B or
// 512 KiB, which rsocket doubles, and the inline size.
func (t *tester) rsocketOptions(inline int) rsocket.Options {
	b := t.o.buffer
	if b == 0 {
		b = 1 << 19
	}
	o := rsocket.Options{SendBuffer: 2 * b, RecvBuffer: 2 * b, Inline: inline}
	if inline == 0 {
		o.Inline = -1
	}
	if t.o.busy {
		o.Spin = busySpin
	}
	if t.o.keepalive > 0 {
		o.KeepAlive = time.Duration(t.o.keepalive) * time.Second
	}
	return o
}

func (t *tester) address(host string) string {
	return net.JoinHostPort(host, t.o.port)
}

func (t *tester) listen(ctx context.Context) error {
	var err error
	if t.o.sockets {
		var lc net.ListenConfig
		t.ln, err = lc.Listen(ctx, "tcp", t.address(t.o.bind))
	} else {
		lc := rsocket.ListenConfig{Options: t.rsocketOptions(t.o.inline), Backlog: 1}
		t.ln, err = lc.Listen(ctx, "rdma", t.address(t.o.bind))
	}
	if err != nil {
		fmt.Fprintf(t.errOut, "rlisten: %v\n", err)
		return err
	}
	t.track(t.ln)
	return nil
}

// connect makes the test's connection: accepts one (server) or dials
// (client, -s).
func (t *tester) connect(ctx context.Context, inline int) error {
	var err error
	switch {
	case t.o.server == "":
		t.conn, err = t.ln.Accept()
		if err != nil {
			fmt.Fprintf(t.errOut, "raccept: %v\n", err)
			return err
		}
	case t.o.sockets:
		d := net.Dialer{}
		if t.o.bind != "" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(t.o.bind)}
		}
		t.conn, err = d.DialContext(ctx, "tcp", t.address(t.o.server))
	default:
		d := rsocket.Dialer{Options: t.rsocketOptions(inline)}
		if t.o.bind != "" {
			if d.LocalAddr, err = parseIP(t.o.bind); err != nil {
				fmt.Fprintf(t.errOut, "getaddrinfo src_addr: %v\n", err)
				return err
			}
		}
		t.conn, err = d.DialContext(ctx, "rdma", t.address(t.o.server))
	}
	if err != nil {
		fmt.Fprintf(t.errOut, "rconnect: %v\n", err)
		return err
	}
	t.track(t.conn)
	if tc, ok := t.conn.(*net.TCPConn); ok {
		b := t.o.buffer
		if b == 0 {
			b = 1 << 19
		}
		tc.SetReadBuffer(b)
		tc.SetWriteBuffer(b)
		tc.SetNoDelay(true)
	}
	if t.o.keepalive > 0 {
		fmt.Fprintf(t.out, "Keepalive: ON\n  time: %d\n", t.o.keepalive)
	}
	return nil
}

// runTest is rstream's run_test: a 16-byte exchange, then per iteration
// count transfers from the client and count back, timed.
func (t *tester) runTest() error {
	client := t.o.server != ""
	if err := t.xfer(client, 16); err != nil {
		return err
	}
	if err := t.xfer(!client, 16); err != nil {
		return err
	}
	start := time.Now()
	for range t.iterations {
		for range t.count {
			if err := t.xfer(client, t.size); err != nil {
				return err
			}
		}
		for range t.count {
			if err := t.xfer(!client, t.size); err != nil {
				return err
			}
		}
	}
	t.showPerf(time.Since(start))
	return nil
}

func (t *tester) xfer(send bool, size int) error {
	b := t.buf[:size]
	if send {
		if t.o.verify {
			for i := range b {
				b[i] = t.sendPattern
				t.sendPattern++
			}
		}
		if _, err := t.conn.Write(b); err != nil {
			fmt.Fprintf(t.errOut, "rsend: %v\n", err)
			return err
		}
		return nil
	}
	if _, err := io.ReadFull(t.conn, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("connection closed by the peer: %w", err)
		}
		fmt.Fprintf(t.errOut, "rrecv: %v\n", err)
		return err
	}
	if t.o.verify {
		for i := range b {
			if b[i] != t.recvPattern {
				fmt.Fprintf(t.out, "data verification failed byte %d\n", t.received)
				return errors.New("data verification failed")
			}
			t.recvPattern++
			t.received++
		}
	}
	return nil
}

// showPerf prints show_perf's line: name, size, transfers, iterations,
// total bytes (both ways), seconds, Gb/s and µs per transfer.
func (t *tester) showPerf(d time.Duration) {
	usec := float64(d.Microseconds())
	bytes := int64(t.iterations) * int64(t.count) * int64(t.size) * 2
	fmt.Fprintf(t.out, "%-10s%-8s%-8s%-8s%-8s%8.2fs%10.2f%11.2f\n", t.name,
		sizeStr(int64(t.size), 31), cntStr(int64(t.count)), cntStr(int64(t.iterations)), sizeStr(bytes, 31),
		usec/1e6, float64(bytes*8)/(1000*usec), usec/float64(t.iterations)/float64(t.count*2))
}

// sizeStr is common.c size_str: 64, 4k, 1.5k, 1m, cut to max characters as
// snprintf into a small buffer does.
func sizeStr(size int64, max int) string {
	base, mag := int64(1), ""
	switch {
	case size >= 1<<30:
		base, mag = 1<<30, "g"
	case size >= 1<<20:
		base, mag = 1<<20, "m"
	case size >= 1<<10:
		base, mag = 1<<10, "k"
	}
	var frac int64
	if size/base < 10 {
		frac = size % base * 10 / base
	}
	s := fmt.Sprintf("%d%s", size/base, mag)
	if frac != 0 {
		s = fmt.Sprintf("%d.%d%s", size/base, frac, mag)
	}
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// cntStr is common.c cnt_str: 1000 as 1k, 1000000 as 1m.
func cntStr(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%db", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%dm", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return fmt.Sprint(n)
}

// sizeToCount is common.c size_to_count.
func sizeToCount(size int) int {
	switch {
	case size >= 1<<20:
		return 100
	case size >= 1<<16:
		return 1000
	case size >= 1<<10:
		return 10000
	}
	return 100000
}

func parseIP(s string) (netip.Addr, error) {
	return netip.ParseAddr(strings.Trim(s, "[]"))
}
