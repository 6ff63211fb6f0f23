package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/version"
	"github.com/goverbs/rdma/uverbs"
)

func main() {
	version.Handle("rping")
	cmdline.Run(func(ctx context.Context) int { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

// Exit codes, those of rping.c: main returns EINVAL for a bad command line
// and errno ENODEV when librdmacm finds no device; every other failure ends
// in exit(-1) or return -1, that is 255.
const (
	exitOK          = 0
	exitNoDevice    = 19  // ENODEV
	exitUsage       = 22  // EINVAL
	exitFailed      = 255 // -1
	exitInterrupted = 130 // 128 + SIGINT
)

const usageText = `rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]
rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
	-c		client side
	-I		Source address to bind to for client.
	-s		server side.  To bind to any address with IPv6 use -a ::0
	-v		display ping data to stdout
	-V		validate ping data
	-d		debug printfs
	-S size 	ping data size
	-C count	ping count times
	-a addr		address
	-p port		port
	-P		persistent server mode allowing multiple connections
`

// Limits and defaults of rping.c: RPING_BUFSIZE is 64 KiB and -S must be
// below it; RPING_MIN_BUFSIZE is sizeof("INT_MAX") + sizeof("rdma-ping-%d: ")
// = 8 + 15 (INT_MAX is not defined there, so stringify gives its name);
// size 64, port 7174 and count 0 (ping until the connection ends) by default.
const (
	minSize     = 23
	maxSize     = 64*1024 - 1
	defaultSize = 64
	defaultPort = 7174
)

// options are the parsed command line.
type options struct {
	// devices lists the RDMA devices (uverbs.Devices); the command line
	// never sets it, tests do.
	devices func() ([]uverbs.DeviceInfo, error)

	server     bool
	persistent bool   // -P
	addr       string // -a: the server's address, or the one to listen on
	source     string // -I: the client's source address
	port       int
	count      int // 0: until the connection ends
	size       int
	verbose    bool
	validate   bool
	debug      bool

	// corrupt makes a server flip a byte of each ping before writing it
	// back; tests use it to see -V catch a mismatch. No flag sets it.
	corrupt bool
}

// parseArgs reads the command line as rping's getopt does (optstring
// "a:I:Pp:C:S:scvVd"): flags may be grouped (-vV), an option's value may be
// attached (-C10) or the next word, and "--" ends the options.
func parseArgs(args []string) (options, error) {
	o := options{devices: uverbs.Devices, size: defaultSize, port: defaultPort}
	role := ""
	withValue := map[byte]bool{'a': true, 'I': true, 'p': true, 'C': true, 'S': true}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			var val string
			if withValue[c] {
				switch {
				case j+1 < len(a):
					val = a[j+1:]
				case i+1 < len(args):
					i++
					val = args[i]
				default:
					return o, cmdline.Usagef("option -%c needs a value", c)
				}
				j = len(a)
			}
			if err := o.set(c, val, &role); err != nil {
				return o, err
			}
		}
	}
	if i < len(args) {
		return o, cmdline.Usagef("unexpected argument %q", args[i])
	}
	switch role {
	case "":
		return o, cmdline.Usagef("give -s (server) or -c (client)")
	case "client":
		if o.addr == "" {
			return o, cmdline.Usagef("the client needs the server's address: -a addr")
		}
		if o.persistent {
			return o, cmdline.Usagef("-P is for the server")
		}
	case "server":
		if o.source != "" {
			return o, cmdline.Usagef("-I is for the client")
		}
	}
	o.server = role == "server"
	return o, nil
}

// set applies one option.
func (o *options) set(c byte, val string, role *string) error {
	num := func() (int, error) {
		n, err := strconv.Atoi(val)
		if err != nil {
			return 0, cmdline.Usagef("-%c %q: not a number", c, val)
		}
		return n, nil
	}
	if on := map[byte]*bool{'P': &o.persistent, 'v': &o.verbose, 'V': &o.validate, 'd': &o.debug}[c]; on != nil {
		*on = true
		return nil
	}
	var err error
	switch c {
	case 'a':
		o.addr = val
	case 'I':
		o.source = val
	case 'p':
		if o.port, err = num(); err == nil && (o.port < 0 || o.port > 65535) {
			err = cmdline.Usagef("-p %d: not a port", o.port)
		}
	case 'C':
		if o.count, err = num(); err == nil && o.count < 0 {
			err = cmdline.Usagef("Invalid count %d", o.count)
		}
	case 'S':
		if o.size, err = num(); err == nil && (o.size < minSize || o.size > maxSize) {
			err = cmdline.Usagef("Invalid size %d (valid range is %d to %d)", o.size, minSize, maxSize)
		}
	case 's', 'c':
		r := map[byte]string{'s': "server", 'c': "client"}[c]
		if *role != "" && *role != r {
			return cmdline.Usagef("-s and -c: give one")
		}
		*role = r
	case 'q':
		return cmdline.Usagef("-q (a QP created and moved without the CM) is not supported")
	default:
		return cmdline.Usagef("unknown option -%c", c)
	}
	return err
}

// run runs rping with the command-line arguments args (without the program
// name) and returns the exit code. Ping data and debug lines go to stdout as
// with rping; errors and the DISCONNECT lines to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "rping: %v\n", err)
		fmt.Fprint(stdout, usageText)
		return exitUsage
	}
	return execute(ctx, o, stdout, stderr)
}

// execute runs rping with options o and returns the exit code.
func execute(ctx context.Context, o options, stdout, stderr io.Writer) int {
	out := &cmdline.LockedWriter{W: stdout}
	errw := &cmdline.LockedWriter{W: stderr}
	err := rping(ctx, o, out, errw)
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return exitInterrupted
	}
	fmt.Fprintf(errw, "rping: %v\n", err)
	if errors.Is(err, uverbs.ErrNoDevice) {
		return exitNoDevice
	}
	return exitFailed
}
