package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The mlx5 table has the rows of the rxe one (rows): the posts through
// libmlx5's mlx5_post_send and mlx5_post_recv, the polls through
// mlx5_poll_cq_v1 (test/mlx5diff/harness.c, "bench" in its sq, rq and cq
// cases), and through an mlx5 QP and CQ of uverbs (BenchmarkNativeMLX5),
// on queues in plain memory. The harness is written against rdma-core
// v44.0's libmlx5 structures, so only that tag is built.
const mlx5Tag = "v44.0"

// runMLX5 builds the mlx5 harness from the rdma-core checkout src, has
// BenchmarkNativeMLX5 write the cases with its queue shapes, and runs
// interleaved rounds of both; it returns the table.
func runMLX5(src, work, goTest string, rounds, ms int) (string, error) {
	start := time.Now()
	bin := filepath.Join(work, "mlx5-"+mlx5Tag, "harness")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	build := exec.Command("test/mlx5diff/build.sh", bin)
	// gcc, as the table's header says and as the rxe harness is built.
	build.Env = append(os.Environ(), "RDMA_CORE_SRC="+src, "MLX5DIFF_OPT=-O2", "CC=gcc")
	if o, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the mlx5 harness: %v\n%s", err, o)
	}
	casesFile := filepath.Join(work, "mlx5-"+mlx5Tag, "cases")
	gen := exec.Command(goTest, "-test.run", "^$", "-test.bench", "^BenchmarkNativeMLX5$", "-test.benchtime", "1x")
	gen.Env = append(os.Environ(), "GOVERBS_MLX5_CASES="+casesFile, "GOVERBS_MLX5_MS="+strconv.Itoa(ms))
	if o, err := gen.CombinedOutput(); err != nil {
		return "", fmt.Errorf("BenchmarkNativeMLX5 writing the cases: %v\n%s", err, o)
	}
	cases, err := os.ReadFile(casesFile)
	if err != nil {
		return "", err
	}
	c := map[string][]float64{}
	g := map[string][]float64{}
	for r := 1; r <= rounds; r++ {
		var out, stderr bytes.Buffer
		h := exec.Command(bin)
		h.Stdin, h.Stdout, h.Stderr = bytes.NewReader(cases), &out, &stderr
		if err := h.Run(); err != nil {
			return "", fmt.Errorf("mlx5 harness: %v: %s", err, stderr.Bytes())
		}
		res, err := parseMLX5Harness(out.Bytes())
		if err != nil {
			return "", fmt.Errorf("mlx5 harness: %v", err)
		}
		for k, v := range res {
			c[k] = append(c[k], v)
		}
		var buf bytes.Buffer
		cmd := exec.Command(goTest, "-test.run", "^$", "-test.bench", "^BenchmarkNativeMLX5$", "-test.benchtime", fmt.Sprintf("%dms", ms))
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("BenchmarkNativeMLX5: %v\n%s", err, buf.Bytes())
		}
		gr, err := parseGoBenchOf(buf.Bytes(), "BenchmarkNativeMLX5/")
		if err != nil {
			return "", err
		}
		if err := checkMLX5Rows(gr); err != nil {
			return "", fmt.Errorf("BenchmarkNativeMLX5: %v", err)
		}
		for k, v := range gr {
			g[k] = append(g[k], v)
		}
		fmt.Printf("mlx5 round %d of %d done\n", r, rounds)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, %d vCPUs; %s, %s; %d interleaved rounds (libmlx5, then ours), median of each; took %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cpuModel(), runtime.NumCPU(), gccVersion(), runtime.Version(), rounds, time.Since(start).Round(time.Second))
	fmt.Fprintf(&b, "| row | rdma-core %s libmlx5 | goverbs | ours/C |\n|---|---:|---:|---:|\n", mlx5Tag)
	for _, r := range rows {
		cm, gm := median(c[r.name]), median(g[r.name])
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.2f |\n", r.what, cm, gm, gm/cm)
	}
	b.WriteString("\nns per work request, each post retired at once as a poll of its completions would (per completion for the polls, per call for the empty poll); ours/C at or below 1.00 is as fast.\n")
	return b.String(), nil
}

// parseMLX5Harness reads the harness's "case NAME" and "bench NS" lines.
func parseMLX5Harness(o []byte) (map[string]float64, error) {
	res := map[string]float64{}
	name := ""
	sc := bufio.NewScanner(bytes.NewReader(o))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "case":
			name = f[1]
		case len(f) == 2 && f[0] == "bench" && name != "":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return nil, fmt.Errorf("line %q: %v", sc.Text(), err)
			}
			res[name] = v
		}
	}
	return res, checkMLX5Rows(res)
}

func checkMLX5Rows(res map[string]float64) error {
	for _, r := range rows {
		if _, ok := res[r.name]; !ok {
			return fmt.Errorf("no figure for mlx5 row %s", r.name)
		}
	}
	return nil
}
