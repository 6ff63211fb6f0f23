package main

import (
	"context"
	"flag"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/version"
)

func main() {
	version.Handle("rdma-perf")
	cmdline.Run(profiled)
}

// profiled is the program, with a CPU profile when RDMA_PERF_CPUPROFILE
// names a file for one (where BENCHMARKS.md's profiles come from).
func profiled(ctx context.Context) int {
	if f := os.Getenv("RDMA_PERF_CPUPROFILE"); f != "" {
		w, err := os.Create(f)
		if err == nil {
			err = pprof.StartCPUProfile(w)
		}
		if err != nil {
			return cmdline.Status("rdma-perf", usageText, err)
		}
		defer pprof.StopCPUProfile()
	}
	return cmdline.Status("rdma-perf", usageText, run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `Usage:
  rdma-perf TEST [options]           start a server and wait for a client
  rdma-perf TEST [options] <host>    connect to the server on <host>

TEST is one of write_bw, send_bw, read_bw, write_lat, send_lat, read_lat,
atomic_lat (perftest's ib_TEST). Options (perftest's letters and meanings):
  -d, --ib-dev=<dev>       RDMA device (default: the first one)
  -i, --ib-port=<port>     port of the device (default 1)
  -x, --gid-index=<index>  GID index (default: the GID of the TCP connection's local address)
  -s, --size=<bytes>       message size (default 65536 bw, 2 lat, 8 atomic)
  -n, --iters=<n>          iterations (default 5000 write_bw, 1000 others)
  -D, --duration=<sec>     run for <sec> seconds instead of -n iterations
  -f, --margin=<sec>       with -D: seconds left out at each end (default D/4)
  -a, --all                every size from 2 to 8388608 bytes
  -q, --qp=<n>             QPs (default 1; not with -R): a bandwidth test runs -n
                           iterations on each; send_lat and write_lat (ours:
                           perftest refuses -q in latency tests) open <n> QPs
                           and ping-pong over them in turn, exchange k over
                           QP k mod <n>, one at a time, -n exchanges in all
  -b, --bidirectional      both sides send (bandwidth tests)
  -t, --tx-depth=<n>       send queue depth (default 128 bw, 1 lat)
  -r, --rx-depth=<n>       receives posted (default 512 send tests)
  -Q, --cq-mod=<n>         one signaled completion every <n> sends (default 100;
                           1 above 8192 bytes unless -e)
  -I, --inline_size=<n>    inline data up to <n> bytes (default 0: perftest
                           enables inline only on devices it knows, rxe not among them)
  -o, --outs=<n>           outstanding READs/atomics (default: the device's maximum)
  -m, --mtu=<bytes>        path MTU (default: the port's active MTU)
  -u, --qp-timeout=<n>     QP ACK timeout exponent (default 14)
  -R, --rdma_cm            connect the QPs through the RDMA CM
  -e, --events             sleep on completion events instead of polling
  -p, --port=<port>        TCP (and, with -R, CM) port (default 18515)
      --report_gbits       report Gb/s instead of MB/s
  -F, --CPU-freq           accepted for perftest compatibility (no effect)
`

// run runs one side with the command-line arguments (without the program
// name), printing perftest's table to stdout and progress to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseArgs(args)
	if err != nil {
		return err
	}
	return start(ctx, o, stdout, stderr)
}

// start runs one side with parsed options.
func start(ctx context.Context, o options, stdout, stderr io.Writer) error {
	return perf(ctx, o, stdout, stderr)
}

// perftest's defaults (src/perftest_parameters.h @ v4.5-0.17, the version
// Debian ships).
const (
	defPort        = 18515
	defSizeBW      = 65536 // DEF_SIZE_BW
	defSizeLat     = 2     // DEF_SIZE_LAT
	defSizeAtomic  = 8     // DEF_SIZE_ATOMIC
	defIters       = 1000  // DEF_ITERS
	defItersWB     = 5000  // DEF_ITERS_WB (write_bw)
	defTxBW        = 128   // DEF_TX_BW
	defTxLat       = 1     // DEF_TX_LAT
	defRxSend      = 512   // DEF_RX_SEND
	defCQMod       = 100   // DEF_CQ_MOD
	cqModSizeLimit = 8192  // MSG_SIZE_CQ_MOD_LIMIT: above it, every send is signaled
	defQPTimeout   = 14    // DEF_QP_TIME
	maxSize        = 8388608
	maxQPs         = 16384 // MAX_QP_NUM
	minRNRTimer    = 12    // MIN_RNR_TIMER
)

// verb is what a test posts.
type verb int

const (
	write verb = iota
	send
	read
	atomicOp
)

func (v verb) String() string {
	return [...]string{"WRITE", "SEND", "READ", "ATOMIC"}[v]
}

// options are the parsed command line, after perftest's force_dependecies.
type options struct {
	// beforeRuns, which the command line never sets, runs on the side
	// that measures once its QP is connected, before the measured runs
	// (the tests measure allocations there).
	beforeRuns func(*session) error

	test     string
	verb     verb
	lat      bool // a latency test; else bandwidth
	dev      string
	ibPort   int
	gidIdx   int // -1: from the TCP connection's local address
	size     int
	iters    int
	duration int // seconds; 0: -n iterations
	margin   int
	all      bool
	qps      int  // -q: QPs (bandwidth tests; send_lat and write_lat round-robin)
	duplex   bool // -b: both sides send (bandwidth tests)
	txDepth  int
	rxDepth  int
	cqMod    int
	inline   int
	outReads int // 0: the device's maximum
	mtu      int // bytes; 0: the port's active MTU
	timeout  int
	cm       bool
	events   bool
	port     int
	gbits    bool
	server   string // empty: be the server
}

var tests = map[string]struct {
	v   verb
	lat bool
}{
	"write_bw": {write, false}, "send_bw": {send, false}, "read_bw": {read, false},
	"write_lat": {write, true}, "send_lat": {send, true}, "read_lat": {read, true},
	"atomic_lat": {atomicOp, true},
}

// parseArgs parses the command line; options and the host may come in any
// order after the test name, as with getopt.
func parseArgs(args []string) (options, error) {
	var o options
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		return o, flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return o, cmdline.Usagef("the first argument names the test (write_bw, send_bw, read_bw, write_lat, send_lat, read_lat, atomic_lat)")
	}
	name := strings.TrimPrefix(args[0], "ib_")
	t, ok := tests[name]
	if !ok {
		return o, cmdline.Usagef("unknown test %q", args[0])
	}
	o.test, o.verb, o.lat = name, t.v, t.lat
	args = args[1:]

	fs := cmdline.NewFlagSet("rdma-perf")
	both := func(short, long string, p *int, def int) { cmdline.IntFlag(fs, short, long, p, def) }
	bothBool := func(short, long string, p *bool) { cmdline.BoolFlag(fs, short, long, p) }
	cmdline.StringFlag(fs, "d", "ib-dev", &o.dev, "")
	both("i", "ib-port", &o.ibPort, 1)
	both("x", "gid-index", &o.gidIdx, -1)
	both("s", "size", &o.size, -1)
	both("n", "iters", &o.iters, -1)
	both("D", "duration", &o.duration, 0)
	both("f", "margin", &o.margin, -1)
	bothBool("a", "all", &o.all)
	both("q", "qp", &o.qps, 1)
	bothBool("b", "bidirectional", &o.duplex)
	both("t", "tx-depth", &o.txDepth, -1)
	both("r", "rx-depth", &o.rxDepth, -1)
	both("Q", "cq-mod", &o.cqMod, -1)
	both("I", "inline_size", &o.inline, 0)
	both("o", "outs", &o.outReads, 0)
	both("m", "mtu", &o.mtu, 0)
	both("u", "qp-timeout", &o.timeout, defQPTimeout)
	bothBool("R", "rdma_cm", &o.cm)
	bothBool("e", "events", &o.events)
	both("p", "port", &o.port, defPort)
	fs.BoolVar(&o.gbits, "report_gbits", false, "")
	var cpuFreq bool
	bothBool("F", "CPU-freq", &cpuFreq)

	var err error
	if o.server, err = cmdline.ParseHost(fs, args); err != nil {
		return o, err
	}
	return o, o.finish()
}

// finish checks the options and applies perftest's defaults and
// dependencies (perftest_parameters.c init_perftest_params and
// force_dependecies).
func (o *options) finish() error {
	switch {
	case o.port <= 0 || o.port > 65535:
		return cmdline.Usagef("-p %d: not a TCP port", o.port)
	case o.ibPort < 1 || o.ibPort > 255:
		return cmdline.Usagef("-i %d: device ports are numbered from 1", o.ibPort)
	case o.gidIdx < -1 || o.gidIdx > 255:
		return cmdline.Usagef("-x %d: not a GID index", o.gidIdx)
	case o.duration < 0:
		return cmdline.Usagef("-D %d: a duration is a positive number of seconds", o.duration)
	case o.inline < 0:
		return cmdline.Usagef("-I %d: negative inline size", o.inline)
	case o.outReads < 0 || o.outReads > 255:
		return cmdline.Usagef("-o %d: outstanding reads are 1..255", o.outReads)
	case o.timeout < 0 || o.timeout > 31:
		return cmdline.Usagef("-u %d: the timeout exponent is 0..31", o.timeout)
	case o.qps < 1 || o.qps > maxQPs:
		return cmdline.Usagef("-q %d: 1 to %d QPs", o.qps, maxQPs)
	case o.qps > 1 && (o.verb == read || o.verb == atomicOp) && o.lat:
		return cmdline.Usagef("-q %d: of the latency tests, send_lat and write_lat take several QPs (a round-robin ping-pong; perftest refuses -q in every latency test)", o.qps)
	case o.duplex && o.lat:
		return cmdline.Usagef("-b: bidirectional runs are for bandwidth tests")
	case o.duplex && o.duration > 0:
		return cmdline.Usagef("-b with -D: bidirectional runs count iterations only")
	case o.qps > 1 && o.cm:
		return cmdline.Usagef("-q %d with -R: several QPs are supported without -R only", o.qps)
	case o.mtu != 0 && (o.mtu < 256 || o.mtu > 4096 || o.mtu&(o.mtu-1) != 0):
		return cmdline.Usagef("-m %d: the path MTU is 256, 512, 1024, 2048 or 4096", o.mtu)
	}
	if o.events && o.verb == write {
		// perftest: "Events feature not available on WRITE verb".
		return cmdline.Usagef("-e: events are not available with WRITE tests (write_lat polls memory; perftest refuses too)")
	}
	if o.duration > 0 {
		if o.all {
			return cmdline.Usagef("-D and -a: duration mode runs one size")
		}
		if o.events {
			return cmdline.Usagef("-D and -e: duration mode does not work with events (as in perftest)")
		}
		if o.iters != -1 {
			return cmdline.Usagef("-D and -n: give a duration or a number of iterations")
		}
		if o.margin == -1 {
			o.margin = o.duration / 4 // perftest: margin = duration / 4 when not given
		}
		if o.duration <= 2*o.margin {
			return cmdline.Usagef("-D %d -f %d: the duration must be more than twice the margin", o.duration, o.margin)
		}
	} else if o.margin != -1 {
		return cmdline.Usagef("-f is for duration mode (-D)")
	}
	switch {
	case o.verb == atomicOp:
		if o.size != -1 && o.size != defSizeAtomic {
			return cmdline.Usagef("-s %d: atomics are 8 bytes", o.size)
		}
		o.size = defSizeAtomic
	case o.size == -1 && o.lat:
		o.size = defSizeLat
	case o.size == -1:
		o.size = defSizeBW
	}
	if o.all {
		o.size = maxSize // the largest size sets the buffers
	}
	if o.size < 1 || o.size > 1<<30 {
		return cmdline.Usagef("-s %d: 1 byte to 1 GiB", o.size)
	}
	if o.iters == -1 {
		o.iters = defIters
		if o.test == "write_bw" {
			o.iters = defItersWB
		}
	}
	if o.duration == 0 && o.iters < 5 {
		return cmdline.Usagef("-n %d: at least 5 iterations", o.iters)
	}
	if o.txDepth == -1 {
		o.txDepth = defTxBW
		if o.lat {
			o.txDepth = defTxLat
		}
	}
	if o.txDepth < 1 {
		return cmdline.Usagef("-t %d: at least 1", o.txDepth)
	}
	if o.duration == 0 && o.txDepth > o.iters {
		o.txDepth = o.iters
	}
	if o.rxDepth == -1 {
		o.rxDepth = 1
		if o.verb == send {
			o.rxDepth = defRxSend
		}
	}
	if o.rxDepth < 1 {
		return cmdline.Usagef("-r %d: at least 1", o.rxDepth)
	}
	if o.duration == 0 && o.verb == send && o.rxDepth > o.iters {
		o.rxDepth = o.iters
	}
	if o.verb == send && o.lat {
		// send_lat -q: one exchange is in flight at a time, round-robin,
		// so each QP receives its share of the exchanges, or with -D (a
		// receive is posted again as each completes) its share of the
		// receive depth. The CQ holds every QP's receives, so without
		// this -q 64 -D would ask for more than rxe's 32767 entries.
		share := (o.iters + o.qps - 1) / o.qps
		if o.duration > 0 {
			share = max(2, (o.rxDepth+o.qps-1)/o.qps)
		}
		o.rxDepth = min(o.rxDepth, share)
	}
	if o.verb == send && o.rxDepth%2 == 1 && !o.all {
		o.rxDepth++ // perftest: "WA for a bug when rx_depth is odd in SEND"
	}
	explicitCQMod := o.cqMod != -1
	if !explicitCQMod {
		o.cqMod = defCQMod
	}
	if o.cqMod < 1 {
		return cmdline.Usagef("-Q %d: at least 1", o.cqMod)
	}
	if o.size > cqModSizeLimit && !o.all && !o.events && !explicitCQMod {
		o.cqMod = 1
	}
	if o.cqMod > o.txDepth {
		o.cqMod = o.txDepth
	}
	if o.verb == read || o.verb == atomicOp {
		o.inline = 0
	}
	return nil
}
