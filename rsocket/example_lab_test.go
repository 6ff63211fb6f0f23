package rsocket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goverbs/rdma/rdmacm"
)

// The examples (example_test.go) need an RDMA device, so go test only
// compiles them; these tests run their code in the lab and check it.

const exampleWait = 2 * time.Minute // generous: the lab may be emulated on a busy machine

func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(exampleWait):
		t.Fatalf("still waiting for %s after %v", what, exampleWait)
		var zero T
		return zero
	}
}

// patternBytes returns n bytes that differ with seed.
func patternBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{0: byte(seed), 1: byte(seed >> 8), 2: byte(seed >> 16)}).Read(b)
	return b
}

// TestExampleEcho runs ExampleListen's server (a goroutine per connection
// copying what it reads back) with clients as in ExampleDial and
// ExampleDialer, several at once: each writes, shuts down its writing side
// and reads the echo to the end of the stream. Closing the listener ends
// the accept loop with net.ErrClosed.
func TestExampleEcho(t *testing.T) {
	l, addr := labListen(t, nil)
	var handlers sync.WaitGroup
	copyErrs := make(chan error, 16)
	acceptEnd := make(chan error, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				acceptEnd <- err
				return
			}
			handlers.Add(1)
			go func() {
				defer handlers.Done()
				defer c.Close()
				_, err := io.Copy(c, c)
				copyErrs <- err
			}()
		}
	}()

	dialers := []*Dialer{
		{}, // rsocket.Dial's defaults
		{Options: Options{SendBuffer: 1 << 20, RecvBuffer: 1 << 20, KeepAlive: 30 * time.Second}, Timeout: exampleWait},
		{Options: Options{SendBuffer: 8 << 10, RecvBuffer: 8 << 10, SQSize: 16, RQSize: 16}},
	}
	sizes := []int{len("hello over RDMA\n"), 100000, 3 << 20}
	errs := make(chan error, len(dialers)*len(sizes))
	for i, d := range dialers {
		for j, n := range sizes {
			go func() { errs <- echoOnce(d, addr, patternBytes(n, uint64(i*10+j))) }()
		}
	}
	for range len(dialers) * len(sizes) {
		if err := within(t, errs, "the echo clients"); err != nil {
			t.Error(err)
		}
	}
	for range len(dialers) * len(sizes) {
		if err := within(t, copyErrs, "the server's copies"); err != nil {
			t.Errorf("server: io.Copy: %v", err)
		}
	}
	l.Close()
	if err := within(t, acceptEnd, "Accept to return after Close"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	handlers.Wait()
}

// echoOnce is ExampleDial with msg as the line; the write runs beside the
// read, as a message larger than both sides' buffers needs.
func echoOnce(d *Dialer, addr string, msg []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), exampleWait)
	defer cancel()
	c, err := d.Dial(ctx, "rdma", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Write(msg)
		if err == nil {
			err = c.CloseWrite()
		}
		wrote <- err
	}()
	echo, err := io.ReadAll(c)
	if err != nil {
		return fmt.Errorf("%d bytes: read: %w", len(msg), err)
	}
	if err := <-wrote; err != nil {
		return fmt.Errorf("%d bytes: write: %w", len(msg), err)
	}
	if !bytes.Equal(echo, msg) {
		return fmt.Errorf("%d bytes: the echo differs (%d bytes)", len(msg), len(echo))
	}
	return nil
}

// trackedConn tells when the HTTP client closed a connection.
type trackedConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}

// closeSignal tells when http.Server closed its listener.
type closeSignal struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *closeSignal) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
}

// TestHTTP runs Example_http's server and client for real: http.Serve on
// a Listener, an http.Transport dialing with (&Dialer{}).DialContext (which
// it calls with network "tcp"). GETs and POSTs of a few MiB have their
// bodies checked, all of them over one kept-alive connection; Shutdown
// closes the listener at once (a new dial is refused), lets the request in
// flight finish, and returns once the connection is closed.
func TestHTTP(t *testing.T) {
	l, addr := labListen(t, nil)
	lis := &closeSignal{Listener: l, closed: make(chan struct{})}

	holdStarted, release := make(chan struct{}, 1), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /data", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		seed, _ := strconv.ParseUint(r.URL.Query().Get("seed"), 10, 64)
		w.Header().Set("X-Remote", r.RemoteAddr)
		w.Write(patternBytes(n, seed))
	})
	mux.HandleFunc("POST /sum", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Remote", r.RemoteAddr)
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	})
	mux.HandleFunc("GET /hold", func(w http.ResponseWriter, r *http.Request) {
		holdStarted <- struct{}{}
		<-release
		io.WriteString(w, "released")
	})
	var serverConns atomic.Int32
	srv := &http.Server{Handler: mux, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			serverConns.Add(1)
		}
	}}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() { srv.Close() })

	var (
		mu       sync.Mutex
		conns    []*trackedConn
		networks []string
	)
	dial := (&Dialer{}).DialContext
	tr := &http.Transport{DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		mu.Lock()
		defer mu.Unlock()
		networks = append(networks, network)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, closed: make(chan struct{})}
		conns = append(conns, tc)
		return tc, nil
	}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			within(t, c.closed, "the client to close its connection")
		}
	})
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	base := "http://" + addr

	// do sends req and checks that it went over the connection made first.
	var reused atomic.Int32
	do := func(req *http.Request) (*http.Response, []byte) {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reused.Add(1)
			}
		}}
		resp, err := client.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s: %s", req.Method, req.URL, resp.Status, body)
		}
		mu.Lock()
		local := conns[0].LocalAddr().String()
		mu.Unlock()
		if got := resp.Header.Get("X-Remote"); got != local {
			t.Fatalf("the server saw the request come from %s, the client's connection is from %s", got, local)
		}
		return resp, body
	}

	requests := 0
	for i, n := range []int{3 << 20, 1, 2<<20 + 12345} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/data?n=%d&seed=%d", base, n, i), nil)
		if _, body := do(req); !bytes.Equal(body, patternBytes(n, uint64(i))) {
			t.Fatalf("GET of %d bytes: the body differs (%d bytes)", n, len(body))
		}
		post := patternBytes(4<<20-i*1000, uint64(100+i))
		sum := sha256.Sum256(post)
		req, _ = http.NewRequest("POST", base+"/sum", bytes.NewReader(post))
		if _, body := do(req); string(body) != fmt.Sprintf("%d %s", len(post), hex.EncodeToString(sum[:])) {
			t.Fatalf("POST of %d bytes (sha256 %x): the server read %s", len(post), sum, body)
		}
		requests += 2
	}
	mu.Lock()
	if len(networks) != 1 || networks[0] != "tcp" {
		t.Errorf("the transport dialed %d times, with networks %q; want once, with tcp", len(networks), networks)
	}
	mu.Unlock()
	if got := reused.Load(); got != int32(requests-1) {
		t.Errorf("%d of %d requests reused the connection, want all but the first", got, requests)
	}
	if got := serverConns.Load(); got != 1 {
		t.Errorf("the server saw %d connections, want 1", got)
	}

	// Shutdown with a request in flight.
	held := make(chan error, 1)
	go func() {
		resp, err := client.Get(base + "/hold")
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && (resp.StatusCode != http.StatusOK || string(body) != "released") {
				err = fmt.Errorf("%s: %q", resp.Status, body)
			}
		}
		held <- err
	}()
	within(t, holdStarted, "the held request to reach its handler")
	shutdown := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), exampleWait)
		defer cancel()
		shutdown <- srv.Shutdown(ctx)
	}()
	within(t, lis.closed, "Shutdown to close the listener")
	if c, err := Dial(context.Background(), "rdma", addr); !errors.Is(err, rdmacm.ErrConnRefused) {
		if c != nil {
			c.Close()
		}
		t.Errorf("Dial once Shutdown closed the listener: %v, want a refusal", err)
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned (%v) while a request was in its handler", err)
	default:
	}
	close(release)
	if err := within(t, held, "the held request"); err != nil {
		t.Errorf("the request in flight during Shutdown: %v", err)
	}
	if err := within(t, shutdown, "Shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := within(t, served, "Serve to return"); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve after Shutdown: %v, want http.ErrServerClosed", err)
	}
	if _, err := client.Get(base + "/data?n=1"); !errors.Is(err, rdmacm.ErrConnRefused) {
		t.Errorf("GET after Shutdown: %v, want a refused connection", err)
	}
	if got := serverConns.Load(); got != 1 {
		t.Errorf("the server saw %d connections, want 1", got)
	}
}
