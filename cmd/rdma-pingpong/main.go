package main

import (
	"context"
	"io"
	"os"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/version"
	"github.com/goverbs/rdma/uverbs"
)

func main() {
	version.Handle("rdma-pingpong")
	cmdline.Run(func(ctx context.Context) int {
		return cmdline.Status("rdma-pingpong", usageText, run(ctx, os.Args[1:], os.Stdout))
	})
}

const usageText = `Usage:
  rdma-pingpong [rc|ud] [options]         start a server and wait for connection
  rdma-pingpong [rc|ud] [options] <host>  connect to server at <host>

rc (default): reliable connection, like ibv_rc_pingpong; ud: datagrams, like ibv_ud_pingpong.

Options:
  -p, --port=<port>      listen on/connect to port <port> (default 18515)
  -d, --ib-dev=<dev>     use RDMA device <dev> (default first device found)
  -i, --ib-port=<port>   use port <port> of the device (default 1)
  -s, --size=<size>      size of message to exchange (default 4096 rc, 1024 ud)
  -m, --mtu=<size>       path MTU, rc only (default 1024)
  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)
  -n, --iters=<iters>    number of exchanges (default 1000)
  -l, --sl=<sl>          service level value (default 0)
  -e, --events           sleep on CQ events (default poll)
  -g, --gid-idx=<index>  local port GID index (default: the GID of the TCP connection's local address)
  -c, --chk              validate the received buffer
`

// Defaults of rdma-core's rc_pingpong.c and ud_pingpong.c (v44 and later).
const (
	defaultTCPPort = 18515
	defaultRCSize  = 4096
	defaultUDSize  = 1024 // ud_pingpong.c: size = 1024, although its usage text says 2048
	defaultMTU     = 1024 // rc_pingpong.c: mtu = IBV_MTU_1024
	defaultRxDepth = 500
	defaultIters   = 1000
)

// options are the parsed command line.
type options struct {
	qpType  uverbs.QPType
	port    int // TCP port of the address exchange
	dev     string
	ibPort  int
	size    int
	mtu     uverbs.MTU // rc only
	rxDepth int
	iters   int
	sl      int
	events  bool
	gidIdx  int // -1: from the local address of the TCP connection
	check   bool
	server  string // empty: be the server
}

// parseArgs parses the command line. As with the C programs' getopt, options
// and the host name may come in any order.
func parseArgs(args []string) (options, error) {
	o := options{qpType: uverbs.RC}
	if len(args) > 0 {
		switch args[0] {
		case "rc":
			args = args[1:]
		case "ud":
			o.qpType, args = uverbs.UD, args[1:]
		}
	}
	fs := cmdline.NewFlagSet("rdma-pingpong")
	mtu := defaultMTU
	both := func(short, long string, p *int, def int) { cmdline.IntFlag(fs, short, long, p, def) }
	both("p", "port", &o.port, defaultTCPPort)
	cmdline.StringFlag(fs, "d", "ib-dev", &o.dev, "")
	both("i", "ib-port", &o.ibPort, 1)
	both("s", "size", &o.size, -1)
	both("m", "mtu", &mtu, -1)
	both("r", "rx-depth", &o.rxDepth, defaultRxDepth)
	both("n", "iters", &o.iters, defaultIters)
	both("l", "sl", &o.sl, 0)
	fs.BoolVar(&o.events, "e", false, "")
	fs.BoolVar(&o.events, "events", false, "")
	both("g", "gid-idx", &o.gidIdx, -1)
	fs.BoolVar(&o.check, "c", false, "")
	fs.BoolVar(&o.check, "chk", false, "")

	var err error
	if o.server, err = cmdline.ParseHost(fs, args); err != nil {
		return o, err
	}

	switch {
	case o.port <= 0 || o.port > 65535:
		return o, cmdline.Usagef("-p %d: not a TCP port", o.port)
	case o.ibPort < 1 || o.ibPort > 255:
		return o, cmdline.Usagef("-i %d: device ports are numbered from 1", o.ibPort)
	case o.rxDepth < 1:
		return o, cmdline.Usagef("-r %d: at least one receive must be posted", o.rxDepth)
	case o.iters < 1:
		return o, cmdline.Usagef("-n %d: at least one exchange", o.iters)
	case o.sl < 0 || o.sl > 15:
		return o, cmdline.Usagef("-l %d: service levels are 0..15", o.sl)
	case o.gidIdx < -1 || o.gidIdx > 255:
		return o, cmdline.Usagef("-g %d: not a GID index", o.gidIdx)
	}
	if o.size == -1 {
		o.size = defaultRCSize
		if o.qpType == uverbs.UD {
			o.size = defaultUDSize
		}
	}
	if o.size < 1 {
		return o, cmdline.Usagef("-s %d: messages have at least one byte", o.size)
	}
	if mtu != -1 && o.qpType == uverbs.UD {
		return o, cmdline.Usagef("-m is for rc: a UD message must fit in the port's active MTU")
	}
	if mtu == -1 {
		mtu = defaultMTU
	}
	o.mtu = uverbs.MTUFromBytes(mtu)
	if o.mtu == 0 || o.mtu.Bytes() != mtu {
		return o, cmdline.Usagef("-m %d: the path MTU is 256, 512, 1024, 2048 or 4096", mtu)
	}
	return o, nil
}

// run runs one side of the ping-pong with the command-line arguments args
// (without the program name), printing what the C programs print to stdout.
// It returns when both sides are done, on the first error, or when ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseArgs(args)
	if err != nil {
		return err
	}
	return pingpong(ctx, o, stdout)
}
