package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The rows, in the order of the table; the names are harness.c's and
// BenchmarkNative's sub-benchmarks'.
var rows = []struct{ name, what string }{
	{"write", "one signalled 64 B RDMA WRITE"},
	{"write_list32", "a list of 32 64 B WRITEs (the last signalled)"},
	{"send_inline", "one inline 64 B SEND"},
	{"ud_send", "one UD SEND with an AH"},
	{"recv", "one receive"},
	{"recv_list32", "a list of 32 receives"},
	{"poll_one", "poll one completion (room for 16)"},
	{"poll_16", "poll 16 completions"},
	{"poll_empty", "poll an empty CQ"},
}

// postRows are the rows whose WQE bytes are compared.
var postRows = []string{"write", "write_list32", "send_inline", "ud_send", "recv", "recv_list32"}

const defaultRepo = "https://github.com/linux-rdma/rdma-core"

func main() {
	var (
		tags    = flag.String("tags", "v44.0,v64.0", "rdma-core tags to build the provider from, comma-separated")
		cache   = flag.String("cache", "", "where rdma-core checkouts live, one directory per tag (default $GOVERBS_RDMA_CORE_CACHE or ~/.cache/goverbs-rdma-core)")
		work    = flag.String("work", "bin/nativebench", "build directory")
		rounds  = flag.Int("rounds", 5, "interleaved C and Go rounds")
		ms      = flag.Int("ms", 300, "milliseconds per row and run")
		goBin   = flag.String("go", "go", "the go command")
		out     = flag.String("out", "", "write the table between its markers in this Markdown file (BENCHMARKS.md)")
		profile = flag.String("profile", "", "also write a CPU profile of each Go row and its top functions to this directory")
	)
	flag.Parse()
	if err := run(strings.Split(*tags, ","), *cache, *work, *rounds, *ms, *goBin, *out, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "nativebench:", err)
		os.Exit(1)
	}
}

func run(tags []string, cache, work string, rounds, ms int, goBin, out, profile string) error {
	start := time.Now()
	if _, err := exec.LookPath("gcc"); err != nil {
		return errors.New("gcc is missing: make bench-native compiles rdma-core's rxe provider with gcc (apt-get install gcc)")
	}
	if cache == "" {
		cache = os.Getenv("GOVERBS_RDMA_CORE_CACHE")
	}
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("no home directory for the rdma-core cache: set GOVERBS_RDMA_CORE_CACHE: %v", err)
		}
		cache = filepath.Join(home, ".cache", "goverbs-rdma-core")
	}
	work, err := filepath.Abs(work)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	harnessSrc, err := filepath.Abs("test/nativebench/harness/harness.c")
	if err != nil {
		return err
	}
	if _, err := os.Stat(harnessSrc); err != nil {
		return fmt.Errorf("run from the module root: %v", err)
	}

	harness := map[string]string{}
	for _, tag := range tags {
		src, err := checkout(cache, tag)
		if err != nil {
			return err
		}
		bin, err := build(harnessSrc, src, filepath.Join(work, tag))
		if err != nil {
			return fmt.Errorf("rdma-core %s: %v", tag, err)
		}
		harness[tag] = bin
	}
	goTest := filepath.Join(work, "uverbs.test")
	if o, err := exec.Command(goBin, "test", "-c", "-o", goTest, "./uverbs").CombinedOutput(); err != nil {
		return fmt.Errorf("go test -c ./uverbs: %v\n%s", err, o)
	}

	// The WQE bytes first: a row whose bytes differ is not measured.
	goDump := filepath.Join(work, "dump-go")
	if err := dumpGo(goTest, goDump); err != nil {
		return err
	}
	for _, tag := range tags {
		dir := filepath.Join(work, "dump-"+tag)
		o, err := runHarness(harness[tag], "-dump", dir)
		if err != nil {
			return err
		}
		offs, err := parseOffsets(o)
		if err != nil {
			return fmt.Errorf("rdma-core %s harness: %v", tag, err)
		}
		for _, row := range postRows {
			c, err1 := os.ReadFile(filepath.Join(dir, row+".bin"))
			g, err2 := os.ReadFile(filepath.Join(goDump, row+".bin"))
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			if err := compareWQEs(row, c, g, offs); err != nil {
				return fmt.Errorf("rdma-core %s: %v", tag, err)
			}
		}
		fmt.Printf("WQE bytes of %s identical to rdma-core %s's (ssn and a SEND's iova aside)\n", strings.Join(postRows, ", "), tag)
	}

	// Interleaved rounds: each C build, then ours.
	c := map[string]map[string][]float64{}
	g := map[string][]float64{}
	for r := 1; r <= rounds; r++ {
		for _, tag := range tags {
			o, err := runHarness(harness[tag], "-ms", strconv.Itoa(ms))
			if err != nil {
				return err
			}
			res, err := parseHarness(o)
			if err != nil {
				return fmt.Errorf("rdma-core %s harness: %v", tag, err)
			}
			if c[tag] == nil {
				c[tag] = map[string][]float64{}
			}
			for k, v := range res {
				c[tag][k] = append(c[tag][k], v)
			}
		}
		var buf bytes.Buffer
		cmd := exec.Command(goTest, "-test.run", "^$", "-test.bench", "^BenchmarkNative$", "-test.benchtime", fmt.Sprintf("%dms", ms))
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("BenchmarkNative: %v\n%s", err, buf.Bytes())
		}
		res, err := parseGoBench(buf.Bytes())
		if err != nil {
			return err
		}
		for k, v := range res {
			g[k] = append(g[k], v)
		}
		fmt.Printf("round %d of %d done\n", r, rounds)
	}
	table := formatTable(tags, rounds, c, g, time.Since(start))
	fmt.Print(table)
	var mlx5Table string
	if slices.Contains(tags, mlx5Tag) {
		src, err := checkout(cache, mlx5Tag)
		if err != nil {
			return err
		}
		if mlx5Table, err = runMLX5(src, work, goTest, rounds, ms); err != nil {
			return err
		}
		fmt.Print(mlx5Table)
	}
	if profile != "" {
		if err := profileRows(goBin, goTest, profile); err != nil {
			return err
		}
	}
	if out == "" {
		return nil
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	updated, err := replace(string(doc), "<!-- native table: begin (written by make bench-native) -->", "<!-- native table: end -->", table)
	if err != nil {
		return fmt.Errorf("%s: %v", out, err)
	}
	if mlx5Table != "" {
		if updated, err = replace(updated, "<!-- mlx5 native table: begin (written by make bench-native) -->", "<!-- mlx5 native table: end -->", mlx5Table); err != nil {
			return fmt.Errorf("%s: %v", out, err)
		}
	}
	return os.WriteFile(out, []byte(updated), 0o644)
}

// checkout returns a checkout of rdma-core at tag in cache, cloning it
// when it is not there.
func checkout(cache, tag string) (string, error) {
	dir := filepath.Join(cache, tag)
	if _, err := os.Stat(filepath.Join(dir, "providers", "rxe", "rxe.c")); err == nil {
		return dir, nil
	}
	repo := os.Getenv("GOVERBS_RDMA_CORE_REPO")
	if repo == "" {
		repo = defaultRepo
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("rdma-core %s is not in %s and git is missing to fetch it: install git, or put a checkout of %s there", tag, dir, tag)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	fmt.Printf("fetching rdma-core %s from %s into %s\n", tag, repo, dir)
	if o, err := exec.Command("git", "clone", "-q", "--depth", "1", "-b", tag, repo, tmp).CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("could not fetch rdma-core %s from %s (%v: %s): set GOVERBS_RDMA_CORE_REPO to a reachable clone (a local path works), or put a checkout of %s in %s",
			tag, repo, err, strings.TrimSpace(string(o)), tag, dir)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// build compiles harness.c with the provider of the checkout src: an
// include tree as rdma-core's build lays it out (infiniband/ from
// libibverbs/, rdma/ from kernel-headers/, kernel-abi/ made by the
// checkout's buildlib/make_abi_structs.py), a config.h of its own, and
// stubs that abort for the libibverbs functions the provider calls outside
// the data path.
func build(harnessSrc, src, dir string) (string, error) {
	for _, tool := range []string{"python3", "nm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is missing: make bench-native needs it to build rdma-core's provider", tool)
		}
	}
	os.RemoveAll(dir)
	inc := filepath.Join(dir, "include")
	for _, d := range []string{"infiniband", "rdma", "kernel-abi"} {
		if err := os.MkdirAll(filepath.Join(inc, d), 0o755); err != nil {
			return "", err
		}
	}
	link := func(pattern, to string) error {
		files, err := filepath.Glob(filepath.Join(src, pattern))
		if err != nil || len(files) == 0 {
			return fmt.Errorf("%s: no %s in this checkout", src, pattern)
		}
		for _, f := range files {
			if err := os.Symlink(f, filepath.Join(inc, to, filepath.Base(f))); err != nil {
				return err
			}
		}
		return nil
	}
	if err := errors.Join(
		link("libibverbs/*.h", "infiniband"),
		link("kernel-headers/rdma/*.h", "rdma"),
		link("kernel-headers/rdma/ib_user_ioctl_verbs.h", "infiniband"),
		link("kernel-headers/linux", "."),
	); err != nil {
		return "", err
	}
	for _, h := range []string{"ib_user_verbs.h", "rdma_user_rxe.h"} {
		cmd := exec.Command("python3", filepath.Join(src, "buildlib", "make_abi_structs.py"),
			filepath.Join(src, "kernel-headers", "rdma", h), filepath.Join(inc, "kernel-abi", h))
		if o, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("make_abi_structs.py %s: %v\n%s", h, err, o)
		}
	}
	if err := os.WriteFile(filepath.Join(inc, "config.h"), []byte(configH), 0o644); err != nil {
		return "", err
	}
	rxeC := filepath.Join(src, "providers", "rxe", "rxe.c")
	obj := filepath.Join(dir, "harness.o")
	cflags := []string{"-O2", "-I" + inc, "-I" + src, "-I" + filepath.Join(src, "ccan")}
	if o, err := exec.Command("gcc", append(cflags, "-c", "-o", obj, fmt.Sprintf("-DRXE_C=%q", rxeC), harnessSrc)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc %s with %s: %v\n%s", harnessSrc, rxeC, err, o)
	}
	o, err := exec.Command("nm", "-u", obj).Output()
	if err != nil {
		return "", fmt.Errorf("nm -u %s: %v", obj, err)
	}
	stubs := filepath.Join(dir, "stubs.c")
	if err := os.WriteFile(stubs, []byte(stubSource(o)), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "harness")
	if o, err := exec.Command("gcc", "-O2", "-o", bin, obj, stubs).CombinedOutput(); err != nil {
		return "", fmt.Errorf("gcc: linking the harness: %v\n%s", err, o)
	}
	return bin, nil
}

// configH stands in for the config.h that rdma-core's CMake build writes
// (buildlib/config.h.in): what the provider and the headers it includes
// test.
const configH = `#define HAVE_STATEMENT_EXPR 1
#define HAVE_BUILTIN_TYPES_COMPATIBLE_P 1
#define HAVE_TYPEOF 1
#define HAVE_ISBLANK 1
#define HAVE_BUILTIN_CLZ 1
#define HAVE_BUILTIN_CLZL 1
#define HAVE_FUNC_ATTRIBUTE_ALWAYS_INLINE 1
#define SIZEOF_LONG 8
#define VERBS_IOCTL_ONLY 0
#define VERBS_WRITE_ONLY 0
#define STREAM_CLOEXEC "e"
`

// stubSource defines each undefined libibverbs symbol that nm -u listed: the
// provider's registration constructor does nothing, every other stub says
// its name and aborts (the data path calls none).
func stubSource(nmOut []byte) string {
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <stdlib.h>\n")
	sc := bufio.NewScanner(bytes.NewReader(nmOut))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		name := f[len(f)-1]
		if !strings.HasPrefix(strings.TrimLeft(name, "_"), "ibv_") && !strings.HasPrefix(strings.TrimLeft(name, "_"), "verbs_") {
			continue
		}
		if strings.HasPrefix(name, "verbs_register_driver") {
			fmt.Fprintf(&b, "void %s(void) {}\n", name)
			continue
		}
		fmt.Fprintf(&b, "void %s(void) { fputs(\"harness: %s called\\n\", stderr); abort(); }\n", name, name)
	}
	return b.String()
}

func runHarness(bin string, args ...string) ([]byte, error) {
	if len(args) == 2 && args[0] == "-dump" {
		os.RemoveAll(args[1])
		if err := os.MkdirAll(args[1], 0o755); err != nil {
			return nil, err
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	o, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, stderr.Bytes())
	}
	return o, nil
}

// dumpGo runs each row of BenchmarkNative once, with the WQE dump into
// dumpDir.
func dumpGo(goTest, dumpDir string) error {
	os.RemoveAll(dumpDir)
	if err := os.MkdirAll(dumpDir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(goTest, "-test.run", "^$", "-test.bench", "^BenchmarkNative$", "-test.benchtime", "1x")
	cmd.Env = append(os.Environ(), "GOVERBS_WQE_DUMP="+dumpDir)
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("BenchmarkNative with the WQE dump: %v\n%s", err, o)
	}
	return nil
}

// offsets are where rdma-core's struct rxe_send_wqe keeps what the
// comparison leaves out, as the harness's compiler laid it out.
type offsets struct{ ssn, iova int }

func parseOffsets(o []byte) (offsets, error) {
	off := offsets{-1, -1}
	sc := bufio.NewScanner(bytes.NewReader(o))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		switch f[0] {
		case "ssn_offset":
			off.ssn = v
		case "iova_offset":
			off.iova = v
		}
	}
	if off.ssn < 0 || off.iova < 0 {
		return off, fmt.Errorf("no ssn_offset and iova_offset in the dump's output %q", o)
	}
	return off, nil
}

// compareWQEs compares the WQE bytes of a post row, slot by slot, leaving
// out two fields of send WQEs that differ by design (docs/testing.md §7):
// ssn, which rdma-core's provider numbers and ours leaves 0, and the iova of
// a SEND, where rdma-core copies wr.rdma.remote_addr of the ibv_send_wr
// union (on a UD send the AH pointer) and ours writes 0.
func compareWQEs(row string, c, g []byte, off offsets) error {
	if len(c) != len(g) {
		return fmt.Errorf("%s: rdma-core wrote %d bytes of slots, ours %d", row, len(c), len(g))
	}
	send := !strings.HasPrefix(row, "recv")
	slots := 1
	if strings.HasSuffix(row, "list32") {
		slots = 32
	}
	size := len(c) / slots
	c, g = slices.Clone(c), slices.Clone(g)
	for s := 0; s < slots && send; s++ {
		base := s * size
		clear(c[base+off.ssn : base+off.ssn+4])
		clear(g[base+off.ssn : base+off.ssn+4])
		if row == "send_inline" || row == "ud_send" {
			clear(c[base+off.iova : base+off.iova+8])
			clear(g[base+off.iova : base+off.iova+8])
		}
	}
	for i := range c {
		if c[i] != g[i] {
			return fmt.Errorf("%s: the WQE bytes differ from rdma-core's at byte %d of slot %d (rdma-core %#02x, ours %#02x)", row, i%size, i/size, c[i], g[i])
		}
	}
	return nil
}

// parseHarness reads "row NAME NS" lines.
func parseHarness(o []byte) (map[string]float64, error) {
	res := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(o))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "row" {
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return nil, fmt.Errorf("line %q: %v", sc.Text(), err)
			}
			res[f[1]] = v
		}
	}
	return res, checkRows(res)
}

// parseGoBench reads the ns/wr metric of BenchmarkNative's sub-benchmarks.
func parseGoBench(o []byte) (map[string]float64, error) {
	res, err := parseGoBenchOf(o, "BenchmarkNative/")
	if err != nil {
		return nil, err
	}
	return res, checkRows(res)
}

// parseGoBenchOf reads the ns/wr metric of the sub-benchmarks whose names
// start with prefix.
func parseGoBenchOf(o []byte, prefix string) (map[string]float64, error) {
	res := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(o))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		name := strings.TrimPrefix(f[0], prefix)
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		for i := 1; i+1 < len(f); i++ {
			if f[i+1] == "ns/wr" {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return nil, fmt.Errorf("line %q: %v", sc.Text(), err)
				}
				res[name] = v
			}
		}
	}
	return res, nil
}

func checkRows(res map[string]float64) error {
	for _, r := range rows {
		if _, ok := res[r.name]; !ok {
			return fmt.Errorf("no figure for row %s", r.name)
		}
	}
	return nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func formatTable(tags []string, rounds int, c map[string]map[string][]float64, g map[string][]float64, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s, %d vCPUs; %s, %s; %d interleaved rounds (each rdma-core build, then ours), median of each; took %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cpuModel(), runtime.NumCPU(), gccVersion(), runtime.Version(), rounds, took.Round(time.Second))
	b.WriteString("| row |")
	for _, t := range tags {
		fmt.Fprintf(&b, " rdma-core %s |", t)
	}
	b.WriteString(" goverbs |")
	for _, t := range tags {
		fmt.Fprintf(&b, " ours/%s |", t)
	}
	b.WriteString("\n|---|")
	for range tags {
		b.WriteString("---:|---:|")
	}
	b.WriteString("---:|\n")
	for _, r := range rows {
		gm := median(g[r.name])
		fmt.Fprintf(&b, "| %s |", r.what)
		for _, t := range tags {
			fmt.Fprintf(&b, " %.1f |", median(c[t][r.name]))
		}
		fmt.Fprintf(&b, " %.1f |", gm)
		for _, t := range tags {
			fmt.Fprintf(&b, " %.2f |", gm/median(c[t][r.name]))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nns per work request (per completion for the polls, per call for the empty poll); ours/C at or below 1.00 is as fast.\n")
	return b.String()
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func gccVersion() string {
	o, err := exec.Command("gcc", "-dumpfullversion").Output()
	if err != nil {
		return "gcc"
	}
	return "gcc " + strings.TrimSpace(string(o)) + " -O2"
}

// profileRows writes a CPU profile of each Go row and pprof's top
// functions beside it.
func profileRows(goBin, goTest, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, r := range rows {
		prof := filepath.Join(dir, r.name+".pprof")
		cmd := exec.Command(goTest, "-test.run", "^$", "-test.bench", "^BenchmarkNative$/^"+r.name+"$", "-test.benchtime", "2s", "-test.cpuprofile", prof)
		cmd.Dir = dir
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("profiling %s: %v\n%s", r.name, err, o)
		}
		top, err := exec.Command(goBin, "tool", "pprof", "-top", "-nodecount=25", goTest, prof).CombinedOutput()
		if err != nil {
			return fmt.Errorf("pprof %s: %v\n%s", r.name, err, top)
		}
		if err := os.WriteFile(filepath.Join(dir, r.name+".txt"), top, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("profiles and their top functions in %s\n", dir)
	return nil
}

// replace puts body between the begin and end markers of doc.
func replace(doc, begin, end, body string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q markers", begin, end)
	}
	return doc[:i+len(begin)] + "\n" + body + doc[j:], nil
}
