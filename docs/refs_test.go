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
	// The start of a citation of BENCHMARKS.md, at the module's root.
	benchRE = regexp.MustCompile(`\bBENCHMARKS\.md\b`)
	// One section cited by its title after a document: `, "Ring locks"`,
	// `("Ring locks")`, `"The rounds" item 31`, `"The rounds" items 3-5`.
	// A title may run over comment lines.
	// The title's opening quote must follow a separator, so that a Go
	// string ending in the name ("../BENCHMARKS.md") does not read as one.
	titleRE = regexp.MustCompile(`^(?:\s|//|,|\()+"([^"{}]{1,160})"(?:,?(?:\s|//)*items?\s+(\d+)(?:-(\d+))?)?`)
	// The comment marker at the start of a continued line: "//" or "#".
	commentRE = regexp.MustCompile(`\n\s*(?://|#)?`)
	// A citation that names no section where one is meant: "BENCHMARKS.md,
	// rxe item 31", "BENCHMARKS.md, mlx5 fifth round", "§" after BENCHMARKS.md.
	untitledRE = regexp.MustCompile(`^(?:\s|//)*,?(?:\s|//)*(?:(?:rxe|mlx5)\b|items?\s+\d|§)`)
	// Documents that are not part of the module; citing them is a dangling
	// reference for every reader of the published module.
	// Written as families (abi-, reliability-, peers-, style- with
	// -reference or -study), so that this guard does not cite them itself.
	outsideRE = regexp.MustCompile(`\b((abi|reliability|peers|style)-(reference|study)|mlx5-notes|rsocket-protocol)\b|(?:^|[^/\w])(testing|design|style)\.md\b`)
)

// A doc is what a citation may name in one document: its section numbers
// and its headings' titles, each with the numbers of the list items
// directly under it.
type doc struct {
	secs, titles map[string]map[string]bool
}

// parseDoc reads a document's sections and their numbered items.
func parseDoc(text string) doc {
	d := doc{secs: map[string]map[string]bool{}, titles: map[string]map[string]bool{}}
	var cur map[string]bool
	for _, line := range strings.Split(text, "\n") {
		if anyHeadingRE.MatchString(line) {
			cur = map[string]bool{}
			d.titles[strings.TrimSpace(strings.TrimLeft(line, "#"))] = cur
			if m := headingRE.FindStringSubmatch(line); m != nil {
				d.secs[m[1]] = cur
			}
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

// A titled is one heading (and perhaps items) named by its title.
type titled struct{ title, item string }

// parseTitles reads the headings cited by title in rest, the text right
// after a document's name: `, "A"`, `, "A" item 3`, `"A" and "B"`.
func parseTitles(rest string) []titled {
	var ts []titled
	for {
		m := titleRE.FindStringSubmatch(rest)
		if m == nil {
			return ts
		}
		// A title broken over lines, in a comment or a paragraph, is one line.
		title := strings.Join(strings.Fields(commentRE.ReplaceAllString(m[1], " ")), " ")
		if m[2] == "" {
			ts = append(ts, titled{title: title})
		}
		for _, it := range []string{m[2], m[3]} {
			if it != "" {
				ts = append(ts, titled{title: title, item: it})
			}
		}
		rest = rest[len(m[0]):]
		j := joinRE.FindString(rest)
		if j == "" {
			return ts
		}
		rest = rest[len(j):]
	}
}

// checkTitles returns one line per heading or item cited by title after
// the citation of doc that ends at off, and that doc does not have.
func checkTitles(name string, line int, file string, d doc, rest string) []string {
	var bad []string
	// A document without numbered sections is cited by its headings' titles.
	if len(d.secs) == 0 && untitledRE.MatchString(rest) {
		bad = append(bad, fmt.Sprintf("%s:%d: %s cited without a section: name its heading in quotes, as %s, \"Title\"", name, line, file, file))
	}
	for _, t := range parseTitles(rest) {
		items, ok := d.titles[t.title]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s:%d: %s has no heading %q", name, line, file, t.title))
		case t.item != "" && !items[t.item]:
			bad = append(bad, fmt.Sprintf("%s:%d: %s %q has no item %s", name, line, file, t.title, t.item))
		}
	}
	return bad
}

// checkRefs returns one line per reference in text that does not resolve
// against docs (file name in docs/, or BENCHMARKS.md, -> contents).
func checkRefs(name, text string, docs map[string]doc) []string {
	var bad []string
	lineOf := func(off int) int { return strings.Count(text[:off], "\n") + 1 }
	for _, m := range benchRE.FindAllStringIndex(text, -1) {
		if d, ok := docs["BENCHMARKS.md"]; ok {
			bad = append(bad, checkTitles(name, lineOf(m[0]), "BENCHMARKS.md", d, text[m[1]:])...)
		}
	}
	for _, m := range docRE.FindAllStringSubmatchIndex(text, -1) {
		file := text[m[2]:m[3]]
		d, ok := docs[file]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s:%d: docs/%s: no such document in docs/", name, lineOf(m[0]), file))
			continue
		}
		bad = append(bad, checkTitles(name, lineOf(m[0]), "docs/"+file, d, text[m[1]:])...)
		for _, c := range parseCites(text[m[1]:]) {
			items, ok := d.secs[c.sec]
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
	b, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	docs["BENCHMARKS.md"] = parseDoc(string(b))
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
		"BENCHMARKS.md":   parseDoc("# Benchmarks\n## Ring locks\n### Waits park in the netpoller\n"),
		"perf-history.md": parseDoc("# History\n## rxe post and poll: what each\nchange\n\n1. one\n2. two\n## mlx5: the rounds\n"),
		"abi.md":          parseDoc("# ABI\n## 3. rxe\n### 3.2 Driver data\n### 3.3 Rings\n### 3.7 Doorbell\n## 4. CM\n### 4.4 Active\n"),
		"robustness.md":   parseDoc("## 1. Faults\n\n1. one\n2. two\n   more of two\n3. three\n\n## 2. Teardown\n\n- none\n"),
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
		{`// (BENCHMARKS.md, "Ring locks")`, 0},
		{`// BENCHMARKS.md ("Ring locks") and "Waits park in the netpoller"`, 0},
		{`// BENCHMARKS.md, "Waits park in the` + "\n" + `// netpoller".`, 0},
		{`// BENCHMARKS.md, "Ring locks: plain"`, 1},
		{"// BENCHMARKS.md, rxe item 31", 1},
		{"// (BENCHMARKS.md rxe\n// item 37)", 1},
		{"// BENCHMARKS.md, mlx5 fifth round", 1},
		{"`make bench` writes BENCHMARKS.md", 0},
		{`// docs/perf-history.md, "rxe post and poll: what each change" item 2`, 1},
		{`// docs/perf-history.md, "rxe post and poll: what each" item 2`, 0},
		{`// docs/perf-history.md, "rxe post and poll: what each" items 1-3`, 1},
		{`// docs/perf-history.md, "mlx5: the rounds", fifth round`, 0},
		{`// docs/perf-history.md, "mlx5: the rounds" and "Ring locks"`, 1},
		{`// docs/abi.md, "3. rxe"`, 0},
	} {
		if got := checkRefs("x.go", c.text, docs); len(got) != c.bad {
			t.Errorf("%q: %d reports %q, want %d", c.text, len(got), got, c.bad)
		}
	}
}
