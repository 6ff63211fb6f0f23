package mlx5

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The differential test (docs/mlx5.md §7). By default it replays the golden
// vectors in testdata/mlx5diff, which the harness recorded from rdma-core's
// libmlx5; with -mlx5diff.harness it runs the harness itself (make
// mlx5diff builds it) and compares every case with libmlx5 directly, and
// with -mlx5diff.update it rewrites the golden vectors from that run.
var (
	harnessPath = flag.String("mlx5diff.harness", "", "path of the built test/mlx5diff harness; compare with libmlx5 directly")
	updateGold  = flag.Bool("mlx5diff.update", false, "with -mlx5diff.harness: rewrite testdata/mlx5diff from the harness's results")
	randomN     = flag.Int("mlx5diff.random", 10000, "number of random cases")
	randomSeed  = flag.Uint64("mlx5diff.seed", 1, "seed of the random cases")
	rdmaCoreTag = flag.String("mlx5diff.tag", "v44.0", "rdma-core tag the harness was built from (recorded in the golden files)")
)

const (
	goldenCorpus = "testdata/mlx5diff/corpus.golden.gz" // gzip: the rings repeat their fill pattern
	goldenRandom = "testdata/mlx5diff/random.golden"
	blockSize    = 100
)

// normalize cuts a case's output after its first refused post: libmlx5
// has then posted the requests before the refused one and may have
// scribbled on the refused one's slot, while this package writes nothing
// (docs/mlx5.md §6). runCase checks the "nothing" itself.
func normalize(out string) string {
	lines := strings.SplitAfter(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "post ") && !strings.HasPrefix(l, "post 0 ") {
			return strings.Join(lines[:i+1], "")
		}
	}
	return out
}

// parseResults splits "case NAME\n...end\n" blocks into a map.
func parseResults(data []byte) (map[string]string, []string, error) {
	res := map[string]string{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	name := ""
	var body strings.Builder
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#") && name == "":
		case strings.HasPrefix(l, "case ") && name == "":
			name = strings.TrimPrefix(l, "case ")
			body.Reset()
		case l == "end" && name != "":
			res[name] = body.String()
			order = append(order, name)
			name = ""
		case name != "":
			body.WriteString(l + "\n")
		case l == "":
		default:
			return nil, nil, fmt.Errorf("unexpected line %q", l)
		}
	}
	if name != "" {
		return nil, nil, fmt.Errorf("case %s has no end", name)
	}
	return res, order, sc.Err()
}

func runGo(t *testing.T, c diffCase) string {
	t.Helper()
	got, err := runCase(c.body)
	if err != nil {
		t.Fatalf("case %s: %v", c.name, err)
	}
	return got
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  libmlx5: %s\n  Go:      %s", i+1, x, y)
		}
	}
	return "no difference"
}

func TestDifferential(t *testing.T) {
	fixed := fixedCases()
	random := randomCases(*randomSeed, *randomN)
	if *harnessPath != "" {
		compareWithHarness(t, fixed, random)
		return
	}
	if *updateGold {
		t.Fatal("-mlx5diff.update needs -mlx5diff.harness (run make mlx5diff)")
	}
	data, err := readGzip(goldenCorpus)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := parseResults(data)
	if err != nil {
		t.Fatalf("%s: %v", goldenCorpus, err)
	}
	if len(want) != len(fixed) {
		t.Fatalf("%s holds %d cases, the corpus has %d: the corpus changed; regenerate with make mlx5diff", goldenCorpus, len(want), len(fixed))
	}
	for _, c := range fixed {
		w, ok := want[c.name]
		if !ok {
			t.Fatalf("%s has no case %s: the corpus changed; regenerate with make mlx5diff", goldenCorpus, c.name)
		}
		if got := normalize(runGo(t, c)); got != normalize(w) {
			t.Errorf("case %s differs from libmlx5 (%s):\n%s", c.name, goldenCorpus, firstDiff(normalize(w), got))
		}
	}
	if *randomN != 10000 || *randomSeed != 1 {
		t.Logf("random cases not compared: %s holds seed 1, 10000 cases; use -mlx5diff.harness for others", goldenRandom)
		return
	}
	data, err = os.ReadFile(goldenRandom)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	blocks := randomBlocks(t, random, nil)
	if len(lines) != len(blocks) {
		t.Fatalf("%s holds %d blocks, expected %d; regenerate with make mlx5diff", goldenRandom, len(lines), len(blocks))
	}
	for i, b := range blocks {
		f := strings.Fields(lines[i])
		if len(f) != 3 {
			t.Fatalf("%s: bad line %q", goldenRandom, lines[i])
		}
		if f[1] != b.in {
			t.Fatalf("%s block %d: the random cases changed (input digest); regenerate with make mlx5diff", goldenRandom, i)
		}
		if f[2] != b.out {
			t.Errorf("random cases %d..%d differ from libmlx5 (%s); run make mlx5diff to see the case", i*blockSize, (i+1)*blockSize-1, goldenRandom)
		}
	}
	t.Logf("%d fixed and %d random cases match libmlx5 (golden vectors from rdma-core %s)", len(fixed), len(random), tagOf(data))
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}

func tagOf(golden []byte) string {
	for _, l := range strings.Split(string(golden), "\n") {
		if s, ok := strings.CutPrefix(l, "# rdma-core "); ok {
			return strings.Fields(s)[0]
		}
	}
	return "(unknown)"
}

type block struct{ in, out string }

// randomBlocks digests the random cases' inputs and normalised outputs in
// blocks of blockSize. With results given it digests those, else this
// package's.
func randomBlocks(t *testing.T, cs []diffCase, results map[string]string) []block {
	var blocks []block
	for i := 0; i < len(cs); i += blockSize {
		hin, hout := sha256.New(), sha256.New()
		for _, c := range cs[i:min(len(cs), i+blockSize)] {
			hin.Write([]byte(c.text()))
			var out string
			if results != nil {
				out = results[c.name]
			} else {
				out = runGo(t, c)
			}
			hout.Write([]byte(c.name + "\n" + normalize(out)))
		}
		blocks = append(blocks, block{fmt.Sprintf("%x", hin.Sum(nil)[:12]), fmt.Sprintf("%x", hout.Sum(nil)[:12])})
	}
	return blocks
}

func compareWithHarness(t *testing.T, fixed, random []diffCase) {
	var in bytes.Buffer
	for _, c := range fixed {
		in.WriteString(c.text())
	}
	for _, c := range random {
		in.WriteString(c.text())
	}
	cmd := exec.Command(*harnessPath)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outData, err := cmd.Output()
	if err != nil {
		t.Fatalf("harness %s: %v\n%s", *harnessPath, err, stderr.String())
	}
	results, _, err := parseResults(outData)
	if err != nil {
		t.Fatalf("harness output: %v", err)
	}
	bad := 0
	all := append(append([]diffCase(nil), fixed...), random...)
	for _, c := range all {
		w, ok := results[c.name]
		if !ok {
			t.Fatalf("the harness returned no result for case %s", c.name)
		}
		if got := normalize(runGo(t, c)); got != normalize(w) {
			bad++
			if bad <= 10 {
				t.Errorf("case %s differs from libmlx5:\n%s\ninput:\n%s", c.name, firstDiff(normalize(w), got), c.text())
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d cases differ from libmlx5", bad, len(all))
	}
	t.Logf("%d fixed and %d random cases (seed %d) match libmlx5 %s byte for byte", len(fixed), len(random), *randomSeed, *rdmaCoreTag)
	if !*updateGold {
		return
	}
	if *randomN != 10000 || *randomSeed != 1 {
		t.Fatal("-mlx5diff.update writes the golden vectors of seed 1 with 10000 random cases only")
	}
	header := fmt.Sprintf("# rdma-core %s (providers/mlx5 qp.c, cq.c, srq.c, verbs.c), recorded by test/mlx5diff/harness.c\n# made with: make mlx5diff MLX5DIFF_UPDATE=1 (RDMA_CORE_TAG=%s)\n", *rdmaCoreTag, *rdmaCoreTag)
	var corpus strings.Builder
	corpus.WriteString(header)
	for _, c := range fixed {
		corpus.WriteString("case " + c.name + "\n" + normalize(results[c.name]) + "end\n")
	}
	var rnd strings.Builder
	rnd.WriteString(header)
	fmt.Fprintf(&rnd, "# seed 1, %d random cases in blocks of %d: block, input digest, output digest\n", len(random), blockSize)
	for i, b := range randomBlocks(t, random, results) {
		fmt.Fprintf(&rnd, "%d %s %s\n", i, b.in, b.out)
	}
	if err := os.MkdirAll(filepath.Dir(goldenCorpus), 0o755); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write([]byte(corpus.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenCorpus, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenRandom, []byte(rnd.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s and %s", goldenCorpus, goldenRandom)
}
