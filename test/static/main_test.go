package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build compiles a program that uses no cgo package with the environment
// env added and returns its path.
func build(t *testing.T, name string, env []string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(1) }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), src)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", flags, err, b)
	}
	return out
}

func TestCheck(t *testing.T) {
	if err := check(build(t, "static", []string{"CGO_ENABLED=0"})); err != nil {
		t.Errorf("a CGO_ENABLED=0 build: %v", err)
	}
	// The program imports no cgo package, so this needs no C compiler and
	// links statically; only the recorded setting betrays it.
	err := check(build(t, "cgo", []string{"CGO_ENABLED=1"}))
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=1") {
		t.Errorf("a CGO_ENABLED=1 build: got %v, want CGO_ENABLED=1 named", err)
	}
	// Go links a PIE itself without cgo, with the dynamic loader as its
	// interpreter.
	err = check(build(t, "pie", []string{"CGO_ENABLED=0"}, "-buildmode=pie"))
	if err == nil || !strings.Contains(err.Error(), "interpreter") {
		t.Errorf("a PIE: got %v, want the interpreter named", err)
	}
	if err := check("main.go"); err == nil {
		t.Error("a Go source file passed as a program")
	}
}
