package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/version"
)

const usageText = `usage: cmtime
	[-s server_address]
	[-b bind_address]
	[-c connections]
	[-p port_number]
	[-r retries]
	[-t timeout_ms]
`

type options struct {
	server, bind string // -s (client mode), -b
	conns        int
	port         int
	retries      int
	timeout      time.Duration
}

func parse(args []string) (options, error) {
	o := options{conns: 100, port: 7471, retries: 2, timeout: 2000 * time.Millisecond}
	fs := cmdline.NewFlagSet("cmtime")
	fs.StringVar(&o.server, "s", "", "")
	fs.StringVar(&o.bind, "b", "", "")
	fs.IntVar(&o.conns, "c", o.conns, "")
	fs.IntVar(&o.port, "p", o.port, "")
	fs.IntVar(&o.retries, "r", o.retries, "")
	ms := fs.Int("t", 2000, "")
	rest, err := cmdline.Parse(fs, args)
	switch {
	case err != nil:
		return o, err
	case len(rest) > 0:
		return o, cmdline.Usagef("unexpected argument %q", rest[0])
	case o.conns < 1:
		return o, cmdline.Usagef("-c %d: at least one connection", o.conns)
	case o.port < 1 || o.port > 65535:
		return o, cmdline.Usagef("-p %d: not a port", o.port)
	case o.retries < 0 || *ms < 1:
		return o, cmdline.Usagef("-r and -t must be positive")
	}
	o.timeout = time.Duration(*ms) * time.Millisecond
	return o, nil
}

func main() {
	version.Handle("cmtime")
	// Two Ps at least: with one (a process pinned to one CPU), every command
	// that blocks in the kernel hands the P to another thread and back,
	// which costs more than the command under emulation.
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	cmdline.Run(func(ctx context.Context) int { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

// run is the program; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args)
	if err != nil {
		// cmtime prints its usage on stdout and exits with 1.
		var uerr *cmdline.UsageError
		if errors.As(err, &uerr) {
			fmt.Fprintf(stderr, "cmtime: %v\n", err)
		}
		fmt.Fprint(stdout, usageText)
		return 1
	}
	if o.server == "" {
		err = serve(ctx, o, stderr)
	} else {
		err = client(ctx, o, stdout)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "cmtime: %v\n", err)
		return 1
	}
	return 0
}

func hostPort(host string, port int) string {
	if host == "" {
		host = "0.0.0.0"
	}
	return host + ":" + strconv.Itoa(port)
}
