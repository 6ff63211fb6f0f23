package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// rstreamCmd compares our cmd/rstream (package rsocket) with rdma-core's
// rstream in the lab, in custom mode with blocking calls (-T b): for each
// size a bandwidth run (-C n -I 1) and a round-trip run (-C 1 -I n), each
// between a server and a client of the same program on the first veth end's
// address, over rsocket and over kernel TCP (-T s). In each round every
// line runs its four kinds in turn, C before Go; the table has the medians
// of the client's figures.
func rstreamCmd(args []string) error {
	var f struct {
		bin, cbin, out, only string
		rounds               int
		scale                float64
		budget               time.Duration
	}
	fs := flag.NewFlagSet("rstream", flag.ContinueOnError)
	fs.StringVar(&f.bin, "rstream", "", "path of our rstream binary (cmd/rstream)")
	fs.StringVar(&f.cbin, "c-rstream", "rstream", "rdma-core's rstream")
	fs.StringVar(&f.out, "out", "", "Markdown section to write")
	fs.IntVar(&f.rounds, "rounds", 5, "rounds per line (the table has their medians)")
	fs.Float64Var(&f.scale, "scale", 1, "multiply every count by this (0.1 for a quick check)")
	fs.StringVar(&f.only, "only", "", "run only lines whose \"size test\" (e.g. \"4096 lat\") contains this")
	fs.DurationVar(&f.budget, "budget", 16*time.Minute, "start no round that would end after this (a loaded host is slow)")
	if err := fs.Parse(args); err != nil || f.bin == "" || f.out == "" || f.rounds < 1 || f.scale <= 0 {
		return fmt.Errorf("usage: perfbench rstream -rstream PATH -out FILE [-c-rstream PATH] [-rounds N] [-scale X] [-only S] [-budget D] (%v)", err)
	}
	_, addr, err := firstVethEnd()
	if err != nil {
		return err
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	start := time.Now()
	var cells []rstreamCell
	for _, c := range rstreamCells {
		c.scale = f.scale
		if f.only == "" || strings.Contains(fmt.Sprintf("%d %s", c.size, c.test()), f.only) {
			cells = append(cells, c)
		}
	}
	// Rounds are the outer loop, so that each line's runs spread over the
	// whole bench and a round cut by the budget leaves every line with the
	// same number of runs.
	got := make([][len(rstreamKinds)][]float64, len(cells))
	var failed []string
	port := 21000
	rounds := 0
	for rounds < f.rounds {
		began := time.Now()
		if rounds > 0 && time.Since(start)+time.Since(start)/time.Duration(rounds) > f.budget {
			fmt.Fprintf(os.Stderr, "stopping after %d rounds: the next would end after -budget %v\n", rounds, f.budget)
			break
		}
		for i, c := range cells {
			for k, kind := range rstreamKinds {
				port++
				bin := f.cbin
				if kind.ours {
					bin = f.bin
				}
				v, err := rstreamPair(bin, kind.tcp, addr, port, c)
				if err != nil {
					failed = append(failed, fmt.Sprintf("%s %s, %s: %v", c.sizeName(), c.test(), kind.name, err))
					fmt.Fprintln(os.Stderr, failed[len(failed)-1])
					continue
				}
				got[i][k] = append(got[i][k], v)
			}
		}
		rounds++
		fmt.Fprintf(os.Stderr, "round %d took %v\n", rounds, time.Since(began).Round(time.Second))
	}
	var rows []string
	for i, c := range cells {
		l := rstreamLine(c, got[i][0], got[i][1], got[i][2], got[i][3])
		fmt.Fprintln(os.Stderr, l)
		rows = append(rows, l)
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "Kernel %s in one lab guest (QEMU TCG, 2 vCPUs), %s; %d rounds per line (C rsocket, Go rsocket, C TCP, Go TCP in turn), took %s.",
		strings.TrimSpace(string(kernel)), start.UTC().Format("2006-01-02 15:04 MST"), rounds, time.Since(start).Round(time.Second))
	if rounds < f.rounds {
		fmt.Fprintf(&b, " Stopped after %d of %d rounds by the time budget (%v).", rounds, f.rounds, f.budget)
	}
	if f.scale != 1 {
		fmt.Fprintf(&b, " Counts scaled by %g: a quick check, not a measurement.", f.scale)
	}
	fmt.Fprintf(&b, "\n\nSettings, identical for both programs: custom mode with blocking calls (`-S size -C count -I iters -T b`, TCP adds `-T s`), everything else at rstream's defaults (SO_SNDBUF and SO_RCVBUF 512 KiB, inline 64, TCP_NODELAY); the server `-b %s` on CPU 0, the client `-s %s` on CPU 1 (taskset). Counts per size, 64 B/4 KiB/64 KiB/1 MiB: bw `-C %s -I 1`, lat `-C 1 -I %s`. Figures are the client's row; each is the median of the runs that exited 0 and printed a finite row.\n\n",
		addr, addr, rstreamCounts(f.scale, false), rstreamCounts(f.scale, true))
	fmt.Fprintln(&b, "| size | test | C rsocket | Go rsocket | Go/C | C TCP | Go TCP | rsocket/TCP (Go) |")
	fmt.Fprintln(&b, "|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, l := range rows {
		fmt.Fprintln(&b, l)
	}
	fmt.Fprintln(&b, "\nbw: Mb/s (10^6 bits), the transfer size over rstream's usec/xfer (its Gb/sec column, with more digits: both directions' bytes over the whole run, one direction at a time), where Go/C at or above 1.00 is as fast; lat: one round trip in µs (twice rstream's usec/xfer), where Go/C at or below 1.00 is as fast. rsocket/TCP (Go) is Go rsocket's figure over Go TCP's: above 1 for bw, below 1 for lat, rsocket is the faster. n/a: no run of that kind succeeded.")
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nRuns that failed (left out of the medians):\n\n")
		for _, f := range failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return os.WriteFile(f.out, b.Bytes(), 0o644)
}

// rstreamCell is one line of the table: a size, bandwidth or latency.
type rstreamCell struct {
	size  int
	lat   bool
	n     int     // -C for bandwidth, -I for latency
	scale float64 // -scale
}

// The counts keep a C rsocket run to a second or two in the lab (from
// trial runs: 27-38 µs per 64 B transfer one way, 130-150 µs at 4 KiB,
// 1.2-1.5 ms at 64 KiB, 17-20 ms at 1 MiB); TCP takes a fraction of that.
var rstreamCells = []rstreamCell{
	{size: 64, n: 20000}, {size: 64, lat: true, n: 8000},
	{size: 4096, n: 4000}, {size: 4096, lat: true, n: 3000},
	{size: 65536, n: 500}, {size: 65536, lat: true, n: 400},
	{size: 1 << 20, n: 40}, {size: 1 << 20, lat: true, n: 30},
}

func (c rstreamCell) test() string {
	if c.lat {
		return "lat"
	}
	return "bw"
}

func (c rstreamCell) count() int {
	scale := c.scale
	if scale == 0 {
		scale = 1
	}
	return max(1, int(float64(c.n)*scale))
}

// args are the command line of both sides but for -s/-b.
func (c rstreamCell) args(tcp bool, port int) []string {
	count, iters := c.count(), 1
	if c.lat {
		count, iters = 1, c.count()
	}
	a := []string{"-p", strconv.Itoa(port), "-S", strconv.Itoa(c.size), "-C", strconv.Itoa(count), "-I", strconv.Itoa(iters), "-T", "b"}
	if tcp {
		a = append(a, "-T", "s")
	}
	return a
}

func (c rstreamCell) sizeName() string {
	switch {
	case c.size >= 1<<20:
		return fmt.Sprintf("%d MiB", c.size>>20)
	case c.size >= 1<<10:
		return fmt.Sprintf("%d KiB", c.size>>10)
	}
	return fmt.Sprintf("%d B", c.size)
}

// rstreamCounts lists the counts of the bandwidth or latency lines.
func rstreamCounts(scale float64, lat bool) string {
	var s []string
	for _, c := range rstreamCells {
		if c.lat == lat {
			c.scale = scale
			s = append(s, strconv.Itoa(c.count()))
		}
	}
	return strings.Join(s, "/")
}

// The kinds of pair, in the order they run in a round and their figures
// are passed to rstreamLine.
var rstreamKinds = [...]struct {
	name      string
	ours, tcp bool
}{
	{"C rsocket", false, false},
	{"Go rsocket", true, false},
	{"C TCP", false, true},
	{"Go TCP", true, true},
}

func rstreamLine(c rstreamCell, crs, grs, ctcp, gtcp []float64) string {
	cr, gr, ct, gt := median(crs), median(grs), median(ctcp), median(gtcp)
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", c.sizeName(), c.test(),
		num(cr), num(gr), ratio(gr, cr), num(ct), num(gt), ratio(gr, gt))
}

// rstreamLimit ends a pair that hangs; the longest run takes a few seconds.
const rstreamLimit = 2 * time.Minute

// rstreamPair runs one server and one client of the same program and
// returns the client's figure: Mb/s for bandwidth, µs per round trip for
// latency. Both must exit 0.
func rstreamPair(bin string, tcp bool, addr string, port int, c rstreamCell) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rstreamLimit)
	defer cancel()
	args := c.args(tcp, port)
	command := func(cpu string, extra ...string) *exec.Cmd {
		x := exec.CommandContext(ctx, "taskset", append(append([]string{"-c", cpu, bin}, extra...), args...)...)
		x.WaitDelay = 5 * time.Second
		return x
	}
	srv := command("0", "-b", addr)
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return 0, err
	}
	ended := make(chan struct{})
	var srvErr error
	go func() { srvErr = srv.Wait(); close(ended) }()
	defer func() { cancel(); <-ended }()
	// The client does not retry a refused connection: wait for the
	// listener (a CM ID in LISTEN for rsocket, a TCP socket for -T s).
	if err := testutil.WaitListening(ctx, port, !tcp, ended); err != nil {
		return 0, fmt.Errorf("%v: %s", err, tail(srvOut.Bytes()))
	}
	cli := command("1", "-s", addr)
	var errOut bytes.Buffer
	cli.Stderr = &errOut
	out, err := cli.Output()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("did not finish within %v (%v)", rstreamLimit, err)
		}
		return 0, fmt.Errorf("client: %v: %s", err, tail(append(out, errOut.Bytes()...)))
	}
	select {
	case <-ended:
	case <-ctx.Done():
		return 0, fmt.Errorf("server did not finish within %v: %s", rstreamLimit, tail(srvOut.Bytes()))
	}
	if srvErr != nil {
		return 0, fmt.Errorf("server: %v: %s", srvErr, tail(srvOut.Bytes()))
	}
	row, err := parseRstream(out)
	if err != nil {
		return 0, err
	}
	return row.figure(c)
}

// rstreamRow is the numbers of rstream's custom row.
type rstreamRow struct {
	secs, gbps, usec float64 // time, Gb/sec, usec/xfer
}

// figure is what the table shows, from usec/xfer (Gb/sec has only two
// decimals, 0.01-0.03 at 64 B): Mb/s, one direction at a time, or one
// round trip (two transfers) in µs. A time of 0 means the clock said
// nothing useful.
func (r rstreamRow) figure(c rstreamCell) (float64, error) {
	if r.usec <= 0 {
		return 0, fmt.Errorf("custom row with %.2fs, %.2f Gb/sec, %.2f usec/xfer: no time to judge", r.secs, r.gbps, r.usec)
	}
	if c.lat {
		return 2 * r.usec, nil
	}
	return float64(c.size) * 8 / r.usec, nil
}

// parseRstream reads the row of a custom run: "custom SIZE XFERS ITERS
// TOTAL SECSs GB/SEC USEC/XFER". A row whose numbers are not finite (the
// C program prints inf when its clock reading fails) is an error.
func parseRstream(out []byte) (rstreamRow, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "custom" {
			continue
		}
		if len(f) != 8 || !strings.HasSuffix(f[5], "s") {
			return rstreamRow{}, fmt.Errorf("custom row %q", l)
		}
		secs := strings.TrimSuffix(f[5], "s")
		var v [3]float64
		for i, x := range []string{secs, f[6], f[7]} {
			n, err := strconv.ParseFloat(x, 64)
			if err != nil || math.IsInf(n, 0) || math.IsNaN(n) || n < 0 {
				return rstreamRow{}, fmt.Errorf("custom row %q", l)
			}
			v[i] = n
		}
		return rstreamRow{secs: v[0], gbps: v[1], usec: v[2]}, nil
	}
	return rstreamRow{}, fmt.Errorf("no custom row in the client's output: %s", tail(out))
}
