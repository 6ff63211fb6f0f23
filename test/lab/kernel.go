package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Series maps a kernel series to the Debian 12 metapackage whose dependency
// is the current kernel package of that series (apt-cache depends
// linux-image-amd64 gives linux-image-6.1.0-N-amd64).
var Series = map[string]string{
	"6.1":  "linux-image-amd64",
	"6.12": "linux-image-6.12-amd64",
}

// kernel is an unpacked kernel in the cache: the bzImage and the modules the
// guest loads, uncompressed, with the order to load them in.
type kernel struct {
	pkg     string // e.g. linux-image-6.1.0-56-amd64
	release string // uname -r
	version string // the package's Debian version, e.g. 6.1.192-2
	dir     string
	key     string // cache key: package and module set
}

func (k *kernel) vmlinuz() string { return filepath.Join(k.dir, "vmlinuz") }

// bootImage is the file for QEMU's -kernel: the uncompressed ELF kernel
// when there is one (see extractVmlinux), else the bzImage.
func (k *kernel) bootImage() string {
	if p := filepath.Join(k.dir, "vmlinux"); fileExists(p) {
		return p
	}
	return k.vmlinuz()
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// cacheLayout changes when the layout of a prepared kernel changes, so old
// cache entries are not used.
const cacheLayout = "5"

// aptDepends returns the linux-image package meta depends on, from apt-cache
// (with aptOpts, the options of a foreign architecture's apt state).
func aptDepends(aptOpts []string, meta string) (string, error) {
	out, err := exec.Command("apt-cache", append(append([]string{}, aptOpts...), "depends", meta)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("apt-cache depends %s: %v: %s", meta, err, strings.TrimSpace(string(out)))
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		v = strings.TrimSpace(v)
		if ok && strings.TrimPrefix(k, "|") == "Depends" && strings.HasPrefix(v, "linux-image-") {
			return v, nil
		}
	}
	return "", fmt.Errorf("apt-cache depends %s lists no linux-image package", meta)
}

// kernelPackage resolves the kernel package of a series. Without apt data it
// falls back to the newest kernel of the series already in the cache.
func (e *env) kernelPackage(series string, arch *guestArch) (string, error) {
	if _, ok := Series[series]; !ok {
		return "", fmt.Errorf("unknown kernel series %q; use one of 6.1, 6.12", series)
	}
	meta := arch.kernelMeta(series)
	var pkg string
	var err error
	if arch.foreign() {
		opts := e.foreignAptOpts(arch.name)
		if !e.foreignAptHasLists(arch.name) {
			err = e.foreignAptUpdate(arch.name)
		}
		if err == nil {
			if pkg, err = aptDepends(opts, meta); err != nil {
				if uerr := e.foreignAptUpdate(arch.name); uerr == nil {
					pkg, err = aptDepends(opts, meta)
				}
			}
		}
	} else {
		pkg, err = aptDepends(nil, meta)
		if err != nil && os.Geteuid() == 0 {
			if uerr := e.aptUpdate(); uerr == nil {
				pkg, err = aptDepends(nil, meta)
			}
		}
	}
	if err == nil {
		return pkg, nil
	}
	ents, _ := os.ReadDir(filepath.Join(e.cache, "kernels"))
	var cached []string
	for _, ent := range ents {
		k, _, _ := strings.Cut(ent.Name(), "@")
		if strings.HasPrefix(k, "linux-image-"+series+".") && strings.HasSuffix(k, "-"+arch.name) {
			cached = append(cached, ent.Name())
		}
	}
	if len(cached) == 0 {
		return "", fmt.Errorf("cannot find the kernel package of series %s: %w (check apt sources; try apt-get update)", series, err)
	}
	sort.Strings(cached)
	name := cached[len(cached)-1]
	e.logf("warning: %v; using cached %s", err, name)
	k, _, _ := strings.Cut(name, "@")
	return k, nil
}

func moduleSetHash() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", cacheLayout, strings.Join(guestModules, " "))
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// prepareKernel makes sure the kernel of series is unpacked in the cache.
// One process prepares a given package at a time (flock); the result is
// moved into place with a rename, so readers never see a partial entry.
func (e *env) prepareKernel(series string, arch *guestArch) (*kernel, error) {
	pkg, err := e.kernelPackage(series, arch)
	if err != nil {
		return nil, err
	}
	k := &kernel{pkg: pkg, key: pkg + "@" + moduleSetHash()}
	k.dir = filepath.Join(e.cache, "kernels", k.key)
	if k.load() == nil {
		return k, nil
	}
	unlock, err := e.lockFile("kernel-" + pkg)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if k.load() == nil {
		return k, nil
	}
	if err := e.buildKernel(k, arch); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", pkg, err)
	}
	return k, k.load()
}

func (k *kernel) load() error {
	b, err := os.ReadFile(filepath.Join(k.dir, "release"))
	if err != nil {
		return err
	}
	k.release = strings.TrimSpace(string(b))
	b, err = os.ReadFile(filepath.Join(k.dir, "version"))
	if err != nil {
		return err
	}
	k.version = strings.TrimSpace(string(b))
	_, err = os.Stat(k.vmlinuz())
	return err
}

func (e *env) buildKernel(k *kernel, arch *guestArch) error {
	if err := os.MkdirAll(filepath.Join(e.cache, "kernels"), 0o755); err != nil {
		return err
	}
	// Leftovers of runs killed while preparing a kernel (we hold the lock
	// of this package only, so leave recent ones alone).
	old, _ := filepath.Glob(filepath.Join(e.cache, "tmp-kernel-*"))
	for _, p := range old {
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(p)
		}
	}
	tmp, err := os.MkdirTemp(e.cache, "tmp-kernel-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	e.logf("downloading %s ...", k.pkg)
	// apt-get download as root warns that the _apt sandbox user cannot
	// write here; download as root directly.
	dl := []string{"-o", "APT::Sandbox::User=root", "download", k.pkg}
	update := e.aptUpdate
	if arch.foreign() {
		dl = append(e.foreignAptOpts(arch.name), "download", k.pkg)
		update = func() error { return e.foreignAptUpdate(arch.name) }
	}
	if err := e.run(tmp, "apt-get", dl...); err != nil {
		if uerr := update(); uerr != nil {
			return err
		}
		if err := e.run(tmp, "apt-get", dl...); err != nil {
			return err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download %s left %d .deb files", k.pkg, len(debs))
	}
	version, err := e.runOutput(tmp, "dpkg-deb", "-f", debs[0], "Version")
	if err != nil {
		return err
	}
	e.logf("unpacking %s ...", filepath.Base(debs[0]))
	root := filepath.Join(tmp, "root")
	if err := e.run(tmp, "dpkg-deb", "-x", debs[0], root); err != nil {
		return err
	}
	os.Remove(debs[0])
	rels, _ := os.ReadDir(filepath.Join(root, "lib/modules"))
	if len(rels) != 1 {
		return fmt.Errorf("%s: expected one directory in lib/modules, found %d", k.pkg, len(rels))
	}
	release := rels[0].Name()

	out := filepath.Join(tmp, "out")
	if err := os.MkdirAll(filepath.Join(out, "modules"), 0o755); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(root, "boot", "vmlinuz-"+release), filepath.Join(out, "vmlinuz")); err != nil {
		return fmt.Errorf("%s has no boot/vmlinuz-%s: %w", k.pkg, release, err)
	}
	if arch.elfOK {
		e.writeVmlinux(filepath.Join(out, "vmlinuz"), filepath.Join(out, "vmlinux"))
	}
	tree, err := openModuleTree(filepath.Join(root, "lib/modules", release))
	if err != nil {
		return err
	}
	mods, err := tree.resolve(guestModules)
	if err != nil {
		return err
	}
	var order strings.Builder
	for _, m := range mods {
		if err := os.WriteFile(filepath.Join(out, "modules", m.name+".ko"), m.data, 0o644); err != nil {
			return err
		}
		// One line per module: the file, then the files it needs first.
		order.WriteString(m.name + ".ko")
		for _, d := range m.deps {
			order.WriteString(" " + d + ".ko")
		}
		order.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(out, "modules", "order"), []byte(order.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "release"), []byte(release+"\n"), 0o644); err != nil {
		return err
	}
	// The version pins the headers and sources siw.ko is built from (siw.go).
	if err := os.WriteFile(filepath.Join(out, "version"), version, 0o644); err != nil {
		return err
	}
	os.RemoveAll(k.dir) // a stale, incomplete entry; we hold the lock
	return os.Rename(out, k.dir)
}
