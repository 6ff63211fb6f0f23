//go:build !race

// TestDist builds the release archives with make; it runs in the plain
// pass of make test only: the race detector adds nothing to it.

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestDist runs make dist into a temporary directory and checks what a user
// downloads: one archive per architecture, named with the version, that
// SHA256SUMS lists with the right digests; in each, every program of cmd/
// and test/rxelab, built for that architecture, static, without cgo and with
// -trimpath, beside README.md, LICENSE and CHANGELOG.md; and, for this
// machine's architecture, each program's -version naming it, the archive's
// version and the commit.
func TestDist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make dist needs make (apt-get install make)")
	}
	dist := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "dist", "DIST="+dist)
	// A make of its own, not a job of the make that may be running go test.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}

	version := wantVersion(t, root)
	programs := mainPackages(t, root)
	archs := []string{"amd64", "arm64"}
	sums := readSums(t, filepath.Join(dist, "SHA256SUMS"))
	var names []string
	for _, arch := range archs {
		names = append(names, fmt.Sprintf("goverbs-%s-linux-%s.tar.gz", version, arch))
	}
	if got := slices.Sorted(maps.Keys(sums)); !slices.Equal(got, names) {
		t.Fatalf("SHA256SUMS lists %q, want %q", got, names)
	}
	for i, arch := range archs {
		archive := filepath.Join(dist, names[i])
		b, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != sums[names[i]] {
			t.Errorf("%s: SHA256SUMS says %s, the file's digest is %x", names[i], sums[names[i]], sum)
		}
		dir := filepath.Join(t.TempDir(), strings.TrimSuffix(names[i], ".tar.gz"))
		files := extract(t, b, filepath.Dir(dir), filepath.Base(dir))
		want := append(slices.Clone(programs), "CHANGELOG.md", "LICENSE", "README.md")
		slices.Sort(want)
		if !slices.Equal(files, want) {
			t.Errorf("%s holds %q, want %q", names[i], files, want)
		}
		for _, doc := range []string{"CHANGELOG.md", "LICENSE", "README.md"} {
			a, _ := os.ReadFile(filepath.Join(dir, doc))
			b, _ := os.ReadFile(filepath.Join(root, doc))
			if !bytes.Equal(a, b) {
				t.Errorf("%s: %s differs from the checkout's", names[i], doc)
			}
		}
		for _, prog := range programs {
			checkDistBinary(t, filepath.Join(dir, prog), arch)
			if arch == runtime.GOARCH {
				checkVersion(t, root, filepath.Join(dir, prog), version)
			}
		}
	}
}

// wantVersion is the version make dist must stamp: the release tag of HEAD,
// else the first version CHANGELOG.md names, with -dev.
func wantVersion(t *testing.T, root string) string {
	t.Helper()
	if out, err := gitOutput(root, "describe", "--tags", "--exact-match", "--match", "v[0-9]*"); err == nil {
		return out
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## (v[0-9]\S*)`).FindSubmatch(changelog)
	if m == nil {
		t.Fatal("CHANGELOG.md has no heading `## vX.Y.Z ...` naming the version being prepared")
	}
	return string(m[1]) + "-dev"
}

func gitOutput(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

// mainPackages lists the names of the programs make dist must ship.
func mainPackages(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./cmd/...", "./test/rxelab")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var names []string
	for _, p := range strings.Fields(string(out)) {
		names = append(names, p[strings.LastIndex(p, "/")+1:])
	}
	slices.Sort(names)
	if len(names) < 10 || !slices.Contains(names, "rping") || !slices.Contains(names, "rxelab") {
		t.Fatalf("go list found the programs %q", names)
	}
	return names
}

// readSums reads a sha256sum listing: digest, two spaces, file name.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	for s := bufio.NewScanner(f); s.Scan(); {
		m := line.FindStringSubmatch(s.Text())
		if m == nil {
			t.Fatalf("SHA256SUMS: bad line %q", s.Text())
		}
		sums[m[2]] = m[1]
	}
	return sums
}

// extract unpacks the gzipped tar b into dir and returns the names of the
// files under its one top-level directory top, sorted.
func extract(t *testing.T, b []byte, dir, top string) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var files []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		rel, ok := strings.CutPrefix(name, top+"/")
		switch {
		case name == top && h.Typeflag == tar.TypeDir:
			if err := os.MkdirAll(filepath.Join(dir, top), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		case !ok || strings.Contains(rel, "/") || h.Typeflag != tar.TypeReg:
			t.Fatalf("archive entry %q (type %c): want the regular files of %s/ only", h.Name, h.Typeflag, top)
		}
		w, err := os.OpenFile(filepath.Join(dir, top, rel), os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(h.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	slices.Sort(files)
	return files
}

// checkDistBinary checks that path is a static program for linux/arch built
// without cgo (check) and with -trimpath.
func checkDistBinary(t *testing.T, path, arch string) {
	t.Helper()
	if err := check(path); err != nil {
		t.Error(err)
		return
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != machine {
		t.Errorf("%s: ELF machine %v, want %v", path, f.Machine, machine)
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s: needs the libraries %q (%v)", path, libs, err)
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOOS"] != "linux" || settings["GOARCH"] != arch || settings["-trimpath"] != "true" {
		t.Errorf("%s: built with GOOS=%s GOARCH=%s -trimpath=%s, want linux, %s, true", path, settings["GOOS"], settings["GOARCH"], settings["-trimpath"], arch)
	}
	// rxelab carries the guest's /init (test/lab/initbin_embed.go), so that
	// it runs where no Go is installed.
	if filepath.Base(path) == "rxelab" && settings["-tags"] != "labinit" {
		t.Errorf("%s: built with -tags=%q, want labinit: the release's rxelab carries the guest /init", path, settings["-tags"])
	}
}

// checkVersion runs path -version: one line, the program's name, version
// and, when git knows the checkout's commit, that commit.
func checkVersion(t *testing.T, root, path, version string) {
	t.Helper()
	prog := filepath.Base(path)
	out, err := exec.Command(path, "-version").Output()
	if err != nil {
		t.Errorf("%s -version: %v", prog, err)
		return
	}
	want := regexp.QuoteMeta(prog+" "+version) + `( \(commit ([0-9a-f]{7,12})(, modified)?\))?\n`
	m := regexp.MustCompile(`^` + want + `$`).FindStringSubmatch(string(out))
	if m == nil {
		t.Errorf("%s -version printed %q, want %q", prog, out, want)
		return
	}
	if head, err := gitOutput(root, "rev-parse", "HEAD"); err == nil && !strings.HasPrefix(head, m[2]) {
		t.Errorf("%s -version printed %q, want the commit %.12s", prog, out, head)
	}
}
