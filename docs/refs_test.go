package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// The start of a citation: "docs/abi.md". What follows it is read by
	// parseCite: "§3.7", "§3.2-3.3", "§4.4 and §4.5", "§1 items 13-15", and
	// the same split over comment lines.
	docRE = regexp.MustCompile(`docs/([\w.-]+\.md)`)
	// One section cited after a document: "§3.2", "§3.2-3.3", "§1 item 4",
	// "§1 items 17-19". Leading blanks and comment markers are allowed.
	secRE = regexp.MustCompile(`^(?:\s|//)*§(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?(?:\s+(?://\s*)?items?\s+(\d+)(?:-(\d+))?)?`)
	// What joins two cited sections: "§3, §1 ..." or "§4.4 and §4.5".
	joinRE = regexp.MustCompile(`^(?:\s|//)*(?:,|and)`)
	// Headings that a section number names: "## 3. rxe", "### 3.7 The send doorbell".
	headingRE = regexp.MustCompile(`^#{2,3} (\d+(?:\.\d+)?)\.? `)
	// Any heading; a section's numbered items end at the next one.
	anyHeadingRE = regexp.MustCompile(`^#+ `)
	// A numbered item of a Markdown list: "12. The peer ...".
	itemRE = regexp.MustCompile(`^\s*(\d+)\. `)
	// Documents that are not part of the module; citing them is a dangling
	// reference for every reader of the published module.
	// Written as families (abi-, reliability-, peers-, style- with
	// -reference or -study), so that this guard does not cite them itself.
	outsideRE = regexp.MustCompile(`\b((abi|reliability|peers|style)-(reference|study)|mlx5-notes|rsocket-protocol)\b|(?:^|[^/\w])(testing|design|style)\.md\b`)
)

// A doc is what a citation may name in one document: its section numbers,
// each with the numbers of the list items directly under it.
type doc map[string]map[string]bool

// parseDoc reads a document's sections and their numbered items.
func parseDoc(text string) doc {
	d := doc{}
	var cur map[string]bool
	for _, line := range strings.Split(text, "\n") {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			cur = map[string]bool{}
			d[m[1]] = cur
			continue
		}
		if anyHeadingRE.MatchString(line) {
			cur = nil
			continue
		}
		if m := itemRE.FindStringSubmatch(line); m != nil && cur != nil {
			cur[m[1]] = true
		}
	}
	return d
}

// A cite is one section (and perhaps items) named by a citation.
type cite struct{ sec, item string }

// parseCites reads the sections cited in rest, the text right after a
// document's name.
func parseCites(rest string) []cite {
	var cs []cite
	for {
		m := secRE.FindStringSubmatch(rest)
		if m == nil {
			return cs
		}
		for _, s := range []string{m[1], m[2]} {
			if s == "" {
				continue
			}
			if m[3] == "" {
				cs = append(cs, cite{sec: s})
			}
			for _, it := range []string{m[3], m[4]} {
				if it != "" {
					cs = append(cs, cite{sec: s, item: it})
				}
			}
		}
		rest = rest[len(m[0]):]
		j := joinRE.FindString(rest)
		if j == "" {
			return cs
		}
		rest = rest[len(j):]
	}
}

// checkRefs returns one line per reference in text that does not resolve
// against docs (file name -> contents).
func checkRefs(name, text string, docs map[string]doc) []string {
	var bad []string
	lineOf := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	for _, m := range docRE.FindAllStringSubmatchIndex(text, -1) {
		file := text[m[2]:m[3]]
		d, ok := docs[file]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s:%d: docs/%s: no such document in docs/", name, lineOf(m[0]), file))
			continue
		}
		for _, c := range parseCites(text[m[1]:]) {
			items, ok := d[c.sec]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s:%d: docs/%s has no section §%s", name, lineOf(m[0]), file, c.sec))
			case c.item != "" && !items[c.item]:
				bad = append(bad, fmt.Sprintf("%s:%d: docs/%s §%s has no item %s", name, lineOf(m[0]), file, c.sec, c.item))
			}
		}
	}
	for i, line := range strings.Split(text, "\n") {
		if m := outsideRE.FindString(line); m != "" {
			bad = append(bad, fmt.Sprintf("%s:%d: cites %q, which is not a document of the module (use docs/)", name, i+1, strings.TrimSpace(m)))
		}
	}
	return bad
}

// readDocs parses the Markdown files of dir.
func readDocs(t *testing.T, dir string) map[string]doc {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]doc{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			docs[e.Name()] = parseDoc(string(b))
		}
	}
	return docs
}

// TestReferences walks the module's Go files, Markdown files and Makefile
// and checks every citation of docs/: the document exists and has the
// sections and items cited, and nothing cites a document from outside the
// module.
func TestReferences(t *testing.T) {
	docs := readDocs(t, ".")
	if len(docs) < 5 {
		t.Fatalf("only %d documents in docs/", len(docs))
	}
	self, err := filepath.Abs("refs_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	var bad []string
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != ".." && (strings.HasPrefix(n, ".") || n == "bin" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if abs, _ := filepath.Abs(path); abs == self {
			return nil // its examples are bad on purpose
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") && d.Name() != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		bad = append(bad, checkRefs(strings.TrimPrefix(path, "../"), string(b), docs)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d files checked: the walk did not cover the module", files)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// The checker finds what it must, and nothing else.
func TestCheckerFindsBadReferences(t *testing.T) {
	docs := map[string]doc{
		"abi.md":        parseDoc("# ABI\n## 3. rxe\n### 3.2 Driver data\n### 3.3 Rings\n### 3.7 Doorbell\n## 4. CM\n### 4.4 Active\n"),
		"robustness.md": parseDoc("## 1. Faults\n\n1. one\n2. two\n   more of two\n3. three\n\n## 2. Teardown\n\n- none\n"),
	}
	for _, c := range []struct {
		text string
		bad  int
	}{
		{"// see docs/abi.md §3.7", 0},
		{"// docs/abi.md", 0},
		{"// docs/abi.md §3.2-3.3", 0},
		{"// docs/abi.md §3.2-3.4", 1},
		{"// docs/abi.md §3 and §4.4, then", 0},
		{"// docs/abi.md §3.7 and §4.5", 1},
		{"// docs/abi.md §3.7, §9", 1},
		{"// docs/abi.md §9", 1},
		{"// docs/abi.md §3.1.", 1},
		{"// docs/nothere.md §1", 1},
		{"// docs/robustness.md §1 item 2", 0},
		{"// docs/robustness.md §1 items 1-3", 0},
		{"// docs/robustness.md §1 items 2-4", 1},
		{"// docs/robustness.md §2 item 1", 1},
		{"// (docs/robustness.md\n// §1 items 13-15)", 2},
		{"// (docs/robustness.md\n// §3)", 1},
		{"// docs/robustness.md §1\n// items 3 and 4", 0}, // item 3; "and 4" is not read
		{"// (abi-" + "reference §3.7)", 1},
		{"// reliability-" + "study §4.5 item 3", 1},
		{"// see testing.md", 1},
		{"// see design.md and style.md", 1}, // one report per line
		{"// see docs/testing.md", 1},        // not in this fake set of documents
		{"[the ABI](docs/abi.md)", 0},
	} {
		if got := checkRefs("x.go", c.text, docs); len(got) != c.bad {
			t.Errorf("%q: %d reports %q, want %d", c.text, len(got), got, c.bad)
		}
	}
}
