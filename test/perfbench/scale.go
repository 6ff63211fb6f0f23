package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Scaling: how the cost grows with the number of QPs. write_bw and send_bw
// on rxe0 over lo with 1, 8 and 64 QPs (-q), ours against perftest's in the
// same guest, interleaved as in run. Every line moves the same number of
// messages in all (scaleMessages, split evenly over the QPs: perftest's -n
// counts per QP), so that a line differs from the one-QP line only in how
// many QPs the messages are spread over. Then the latency with as many
// connections open (latManyCells), against a C program of our own.

// scaleQPs are the QP counts of the scaling table.
var scaleQPs = []int{1, 8, 64}

// scaleMessages is each line's total: 6400 messages of 64 B take about a
// second under TCG, and 64 QPs of 100 each fit the lab guest (2 GiB) for
// perftest and for us. Every QP's share is a multiple of perftest's CQ
// moderation (100): perftest counts a signaled completion as -Q sends
// (run_iter_bw: totccnt += cq_mod), so with a share that is not a multiple
// it stops counting before the last sends complete and reports more than
// was measured, the more so the more QPs.
const scaleMessages = 6400

func scaleCells() []cell {
	var cells []cell
	for _, t := range []string{"write_bw", "send_bw"} {
		for _, q := range scaleQPs {
			cells = append(cells, cell{test: t, size: 64, qps: q, n: scaleMessages / q})
		}
	}
	return cells
}

// latManyExchanges is each latency line's number of exchanges (-n, in
// all, shared out round-robin): as many as the 64 B latency cells of run,
// so that p99.9 is not the single worst sample.
const latManyExchanges = 2000

// latManyCells are the latency lines: send_lat's and write_lat's
// round-robin ping-pong over 1, 8 and 64 QPs, ours (rdma-perf -q, ours
// alone: perftest refuses -q in latency tests) against lat_many, our C
// program doing the same with libibverbs (test/perfbench/c/lat_many.c,
// -w for write_lat).
func latManyCells(latMany string) []cell {
	var cells []cell
	for _, t := range []string{"send_lat", "write_lat"} {
		for _, q := range scaleQPs {
			cells = append(cells, cell{test: t, size: 64, qps: q, n: latManyExchanges, cprog: latMany})
		}
	}
	return cells
}

// scaleRow is one line's runs.
type scaleRow struct {
	c     cell
	cs, g []result
	errs  []string
}

func scaleCmd(args []string) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	bin := fs.String("rdma-perf", "", "path of the rdma-perf binary")
	latMany := fs.String("lat-many", "", "path of lat_many, built from test/perfbench/c/lat_many.c")
	out := fs.String("out", "", "Markdown section to write")
	rounds := fs.Int("rounds", 5, "C/Go pairs per line (the table has their medians)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *latMany == "" || *out == "" {
		return fmt.Errorf("-rdma-perf, -lat-many and -out are required")
	}
	lo := os.Getenv("GOVERBS_LAB_LO_DEV")
	if lo == "" {
		return fmt.Errorf("run inside the lab (GOVERBS_LAB_LO_DEV is not set)")
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	start := time.Now()
	port := 21000
	run := func(cells []cell) []scaleRow {
		var rows []scaleRow
		for _, c := range cells {
			r := scaleRow{c: c}
			for i := 0; i < *rounds; i++ {
				for _, ours := range []bool{false, true} {
					port++
					res, err := runPair(c, ours, *bin, lo, "", "", port)
					if err != nil {
						r.errs = append(r.errs, cName(c, ours)+": "+err.Error())
						fmt.Fprintf(os.Stderr, "%s -q %d %s: %v\n", c.test, c.qps, cName(c, ours), err)
						continue
					}
					if ours {
						r.g = append(r.g, res)
					} else {
						r.cs = append(r.cs, res)
					}
				}
			}
			rows = append(rows, r)
			if c.lat() {
				fmt.Fprintf(os.Stderr, "%s -q %d: C %.2f, Go %.2f µs\n", c.test, c.qps, pick(r.cs, typicalOf), pick(r.g, typicalOf))
			} else {
				fmt.Fprintf(os.Stderr, "%s -q %d: C %.2f, Go %.2f MB/s\n", c.test, c.qps, pick(r.cs, bwOf), pick(r.g, bwOf))
			}
		}
		return rows
	}
	bw := run(scaleCells())
	lat := run(latManyCells(*latMany))

	var b bytes.Buffer
	fmt.Fprintf(&b, "Kernel %s in one lab guest (QEMU TCG, 2 vCPUs), %s; %d interleaved C/Go rounds per line, took %s.\n\n",
		strings.TrimSpace(string(kernel)), time.Now().UTC().Format("2006-01-02 15:04 MST"), *rounds, time.Since(start).Round(time.Second))
	fmt.Fprintf(&b, "Settings, identical for both: rxe0 on lo (-x 1), 64 B messages, %d in all per line (-n %d/%d/%d per QP with -q %d/%d/%d), the tools' other defaults (TX depth 128 per QP, capped at -n, one signaled send in 100 per QP, inline 0); -F; server on CPU 0, client on CPU 1. Figures are the client's average MB/s, each the median of the rounds; \"vs 1 QP\" is the line's figure over the same program's one-QP figure.\n\n",
		scaleMessages, scaleMessages/scaleQPs[0], scaleMessages/scaleQPs[1], scaleMessages/scaleQPs[2], scaleQPs[0], scaleQPs[1], scaleQPs[2])
	writeScaleBW(&b, bw)
	fmt.Fprintf(&b, "\nLatency with many connections open: send_lat and write_lat at 64 B, %d exchanges per line, round-robin over the QPs (exchange k over QP k mod -q, one message in flight), rdma-perf -q against lat_many (test/perfbench/c/lat_many.c, libibverbs; -w for write_lat); both with send queue depth 1, every send signaled, inline 0, one CQ; send_lat posts each QP's share of the exchanges as receives (at most 512), write_lat posts none and spins on the last byte of each QP's receive half; same pinning. Figures are the client's typical (median) and p99 RTT/2 in µs, each the median of the rounds; ours/C at or below 1.00 is as fast, and \"vs 1 QP\" is the line's typical over the same program's one-QP typical of the same test.\n\n", latManyExchanges)
	writeScaleLat(&b, lat)
	var failed []string
	for _, r := range append(bw, lat...) {
		for _, e := range r.errs {
			failed = append(failed, fmt.Sprintf("%s -q %d: %s", r.c.test, r.c.qps, e))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nRuns that failed (left out of the medians):\n\n")
		for _, f := range failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return os.WriteFile(*out, b.Bytes(), 0o644)
}

// cName names a line's C or Go side.
func cName(c cell, ours bool) string {
	switch {
	case ours:
		return "rdma-perf"
	case c.cprog != "":
		return "C " + filepath.Base(c.cprog)
	}
	return "C perftest"
}

// writeScaleBW writes the bandwidth table: the rates, and each program's
// over its own one-QP rate of the same test.
func writeScaleBW(b *bytes.Buffer, rows []scaleRow) {
	fmt.Fprintln(b, "| test | QPs | C perftest | rdma-perf | ours/C | C vs 1 QP | ours vs 1 QP |")
	fmt.Fprintln(b, "|---|---:|---:|---:|---:|---:|---:|")
	var c1, g1 float64
	for _, r := range rows {
		cb, gb := pick(r.cs, bwOf), pick(r.g, bwOf)
		if r.c.qps == 1 {
			c1, g1 = cb, gb
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s |\n", r.c.test, r.c.qps, num(cb), num(gb), ratio(gb, cb), ratio(cb, c1), ratio(gb, g1))
	}
}

// writeScaleLat writes the latency table: typical and p99 of both, and
// how each program's typical grows over its one-QP typical.
func writeScaleLat(b *bytes.Buffer, rows []scaleRow) {
	fmt.Fprintln(b, "| test | QPs | C typical | ours typical | ours/C | C vs 1 QP | ours vs 1 QP | C p99 | ours p99 | p99 ours/C |")
	fmt.Fprintln(b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	var c1, g1 float64
	for _, r := range rows {
		ct, gt := pick(r.cs, typicalOf), pick(r.g, typicalOf)
		cp, gp := pick(r.cs, p99Of), pick(r.g, p99Of)
		if r.c.qps == 1 {
			c1, g1 = ct, gt
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.c.test, r.c.qps, num(ct), num(gt), ratio(gt, ct), ratio(ct, c1), ratio(gt, g1), num(cp), num(gp), ratio(gp, cp))
	}
}

func bwOf(r result) float64      { return r.bw }
func typicalOf(r result) float64 { return r.typical }
func p99Of(r result) float64     { return r.p99 }
