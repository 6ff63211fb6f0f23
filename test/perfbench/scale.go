package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Scaling: how the cost grows with the number of QPs. write_bw and send_bw
// on rxe0 over lo with 1, 8 and 64 QPs (-q), ours against perftest's in the
// same guest, interleaved as in run. Every line moves the same number of
// messages in all (scaleMessages, split evenly over the QPs: perftest's -n
// counts per QP), so that a line differs from the one-QP line only in how
// many QPs the messages are spread over.

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

func scaleCmd(args []string) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	bin := fs.String("rdma-perf", "", "path of the rdma-perf binary")
	out := fs.String("out", "", "Markdown section to write")
	rounds := fs.Int("rounds", 5, "C/Go pairs per line (the table has their medians)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bin == "" || *out == "" {
		return fmt.Errorf("-rdma-perf and -out are required")
	}
	lo := os.Getenv("GOVERBS_LAB_LO_DEV")
	if lo == "" {
		return fmt.Errorf("run inside the lab (GOVERBS_LAB_LO_DEV is not set)")
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	start := time.Now()
	port := 21000
	type row struct {
		c     cell
		cs, g []result
		errs  []string
	}
	var rows []row
	for _, c := range scaleCells() {
		r := row{c: c}
		for i := 0; i < *rounds; i++ {
			for _, ours := range []bool{false, true} {
				port++
				res, err := runPair(c, ours, *bin, lo, "", "", port)
				who := "C perftest"
				if ours {
					who = "rdma-perf"
				}
				if err != nil {
					r.errs = append(r.errs, who+": "+err.Error())
					fmt.Fprintf(os.Stderr, "%s -q %d %s: %v\n", c.test, c.qps, who, err)
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
		fmt.Fprintf(os.Stderr, "%s -q %d: C %.2f, Go %.2f MB/s\n", c.test, c.qps, pick(r.cs, bwOf), pick(r.g, bwOf))
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "Kernel %s in one lab guest (QEMU TCG, 2 vCPUs), %s; %d interleaved C/Go rounds per line, took %s.\n\n",
		strings.TrimSpace(string(kernel)), time.Now().UTC().Format("2006-01-02 15:04 MST"), *rounds, time.Since(start).Round(time.Second))
	fmt.Fprintf(&b, "Settings, identical for both: rxe0 on lo (-x 1), 64 B messages, %d in all per line (-n %d/%d/%d per QP with -q %d/%d/%d), the tools' other defaults (TX depth 128 per QP, capped at -n, one signaled send in 100 per QP, inline 0); -F; server on CPU 0, client on CPU 1. Figures are the client's average MB/s, each the median of the rounds; \"vs 1 QP\" is the line's figure over the same program's one-QP figure.\n\n",
		scaleMessages, scaleMessages/scaleQPs[0], scaleMessages/scaleQPs[1], scaleMessages/scaleQPs[2], scaleQPs[0], scaleQPs[1], scaleQPs[2])
	fmt.Fprintln(&b, "| test | QPs | C perftest | rdma-perf | ours/C | C vs 1 QP | ours vs 1 QP |")
	fmt.Fprintln(&b, "|---|---:|---:|---:|---:|---:|---:|")
	var c1, g1 float64
	for _, r := range rows {
		cb, gb := pick(r.cs, bwOf), pick(r.g, bwOf)
		if r.c.qps == 1 {
			c1, g1 = cb, gb
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", r.c.test, r.c.qps, num(cb), num(gb), ratio(gb, cb), ratio(cb, c1), ratio(gb, g1))
	}
	var failed []string
	for _, r := range rows {
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

func bwOf(r result) float64 { return r.bw }
