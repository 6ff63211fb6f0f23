package docs

import (
	"os"
	"strings"
	"testing"
)

// The README's first program is examples/echo/main.go as it is, so that
// what a reader copies compiles (go build ./... builds examples/echo).
func TestReadmeProgram(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("../examples/echo/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README.md has no Go block")
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("README.md's first Go block does not end")
	}
	if block != string(prog) {
		t.Errorf("README.md's first Go block is not examples/echo/main.go; copy the file into it:\n%s", prog)
	}
}

// The README's performance summary is BENCHMARKS.md's, row for row, so that
// the two never give different figures.
func TestReadmePerformanceSummary(t *testing.T) {
	table := func(file string) string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), "| what | goverbs against C |")
		if !ok {
			t.Fatalf("%s has no performance summary (a table headed \"| what | goverbs against C |\")", file)
		}
		rows, _, _ := strings.Cut(rest, "\n\n")
		return rows
	}
	if r, b := table("../README.md"), table("../BENCHMARKS.md"); r != b {
		t.Errorf("README.md's performance summary differs from BENCHMARKS.md's Summary; copy BENCHMARKS.md's:\n%s", b)
	}
}
