package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/version"
)

const usageText = `usage: %s
	[-s server_address]
	[-b bind_address]
	[-f address_format]
	    name, ip, ipv6, or gid
	[-B buffer_size]
	[-i inline_size]
	[-I iterations]
	[-C transfer_count]
	[-S transfer_size or all]
	[-p port_number]
	[-k keepalive_time]
	[-T test_option]
	    s|sockets - use standard tcp/ip sockets
	    a|async - asynchronous operation (use poll)
	    b|blocking - use blocking calls
	    f|fork - fork server processing
	    n|nonblocking - use nonblocking calls
	    r|resolve - use rdma cm to resolve address
	    v|verify - verify data
`

type options struct {
	server, bind string // -s (client mode), -b
	numeric      bool   // -f ip: no name lookup
	buffer       int    // -B: SO_SNDBUF and SO_RCVBUF; rsocket doubles them
	inline       int    // -i: inline size of the latency pass
	iterations   int    // -I
	count        int    // -C
	size         int    // -S
	allSizes     bool   // -S all
	custom       bool   // -S n, -C or -I: one connection, one test
	port         string // -p
	keepalive    int    // -k seconds
	sockets      bool   // -T s: kernel TCP
	busy         bool   // -T n (the default): rstream's non-blocking busy loop
	verify       bool   // -T v
}

// testOpt is -T, one letter or word per flag as rstream takes it
// (set_test_opt); "-T bv" is refused.
type testOpt struct{ o *options }

func (t testOpt) String() string { return "" }

func (t testOpt) Set(arg string) error {
	word := func(prefix string) bool {
		return len(arg) > 1 && len(arg) >= len(prefix) && strings.EqualFold(arg[:len(prefix)], prefix)
	}
	switch {
	case arg == "s" || word("socket"):
		t.o.sockets = true
	case arg == "a" || word("async"):
		// rpoll before each call: Go's calls wait by themselves.
	case arg == "b" || word("block"):
		t.o.busy = false
	case arg == "n" || word("nonblock"):
		t.o.busy = true
	case arg == "r" || word("resolve"):
		// rdma_getaddrinfo: the CM resolves every address here.
	case arg == "v" || word("verify"):
		t.o.verify = true
	case arg == "f" || word("fork"):
		return fmt.Errorf("-T %s: fork mode (rsocket's preload fork support) is not offered", arg)
	default:
		return fmt.Errorf("-T %s: unknown test option", arg)
	}
	return nil
}

func parse(args []string) (options, error) {
	o := options{inline: 64, iterations: 1, count: 1000, size: 1000, port: "7471", busy: true}
	fs := cmdline.NewFlagSet("rstream")
	fs.StringVar(&o.server, "s", "", "")
	fs.StringVar(&o.bind, "b", "", "")
	format := fs.String("f", "", "")
	fs.IntVar(&o.buffer, "B", 0, "")
	fs.IntVar(&o.inline, "i", o.inline, "")
	fs.StringVar(&o.port, "p", o.port, "")
	fs.IntVar(&o.keepalive, "k", 0, "")
	size := fs.String("S", "", "")
	fs.Var(testOpt{&o}, "T", "")
	set := map[string]bool{}
	fs.Func("I", "", func(v string) error { set["I"] = true; return atoi(v, &o.iterations) })
	fs.Func("C", "", func(v string) error { set["C"] = true; return atoi(v, &o.count) })
	rest, err := cmdline.Parse(fs, args)
	if err != nil {
		return o, err
	}
	if len(rest) > 0 {
		return o, cmdline.Usagef("unexpected argument %q", rest[0])
	}
	switch f := strings.ToLower(*format); {
	case f == "":
	case strings.HasPrefix(f, "ip"):
		o.numeric = true
	case strings.HasPrefix(f, "gid"):
		return o, cmdline.Usagef("-f gid: AF_IB addresses are not supported; give an IP address")
	default:
		fmt.Fprintln(os.Stderr, "Warning: unknown address format")
	}
	if *size != "" {
		if strings.HasPrefix(strings.ToLower(*size), "all") {
			o.allSizes = true
		} else {
			o.custom = true
			if err := atoi(*size, &o.size); err != nil {
				return o, err
			}
		}
	}
	o.custom = o.custom || set["I"] || set["C"]
	switch {
	case o.size < 1 || o.count < 1 || o.iterations < 1:
		return o, cmdline.Usagef("-S, -C and -I must be at least 1")
	case o.buffer < 0 || o.inline < 0 || o.keepalive < 0:
		return o, cmdline.Usagef("-B, -i and -k must not be negative")
	}
	if _, err := strconv.ParseUint(o.port, 10, 16); err != nil {
		return o, cmdline.Usagef("-p %s: not a port", o.port)
	}
	return o, nil
}

func atoi(s string, p *int) error {
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*p = v
	return nil
}

func main() {
	version.Handle("rstream")
	cmdline.Run(func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	})
}

// run is the program; it returns the exit status: 0, 1 for a bad command
// line (after the usage, on stdout), 255 when the test failed, as rstream.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "rstream: %v\n", err)
		fmt.Fprintf(stdout, usageText, "rstream")
		return 1
	}
	t := &tester{o: o, out: stdout, errOut: stderr}
	if err := t.run(ctx); err != nil {
		return 255
	}
	return 0
}
