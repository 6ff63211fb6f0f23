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
	// A citation: "docs/abi.md §3.7", "docs/robustness.md §1 item 4",
	// "docs/abi.md §3.2-3.3", or the file alone.
	citeRE = regexp.MustCompile(`docs/([\w.-]+\.md)(?:\s+§(\d+(?:\.\d+)?))?`)
	// Headings that a section number names: "## 3. rxe", "### 3.7 The send doorbell".
	headingRE = regexp.MustCompile(`(?m)^#{2,3} (\d+(?:\.\d+)?)\.? `)
	// Documents that are not part of the module; citing them is a dangling
	// reference for every reader of the published module.
	outsideRE = regexp.MustCompile(`\b(abi-reference|reliability-study|peers-study|style-study|mlx5-notes|rsocket-protocol)\b|(?:^|[^/\w])(testing|design|style)\.md\b`)
)

// sections returns the section numbers of a document's headings.
func sections(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(string(b), -1) {
		s[m[1]] = true
	}
	return s
}

// checkRefs returns one line per reference in text that does not resolve.
func checkRefs(t *testing.T, name, text string, docs map[string]map[string]bool) []string {
	var bad []string
	for i, line := range strings.Split(text, "\n") {
		for _, m := range citeRE.FindAllStringSubmatch(line, -1) {
			secs, ok := docs[m[1]]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s:%d: %s: no such document in docs/", name, i+1, m[0]))
			case m[2] != "" && !secs[m[2]]:
				bad = append(bad, fmt.Sprintf("%s:%d: %s: docs/%s has no section %s", name, i+1, m[0], m[1], m[2]))
			}
		}
		if m := outsideRE.FindString(line); m != "" {
			bad = append(bad, fmt.Sprintf("%s:%d: cites %q, which is not a document of the module (use docs/)", name, i+1, strings.TrimSpace(m)))
		}
	}
	return bad
}

// TestReferences walks the module's Go files, Markdown files and Makefile
// and checks every citation of docs/.
func TestReferences(t *testing.T) {
	docs := map[string]map[string]bool{}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".md") {
			docs[e.Name()] = sections(t, e.Name())
		}
	}
	var bad []string
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "bin" || n == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if path == "refs_test.go" || filepath.Base(path) == "refs_test.go" {
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") && filepath.Base(path) != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		bad = append(bad, checkRefs(t, path, string(b), docs)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// The checker finds what it must.
func TestCheckerFindsBadReferences(t *testing.T) {
	docs := map[string]map[string]bool{"abi.md": {"3": true, "3.7": true}}
	for _, c := range []struct {
		text string
		bad  bool
	}{
		{"// see docs/abi.md §3.7", false},
		{"// docs/abi.md §3.2-3.3", true}, // §3.2 is missing
		{"// docs/abi.md", false},
		{"// docs/nothere.md §1", true},
		{"// docs/abi.md §9", true},
		{"// (abi-reference §3.7)", true},
		{"// reliability-study §4.5 item 3", true},
		{"// see testing.md", true},
		{"// see docs/testing.md", true}, // not in this fake set of documents
	} {
		if got := len(checkRefs(t, "x.go", c.text, docs)) > 0; got != c.bad {
			t.Errorf("%q: reported %v, want %v", c.text, got, c.bad)
		}
	}
}
