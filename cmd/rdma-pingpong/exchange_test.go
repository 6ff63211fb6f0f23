package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

// TestMain runs the program itself when asChildEnv is set, so that the
// benchmarks can start it as a process of its own (os.Args[0]).
func TestMain(m *testing.M) {
	if os.Getenv(asChildEnv) == "1" {
		main()
		os.Exit(0)
	}
	testutil.Main(m)
}

const asChildEnv = "GOVERBS_RUN_RDMA_PINGPONG"

// The wire form of an address, as rdma-core's pp_client_exch_dest builds it
// with sprintf("%04x:%06x:%06x:%s") and gid_to_wire_gid on x86.
func TestDestWireFormat(t *testing.T) {
	d := dest{LID: 0x1a, QPN: 0x11, PSN: 0x3f4a2b, GID: uverbs.GIDFromIP(netip.MustParseAddr("127.0.0.1"))}
	b := d.marshal()
	if len(b) != 52 {
		t.Fatalf("message is %d bytes, rdma-core sends 52", len(b))
	}
	const want = "001a:000011:3f4a2b:00000000000000000000ffff7f000001\x00"
	if string(b) != want {
		t.Fatalf("marshal = %q, want %q", b, want)
	}
	got, err := parseDest(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != d {
		t.Fatalf("parseDest = %+v, want %+v", got, d)
	}
	if s := d.String(); s != "LID 0x001a, QPN 0x000011, PSN 0x3f4a2b, GID ::ffff:127.0.0.1" {
		t.Fatalf("String = %q", s)
	}
	if !d.hasInterfaceID() || (dest{}).hasInterfaceID() {
		t.Fatal("hasInterfaceID: want true for ::ffff:127.0.0.1 and false for ::")
	}
	// A link-local GID: the bytes in order, not in words swapped.
	ll, _ := uverbs.ParseGID("fe80::200:ff:fe00:1")
	if s := string((dest{GID: ll}).marshal()[19:51]); s != "fe80000000000000020000fffe000001" {
		t.Fatalf("GID on the wire %q", s)
	}
}

func TestParseDestRejects(t *testing.T) {
	for _, m := range []string{
		"",
		"0000:000011:000001",
		"0000:000011:000001:00000000000000000000ffff7f00000",   // 31 digits
		"0000:000011:000001:00000000000000000000ffff7f00000g",  // not hex
		"0000:1000000:000001:00000000000000000000ffff7f000001", // QPN over 24 bits
		"zz:000011:000001:00000000000000000000ffff7f000001",
	} {
		if d, err := parseDest([]byte(m)); err == nil {
			t.Errorf("parseDest(%q) = %+v, want an error", m, d)
		}
	}
}

func TestParseArgs(t *testing.T) {
	o, err := parseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.qpType != uverbs.RC || o.port != 18515 || o.size != 4096 || o.mtu != uverbs.MTU1024 ||
		o.rxDepth != 500 || o.iters != 1000 || o.ibPort != 1 || o.gidIdx != -1 || o.server != "" || o.events {
		t.Fatalf("rc defaults: %+v", o)
	}
	o, err = parseArgs([]string{"ud"})
	if err != nil || o.qpType != uverbs.UD || o.size != 1024 {
		t.Fatalf("ud defaults: %+v, %v", o, err)
	}
	// Options after the host name, long names, as getopt_long allows.
	o, err = parseArgs([]string{"rc", "-d", "rxe0", "10.0.0.1", "-g", "1", "--size=100", "-e", "--iters", "7", "-m", "4096", "-c"})
	if err != nil {
		t.Fatal(err)
	}
	if o.dev != "rxe0" || o.server != "10.0.0.1" || o.gidIdx != 1 || o.size != 100 || !o.events || o.iters != 7 || o.mtu != uverbs.MTU4096 || !o.check {
		t.Fatalf("parsed %+v", o)
	}
	if _, err := parseArgs([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, args := range [][]string{
		{"-m", "1000"},
		{"ud", "-m", "1024"},
		{"-n", "0"},
		{"-r", "0"},
		{"-s", "0"},
		{"-p", "70000"},
		{"-x"},
		{"host1", "host2"},
	} {
		var uerr *cmdline.UsageError
		if _, err := parseArgs(args); !errors.As(err, &uerr) {
			t.Errorf("parseArgs(%q) = %v, want a usage error", args, err)
		}
	}
}

// The TCP exchange of two sides of this program, without RDMA: addresses
// cross, the server connects before answering, and "done" ends it.
func TestExchange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	srvMe := dest{QPN: 0x12, PSN: 0xabcdef, GID: uverbs.GIDFromIP(netip.MustParseAddr("127.0.0.1"))}
	cliMe := dest{QPN: 0x13, PSN: 0x000001, GID: uverbs.GIDFromIP(netip.MustParseAddr("127.0.0.1"))}
	type result struct {
		peer      dest
		connected dest
		err       error
	}
	srv := make(chan result, 1)
	go func() {
		var r result
		r.peer, r.err = serverExchange(ctx, port,
			func(a net.Addr) (dest, error) { return srvMe, nil },
			func(p dest) error { r.connected = p; return nil })
		srv <- r
	}()
	var peer dest
	for {
		peer, err = clientExchange(ctx, "127.0.0.1", port, func(a net.Addr) (dest, error) {
			if ip := a.(*net.TCPAddr).IP; !ip.Equal(net.ParseIP("127.0.0.1")) {
				t.Errorf("local address of the client connection %v", ip)
			}
			return cliMe, nil
		})
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "refused") {
			break
		}
		time.Sleep(20 * time.Millisecond) // the server is not listening yet
	}
	if err != nil {
		t.Fatal(err)
	}
	r := <-srv
	if r.err != nil {
		t.Fatal(r.err)
	}
	if peer != srvMe || r.peer != cliMe || r.connected != cliMe {
		t.Fatalf("client got %+v, server got %+v (connected to %+v)", peer, r.peer, r.connected)
	}
}

// A server whose context ends while it waits for a client returns at once.
func TestServerExchangeCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := serverExchange(ctx, 0, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

func TestDataChecks(t *testing.T) {
	const size = 3*checkPage + 100
	ours := make([]byte, size)
	fillPattern(ours)
	if err := checkPattern(ours); err != nil {
		t.Fatal(err)
	}
	if err := checkReceived(ours); err != nil {
		t.Fatal(err)
	}
	// What rdma-core's client sends with -c.
	theirs := bytes.Repeat([]byte{fillByte}, size)
	for i := 0; i < size; i += checkPage {
		theirs[i] = 0
	}
	if err := checkReceived(theirs); err != nil {
		t.Fatal(err)
	}
	// A server's untouched buffer, a changed byte, a mix of both patterns.
	fresh := bytes.Repeat([]byte{fillByte}, size)
	changed := bytes.Clone(ours)
	changed[checkPage+1]++
	mixed := bytes.Clone(ours)
	copy(mixed[checkPage:], theirs[checkPage:])
	for name, b := range map[string][]byte{"fresh": fresh, "changed": changed, "mixed": mixed} {
		if checkReceived(b) == nil {
			t.Errorf("checkReceived accepts the %s buffer", name)
		}
		if checkPattern(b) == nil {
			t.Errorf("checkPattern accepts the %s buffer", name)
		}
	}
}
