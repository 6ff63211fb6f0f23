//go:build linux

package lab

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// guestInitSource is the source of the guest's /init: package guestinit and
// the protocol package it imports, at their paths in this module. The lab
// builds them in a module of their own named like this one, so the import
// path of internal/proto resolves to the embedded copy.
//
//go:embed guestinit/*.go internal/proto/*.go
var guestInitSource embed.FS

// guestInitModule is the module path the embedded files are built under.
const guestInitModule = "github.com/goverbs/rdma"

// guestInitDir is the embedded files' directory relative to the module root.
const guestInitDir = "test/lab"

// guestInitFiles returns the embedded source files, tests left out, by path
// relative to the module root.
func guestInitFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(guestInitSource, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := guestInitSource.ReadFile(p)
		files[path.Join(guestInitDir, p)] = b
		return err
	})
	return files, err
}

func guestInitHash(goarch string) string {
	h := sha256.New()
	h.Write([]byte(goarch + "\n"))
	files, err := guestInitFiles()
	if err != nil {
		panic(err) // embedded files are always readable
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s %d\n", n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// goTool finds the go command: the toolchain of $GOROOT first, then PATH's
// and /usr/local/go's. Under go test -exec, PATH already starts with the
// GOROOT/bin of the go command that runs the tests (cmd/go has put it there
// for test subprocesses since Go 1.19), so an older distribution Go later
// in PATH does not build the guest's /init.
func goTool() (string, error) {
	var cands []string
	if root := os.Getenv("GOROOT"); root != "" {
		cands = append(cands, filepath.Join(root, "bin", "go"))
	}
	if p, err := exec.LookPath("go"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/local/go/bin/go")
	for _, p := range cands {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("the lab builds the guest's /init with the Go toolchain, but no go command was found in $GOROOT/bin, PATH or /usr/local/go/bin; install Go or put go in PATH")
}

// guestInit returns the path of the static /init binary for goarch, building
// it once per source version, or taking the one a release build of rxelab
// carries (prebuiltInits).
func (e *env) guestInit(goarch string) (string, error) {
	final := filepath.Join(e.cache, "init", guestInitHash(goarch))
	bin := filepath.Join(final, "init")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), "tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if b := prebuiltInits[goarch]; len(b) > 0 {
		e.logf("using the guest /init built into rxelab")
		if err := os.WriteFile(filepath.Join(tmp, "init"), b, 0o755); err != nil {
			return "", err
		}
		return placeInit(tmp, final, bin)
	}
	goCmd, err := goTool()
	if err != nil {
		return "", err
	}
	files, err := guestInitFiles()
	if err != nil {
		return "", err
	}
	files["go.mod"] = []byte("module " + guestInitModule + "\n\ngo 1.21\n")
	for name, data := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
	}
	e.logf("building the guest /init ...")
	cmd := exec.Command(goCmd, "build", "-trimpath", "-ldflags=-s -w", "-o", "init", "./"+guestInitDir+"/guestinit")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch,
		"GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "GOPROXY=off")
	if os.Getenv("HOME") == "" && os.Getenv("GOCACHE") == "" && os.Getenv("XDG_CACHE_HOME") == "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+filepath.Join(e.cache, "gocache"))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the guest /init: %v\n%s", err, out)
	}
	return placeInit(tmp, final, bin)
}

// placeInit moves the directory tmp, which holds init, to final, whose init
// is bin.
func placeInit(tmp, final, bin string) (string, error) {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(bin); serr == nil {
			return bin, nil // built at the same time by another run
		}
		return "", err
	}
	return bin, nil
}

// initramfs returns an uncompressed newc initramfs with /init, /dev/console
// and the kernel's modules, and siw.ko when siw names it, cached per kernel,
// /init version and siw.ko.
func (e *env) initramfs(k *kernel, initBin, goarch, siw string) (string, error) {
	dir := filepath.Join(e.cache, "initramfs")
	name := k.key + "-" + guestInitHash(goarch)
	var siwData []byte
	var siwOrder string
	if siw != "" {
		var err error
		if siwData, err = os.ReadFile(siw); err != nil {
			return "", err
		}
		deps, err := siwDeps(siwData, k)
		if err != nil {
			return "", err
		}
		// One line of modules/order: siw.ko after the modules it needs.
		siwOrder = "siw.ko"
		for _, d := range deps {
			siwOrder += " " + d + ".ko"
		}
		siwOrder += "\n"
		name += "-" + filepath.Base(filepath.Dir(siw)) // siw-<hash>
	}
	final := filepath.Join(dir, name+".cpio")
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "tmp-*.cpio")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()

	w := &cpioWriter{w: f}
	for _, d := range []string{"dev", "proc", "sys", "newroot", "modules"} {
		w.Dir(d, 0o755)
	}
	// The kernel opens /dev/console for init's stdin/stdout/stderr before
	// init can mount devtmpfs.
	w.CharDev("dev/console", 0o600, 5, 1)
	initData, err := os.ReadFile(initBin)
	if err != nil {
		return "", err
	}
	w.File("init", 0o755, initData)
	order, err := os.ReadFile(filepath.Join(k.dir, "modules", "order"))
	if err != nil {
		return "", err
	}
	w.File("modules/order", 0o644, append(order, siwOrder...))
	for _, line := range strings.Split(string(order), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name := f[0]
		data, err := os.ReadFile(filepath.Join(k.dir, "modules", name))
		if err != nil {
			return "", err
		}
		w.File("modules/"+name, 0o644, data)
	}
	if siwData != nil {
		w.File("modules/siw.ko", 0o644, siwData)
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return "", err
	}
	return final, os.Rename(f.Name(), final)
}
