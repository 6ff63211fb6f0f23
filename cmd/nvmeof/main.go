package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/version"
	"github.com/goverbs/rdma/nvmeof"
)

const usageText = `usage: nvmeof COMMAND -a ADDRESS [-s PORT] [options]

commands:
  discover                    list what the discovery controller offers
  id-ctrl -n NQN              identify the subsystem's controller
  list -n NQN                 list its active namespaces
  read -n NQN [-N NSID] -o FILE [-offset BYTES] [-length BYTES]
                              copy a namespace's bytes to FILE (- for stdout)
  write -n NQN [-N NSID] -i FILE [-offset BYTES]
                              copy FILE (whole blocks) into the namespace
  perf -n NQN [-N NSID] [-rw randread|read|randwrite|write] [-bs 4096]
       [-qd 32] [-t 10s] [-queues 1] [-span BYTES] [-json]
                              I/O for -t with -qd commands in flight: IOPS,
                              bandwidth and latency percentiles; -json
                              prints them as one JSON object, with the heap
                              allocations per I/O
  serve -n NQN (-file PATH | -mem BYTES) [-block 512] [-queues 4]
       [-queue-size 128]      be the target: serve one namespace at -a
                              until SIGINT or SIGTERM

options for all: -a address (required), -s port (4420),
  -hostnqn NQN, -queue-size N (commands in flight per I/O queue, 32)
`

type options struct {
	cmd       string
	addr      string
	port      int
	nqn       string
	nsid      int
	hostNQN   string
	in, out   string
	offset    int64
	length    int64
	rw        string
	bs        int
	qd        int
	dur       time.Duration
	queues    int
	queueSize int
	span      int64
	file      string
	mem       int64
	block     int
	json      bool
	set       map[string]bool // the flags given
}

func parse(args []string) (options, error) {
	var o options
	if len(args) == 0 {
		return o, cmdline.Usagef("no command")
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		return o, flag.ErrHelp
	}
	o.cmd = args[0]
	switch o.cmd {
	case "discover", "id-ctrl", "list", "read", "write", "perf", "serve":
	default:
		return o, cmdline.Usagef("unknown command %q", o.cmd)
	}
	fs := cmdline.NewFlagSet("nvmeof")
	fs.StringVar(&o.addr, "a", "", "")
	fs.IntVar(&o.port, "s", nvmeof.DefaultPort, "")
	fs.StringVar(&o.nqn, "n", "", "")
	fs.IntVar(&o.nsid, "N", 1, "")
	fs.StringVar(&o.hostNQN, "hostnqn", "", "")
	fs.StringVar(&o.in, "i", "", "")
	fs.StringVar(&o.out, "o", "", "")
	fs.Int64Var(&o.offset, "offset", 0, "")
	fs.Int64Var(&o.length, "length", -1, "")
	fs.StringVar(&o.rw, "rw", "randread", "")
	fs.IntVar(&o.bs, "bs", 4096, "")
	fs.IntVar(&o.qd, "qd", 32, "")
	fs.DurationVar(&o.dur, "t", 10*time.Second, "")
	fs.IntVar(&o.queues, "queues", 1, "")
	fs.IntVar(&o.queueSize, "queue-size", 32, "")
	fs.Int64Var(&o.span, "span", 0, "")
	fs.StringVar(&o.file, "file", "", "")
	fs.Int64Var(&o.mem, "mem", 0, "")
	fs.IntVar(&o.block, "block", 512, "")
	fs.BoolVar(&o.json, "json", false, "")
	rest, err := cmdline.Parse(fs, args[1:])
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	switch {
	case err != nil:
		return o, err
	case len(rest) > 0:
		return o, cmdline.Usagef("unexpected argument %q", rest[0])
	case o.addr == "":
		return o, cmdline.Usagef("-a: the target's address is required")
	case o.port < 1 || o.port > 65535:
		return o, cmdline.Usagef("-s %d: not a port", o.port)
	case o.cmd != "discover" && o.nqn == "":
		return o, cmdline.Usagef("-n: the subsystem's NQN is required (nvmeof discover lists them)")
	case o.nsid < 1:
		return o, cmdline.Usagef("-N %d: namespace IDs start at 1", o.nsid)
	case o.cmd == "read" && o.out == "":
		return o, cmdline.Usagef("read: -o FILE is required")
	case o.cmd == "write" && o.in == "":
		return o, cmdline.Usagef("write: -i FILE is required")
	case o.cmd == "serve" && (o.file == "") == (o.mem <= 0):
		return o, cmdline.Usagef("serve: give one of -file PATH and -mem BYTES")
	case o.qd < 1 || o.queues < 1 || o.queueSize < 1 || o.bs < 1 || o.dur <= 0:
		return o, cmdline.Usagef("-qd, -queues, -queue-size, -bs and -t must be positive")
	}
	switch o.rw {
	case "randread", "read", "randwrite", "write":
	default:
		return o, cmdline.Usagef("-rw %q: randread, read, randwrite or write", o.rw)
	}
	return o, nil
}

func main() {
	version.Handle("nvmeof")
	cmdline.Run(func(ctx context.Context) int {
		return cmdline.Status("nvmeof", usageText, run(ctx, os.Args[1:], os.Stdout))
	})
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	address := fmt.Sprintf("%s:%d", o.addr, o.port)
	if strings.Contains(o.addr, ":") {
		address = fmt.Sprintf("[%s]:%d", o.addr, o.port)
	}
	if o.cmd == "serve" {
		return serve(ctx, address, o, stdout)
	}
	cfg := &nvmeof.Config{HostNQN: o.hostNQN, IOQueues: o.queues, QueueDepth: o.queueSize}
	if o.cmd == "discover" {
		dl, err := nvmeof.Discover(ctx, address, cfg)
		if err != nil {
			return err
		}
		printDiscovery(stdout, dl)
		return nil
	}
	c, err := nvmeof.Connect(ctx, address, o.nqn, cfg)
	if err != nil {
		return err
	}
	err = command(ctx, c, o, stdout)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}

func command(ctx context.Context, c *nvmeof.Controller, o options, stdout io.Writer) error {
	switch o.cmd {
	case "id-ctrl":
		printController(stdout, c.Info())
		return nil
	case "list":
		ids, err := c.ActiveNamespaces(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%-6s %-20s %-10s %s\n", "NSID", "Size", "Format", "Blocks")
		for _, id := range ids {
			ni, err := c.IdentifyNamespace(ctx, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%-6d %-20s %-10s %d\n", id, humanBytes(int64(ni.Size)*int64(ni.BlockSize)),
				fmt.Sprintf("%d B + %d B", ni.BlockSize, ni.Metadata), ni.Size)
		}
		return nil
	}
	ns, err := c.Namespace(ctx, uint32(o.nsid))
	if err != nil {
		return err
	}
	switch o.cmd {
	case "read":
		return readCmd(ctx, ns, o, stdout)
	case "write":
		return writeCmd(ctx, ns, o)
	}
	r, err := perf(ctx, ns, o)
	if err != nil {
		return err
	}
	if o.json {
		b, err := json.Marshal(r.report())
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintln(stdout, r)
	return nil
}

func readCmd(ctx context.Context, ns *nvmeof.Namespace, o options, stdout io.Writer) error {
	length := o.length
	if length < 0 {
		length = ns.Size() - o.offset
	}
	var w io.Writer = stdout
	if o.out != "-" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	buf := make([]byte, 1<<20)
	for done := int64(0); done < length; {
		n := min(int64(len(buf)), length-done)
		if _, err := ns.ReadAtContext(ctx, buf[:n], o.offset+done); err != nil {
			return err
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		done += n
	}
	if f, ok := w.(*os.File); ok && f != os.Stdout {
		return f.Close()
	}
	return nil
}

func writeCmd(ctx context.Context, ns *nvmeof.Namespace, o options) error {
	f, err := os.Open(o.in)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	off := o.offset
	for {
		n, rerr := io.ReadFull(f, buf)
		if n > 0 {
			if n%ns.BlockSize() != 0 {
				return fmt.Errorf("%s: %d bytes is not a whole number of %d-byte blocks: pad the file", o.in, off-o.offset+int64(n), ns.BlockSize())
			}
			if _, err := ns.WriteAtContext(ctx, buf[:n], off); err != nil {
				return err
			}
			off += int64(n)
		}
		if rerr == io.EOF || errors.Is(rerr, io.ErrUnexpectedEOF) {
			return ns.Flush(ctx)
		}
		if rerr != nil {
			return rerr
		}
	}
}

// perfResult is one perf run: completed I/Os and their latencies.
type perfResult struct {
	rw         string
	bs, qd     int
	dur        time.Duration
	ios        int
	lat        []time.Duration // sorted
	errCount   int
	allocs     uint64 // heap objects allocated during the run
	allocBytes uint64 // and their bytes
}

// perfReport is perf's result as -json prints it: latencies in µs.
type perfReport struct {
	RW      string  `json:"rw"`
	BS      int     `json:"bs"`
	QD      int     `json:"qd"`
	IOs     int     `json:"ios"`
	Seconds float64 `json:"seconds"`
	IOPS    float64 `json:"iops"`
	MiBps   float64 `json:"mib_per_s"`
	Lat     struct {
		Avg  float64 `json:"avg"`
		P50  float64 `json:"p50"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p99.9"`
		Max  float64 `json:"max"`
	} `json:"lat_us"`
	// Heap allocations per I/O of the whole process while the I/O ran
	// (runtime.MemStats Mallocs and TotalAlloc), as -benchmem counts them.
	AllocsPerIO     float64 `json:"allocs_per_io"`
	AllocBytesPerIO float64 `json:"alloc_bytes_per_io"`
}

func (r perfResult) report() perfReport {
	secs := r.dur.Seconds()
	pct := func(p float64) float64 {
		if len(r.lat) == 0 {
			return 0
		}
		return float64(r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))].Nanoseconds()) / 1e3
	}
	var sum time.Duration
	for _, l := range r.lat {
		sum += l
	}
	p := perfReport{RW: r.rw, BS: r.bs, QD: r.qd, IOs: r.ios, Seconds: secs}
	if secs > 0 {
		p.IOPS = float64(r.ios) / secs
		p.MiBps = float64(r.ios) * float64(r.bs) / secs / (1 << 20)
	}
	if len(r.lat) > 0 {
		p.Lat.Avg = float64(sum.Nanoseconds()) / float64(len(r.lat)) / 1e3
	}
	p.Lat.P50, p.Lat.P99, p.Lat.P999, p.Lat.Max = pct(0.5), pct(0.99), pct(0.999), pct(1)
	if r.ios > 0 {
		p.AllocsPerIO = float64(r.allocs) / float64(r.ios)
		p.AllocBytesPerIO = float64(r.allocBytes) / float64(r.ios)
	}
	return p
}

func (r perfResult) String() string {
	p := r.report()
	return fmt.Sprintf("%s bs=%d qd=%d: %d IOs in %.2fs: %.0f IOPS, %.1f MiB/s; latency us: avg %.1f p50 %.1f p99 %.1f p99.9 %.1f max %.1f",
		p.RW, p.BS, p.QD, p.IOs, p.Seconds, p.IOPS, p.MiBps, p.Lat.Avg, p.Lat.P50, p.Lat.P99, p.Lat.P999, p.Lat.Max)
}

// perf keeps qd commands in flight, one goroutine each, for o.dur. Each
// goroutine's buffers are made before the clock and the allocation count
// start.
func perf(ctx context.Context, ns *nvmeof.Namespace, o options) (perfResult, error) {
	span := ns.Size()
	if o.span > 0 {
		span = min(span, o.span)
	}
	if o.bs%ns.BlockSize() != 0 || int64(o.bs) > span {
		return perfResult{}, fmt.Errorf("-bs %d: a whole number of %d-byte blocks within the namespace's %d bytes", o.bs, ns.BlockSize(), span)
	}
	slots := span / int64(o.bs)
	write := strings.HasSuffix(o.rw, "write")
	random := strings.HasPrefix(o.rw, "rand")
	type worker struct {
		buf []byte
		lat []time.Duration
		rng *rand.Rand
	}
	seed := uint64(time.Now().UnixNano())
	workers := make([]worker, o.qd)
	for w := range workers {
		workers[w] = worker{make([]byte, o.bs), make([]time.Duration, 0, 1<<16), rand.New(rand.NewPCG(uint64(w), seed))}
	}
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs int
		werr error
		wg   sync.WaitGroup
		ms   [2]runtime.MemStats
	)
	runtime.ReadMemStats(&ms[0])
	ctx, cancel := context.WithTimeout(ctx, o.dur)
	defer cancel()
	start := time.Now()
	for w := 0; w < o.qd; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf, lat, rng := workers[w].buf, workers[w].lat, workers[w].rng
			next := int64(w)
			for ctx.Err() == nil {
				slot := next % slots
				if random {
					slot = rng.Int64N(slots)
				} else {
					next += int64(o.qd)
				}
				t0 := time.Now()
				var err error
				if write {
					_, err = ns.WriteAtContext(ctx, buf, slot*int64(o.bs))
				} else {
					_, err = ns.ReadAtContext(ctx, buf, slot*int64(o.bs))
				}
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						errs++
						werr = err
						mu.Unlock()
						return
					}
					break
				}
				lat = append(lat, time.Since(t0))
			}
			workers[w].lat = lat
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms[1])
	if werr != nil {
		return perfResult{}, werr
	}
	for _, w := range workers {
		all = append(all, w.lat...)
	}
	slices.Sort(all)
	return perfResult{rw: o.rw, bs: o.bs, qd: o.qd, dur: elapsed, ios: len(all), lat: all, errCount: errs,
		allocs: ms[1].Mallocs - ms[0].Mallocs, allocBytes: ms[1].TotalAlloc - ms[0].TotalAlloc}, nil
}

func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + " " + units[i]
}

// serve is the target: one subsystem with one namespace, until ctx ends.
func serve(ctx context.Context, address string, o options, stdout io.Writer) error {
	var (
		ns  *nvmeof.TargetNamespace
		err error
	)
	if o.file != "" {
		ns, err = nvmeof.FileNamespace(o.file, o.block)
	} else {
		ns, err = nvmeof.MemoryNamespace(o.mem, o.block)
	}
	if err != nil {
		return err
	}
	defer ns.Close()
	sub := &nvmeof.Subsystem{NQN: o.nqn, Namespaces: []*nvmeof.TargetNamespace{ns}}
	cfg := &nvmeof.TargetConfig{} // the target's defaults, unless given
	if o.set["queues"] {
		cfg.MaxIOQueues = o.queues
	}
	if o.set["queue-size"] {
		cfg.QueueDepth = o.queueSize
	}
	t, err := nvmeof.Listen(ctx, address, cfg, sub)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "serving %s (%s, %d blocks of %d bytes) at %v\n", o.nqn, humanBytes(ns.Size()), ns.Size()/int64(ns.BlockSize()), ns.BlockSize(), t.Addr())
	<-ctx.Done()
	return t.Close()
}
