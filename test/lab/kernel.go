//go:build linux

package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// NewestKernel, as a kernel series, names the newest series any release of
// debianReleases serves.
const NewestKernel = "newest"

// validSeries matches a kernel series as the lab takes it: major.minor.
var validSeries = regexp.MustCompile(`^\d+\.\d+$`)

// kernelImageName matches the names of Debian's kernel image packages,
// linux-image-VERSION-ARCH, and captures the series: 6.1.0-28-amd64,
// 6.1.0-0.deb11.48-amd64, 6.12.118+deb12-amd64, 7.3.4+deb13-amd64. The
// version part must carry a patch level, which leaves out the metapackages
// of a series (linux-image-6.12-amd64); the flavours (-rt-, -cloud-) are
// left out by kernelImageSeries.
var kernelImageName = regexp.MustCompile(`^linux-image-(\d+\.\d+)[.-]\d[0-9a-z.+~-]*-([a-z0-9]+)$`)

// kernelImageSeries returns the series of a kernel image package of arch,
// or "" when name is not one (another architecture, a flavour, a
// metapackage, debug symbols).
func kernelImageSeries(name, arch string) string {
	m := kernelImageName.FindStringSubmatch(name)
	if m == nil || m[2] != arch {
		return ""
	}
	for _, flavour := range []string{"-rt-", "-cloud-", "-dbg", "-unsigned", "-16k", "-64k"} {
		if strings.Contains(name, flavour) {
			return ""
		}
	}
	return m[1]
}

// kernelCandidate is a kernel image package an apt state serves.
type kernelCandidate struct {
	pkg, version, series string
	state                *aptState
}

// kernelCandidates returns the newest kernel image package of each series
// that s serves.
func (e *env) kernelCandidates(s *aptState) (map[string]kernelCandidate, error) {
	out, err := s.cacheOutput("pkgnames", "linux-image-")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range strings.Fields(string(out)) {
		if kernelImageSeries(n, s.arch) != "" {
			names = append(names, n)
		}
	}
	best := map[string]kernelCandidate{}
	if len(names) == 0 {
		return best, nil
	}
	sort.Strings(names)
	out, err = s.cacheOutput(append([]string{"show", "--no-all-versions"}, names...)...)
	if err != nil {
		return nil, err
	}
	for _, st := range stanzas(out) {
		c := kernelCandidate{pkg: st["Package"], version: st["Version"], state: s}
		if c.series = kernelImageSeries(c.pkg, s.arch); c.series == "" || c.version == "" {
			continue
		}
		if old, ok := best[c.series]; !ok || versionGreater(c.version, old.version) {
			best[c.series] = c
		}
	}
	return best, nil
}

// resolveKernel finds the kernel package of series (or NewestKernel) for
// arch: the newest package of the series in the first release of
// debianReleases that serves it.
func (e *env) resolveKernel(series string, arch *guestArch) (kernelCandidate, error) {
	var newest kernelCandidate
	var served []string
	// A release that cannot be read fails the look-up: taking the series
	// from a later release instead would boot another kernel (bullseye
	// has a 6.1 too).
	for i := range debianReleases {
		s := e.aptState(arch.name, &debianReleases[i])
		if err := e.ready(s); err != nil {
			return kernelCandidate{}, fmt.Errorf("cannot find the %s kernel of series %s: %w", arch.name, series, err)
		}
		cands, err := e.kernelCandidates(s)
		if err != nil {
			return kernelCandidate{}, fmt.Errorf("cannot find the %s kernel of series %s: %w", arch.name, series, err)
		}
		if c, ok := cands[series]; ok {
			return c, nil
		}
		for ser, c := range cands {
			served = append(served, ser)
			if series == NewestKernel && (newest.pkg == "" || versionGreater(c.version, newest.version)) {
				newest = c
			}
		}
	}
	if newest.pkg != "" {
		return newest, nil
	}
	return kernelCandidate{}, fmt.Errorf("no Debian release the lab reads (%s) serves an %s kernel of series %s; served: %s",
		releaseNames(), arch.name, series, strings.Join(sortSeries(served), ", "))
}

func releaseNames() string {
	var n []string
	for _, r := range debianReleases {
		n = append(n, r.name)
	}
	return strings.Join(n, ", ")
}

// sortSeries sorts series numerically and drops duplicates.
func sortSeries(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		var a1, a2, b1, b2 int
		fmt.Sscanf(out[i], "%d.%d", &a1, &a2)
		fmt.Sscanf(out[j], "%d.%d", &b1, &b2)
		return a1 < b1 || (a1 == b1 && a2 < b2)
	})
	return out
}

// kernel is an unpacked kernel in the cache: the bzImage and the modules the
// guest loads, uncompressed, with the order to load them in.
type kernel struct {
	pkg     string // e.g. linux-image-6.1.0-56-amd64
	release string // uname -r
	version string // the package's Debian version, e.g. 6.1.192-2
	debian  string // the Debian release it came from (debianReleases)
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
const cacheLayout = "6"

// kernelPackage resolves the kernel package of a series. Without apt data it
// falls back to the newest kernel of the series already in the cache.
func (e *env) kernelPackage(series string, arch *guestArch) (kernelCandidate, error) {
	c, err := e.resolveKernel(series, arch)
	if err == nil {
		return c, nil
	}
	ents, _ := os.ReadDir(filepath.Join(e.cache, "kernels"))
	var found *kernel
	for _, ent := range ents {
		pkg, hash, _ := strings.Cut(ent.Name(), "@")
		s := kernelImageSeries(pkg, arch.name)
		if s == "" || hash != moduleSetHash() || (series != NewestKernel && s != series) {
			continue
		}
		k := &kernel{pkg: pkg, dir: filepath.Join(e.cache, "kernels", ent.Name())}
		if k.load() == nil && (found == nil || versionGreater(k.version, found.version)) {
			found = k
		}
	}
	if found == nil {
		return kernelCandidate{}, fmt.Errorf("%w (the cache holds no kernel of that series either)", err)
	}
	e.logf("warning: %v; using cached %s %s", err, found.pkg, found.version)
	return kernelCandidate{pkg: found.pkg, version: found.version, series: kernelImageSeries(found.pkg, arch.name),
		state: e.aptState(arch.name, releaseNamed(found.debian))}, nil
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
	c, err := e.kernelPackage(series, arch)
	if err != nil {
		return nil, err
	}
	k := &kernel{pkg: c.pkg, key: c.pkg + "@" + moduleSetHash()}
	k.dir = filepath.Join(e.cache, "kernels", k.key)
	if k.load() == nil && k.version == c.version {
		return k, nil
	}
	unlock, err := e.lockFile("kernel-" + c.pkg)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if k.load() == nil && k.version == c.version {
		return k, nil
	}
	if err := e.buildKernel(k, c, arch); err != nil {
		return nil, fmt.Errorf("preparing %s %s: %w", c.pkg, c.version, err)
	}
	return k, k.load()
}

func (k *kernel) load() error {
	for _, f := range []struct {
		name string
		v    *string
	}{{"release", &k.release}, {"version", &k.version}, {"debian", &k.debian}} {
		b, err := os.ReadFile(filepath.Join(k.dir, f.name))
		if err != nil {
			return err
		}
		*f.v = strings.TrimSpace(string(b))
	}
	if releaseNamed(k.debian) == nil {
		return fmt.Errorf("%s: unknown Debian release %q", k.dir, k.debian)
	}
	_, err := os.Stat(k.vmlinuz())
	return err
}

// kernelPackageFiles returns the packages that hold a kernel's files, as
// apt-get download arguments: the image package itself and, from 7.x on,
// where Debian's image package is empty, the linux-binary-, linux-modules-
// and linux-base- packages of its release that it depends on (with the
// vmlinuz, the modules and modules.builtin). linux-base without a release
// (Debian's kernel scripts) is not one of them.
func kernelPackageFiles(c kernelCandidate, depends string) []string {
	pkgs := []string{c.pkg + "=" + c.version}
	for _, d := range strings.Split(depends, ",") {
		name, cons, _ := strings.Cut(strings.TrimSpace(d), " ")
		for _, p := range []string{"linux-binary-", "linux-modules-", "linux-base-"} {
			if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
				if strings.TrimSpace(cons) == "(= "+c.version+")" {
					name += "=" + c.version
				}
				pkgs = append(pkgs, name)
			}
		}
	}
	return pkgs
}

// findKernelFiles returns the release and the module and vmlinuz paths in
// an unpacked kernel: lib/modules/REL and boot/vmlinuz-REL up to 6.x,
// usr/lib/modules/REL with its vmlinuz in 7.x's split packages.
func findKernelFiles(root string) (release, modDir, vmlinuz string, err error) {
	for _, base := range []string{"lib/modules", "usr/lib/modules"} {
		rels, _ := os.ReadDir(filepath.Join(root, base))
		if len(rels) == 0 {
			continue
		}
		if len(rels) != 1 {
			return "", "", "", fmt.Errorf("expected one directory in %s, found %d", base, len(rels))
		}
		release = rels[0].Name()
		modDir = filepath.Join(root, base, release)
		for _, v := range []string{filepath.Join(root, "boot", "vmlinuz-"+release), filepath.Join(modDir, "vmlinuz")} {
			if fileExists(v) {
				return release, modDir, v, nil
			}
		}
		return "", "", "", fmt.Errorf("no boot/vmlinuz-%s and no %s/%s/vmlinuz", release, base, release)
	}
	return "", "", "", fmt.Errorf("no lib/modules or usr/lib/modules directory")
}

func (e *env) buildKernel(k *kernel, c kernelCandidate, arch *guestArch) error {
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

	show, err := c.state.cacheOutput("show", c.pkg+"="+c.version)
	if err != nil {
		return err
	}
	var depends string
	if st := stanzas(show); len(st) > 0 {
		depends = st[0]["Depends"]
	}
	// A split package the archive does not serve is left out: Debian's
	// 6.18 image depends on a linux-base-REL that trixie-backports lacks,
	// and holds every file itself. What is missing shows below, when the
	// unpacked tree has no kernel or modules.
	var pkgs []string
	for i, p := range kernelPackageFiles(c, depends) {
		if i > 0 {
			if out, err := c.state.cacheOutput("show", p); err != nil || len(stanzas(out)) == 0 {
				e.logf("%s depends on %s, which %s does not serve; going on without it", c.pkg, p, c.state)
				continue
			}
		}
		pkgs = append(pkgs, p)
	}
	e.logf("downloading %s from %s ...", strings.Join(pkgs, " "), c.state)
	if err := e.download(c.state, tmp, pkgs...); err != nil {
		return err
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != len(pkgs) {
		return fmt.Errorf("apt-get download of %d packages left %d .deb files", len(pkgs), len(debs))
	}
	root := filepath.Join(tmp, "root")
	for _, deb := range debs {
		e.logf("unpacking %s ...", filepath.Base(deb))
		if err := e.run(tmp, "dpkg-deb", "-x", deb, root); err != nil {
			return err
		}
		os.Remove(deb)
	}
	release, modDir, vmlinuz, err := findKernelFiles(root)
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(pkgs, " "), err)
	}

	out := filepath.Join(tmp, "out")
	if err := os.MkdirAll(filepath.Join(out, "modules"), 0o755); err != nil {
		return err
	}
	if err := os.Rename(vmlinuz, filepath.Join(out, "vmlinuz")); err != nil {
		return err
	}
	if arch.elfOK {
		e.writeVmlinux(filepath.Join(out, "vmlinuz"), filepath.Join(out, "vmlinux"))
	}
	tree, err := openModuleTree(modDir)
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
	// The version pins the headers and sources siw.ko is built from
	// (siw.go), and the Debian release says which apt state serves them.
	for name, v := range map[string]string{"release": release, "version": c.version, "debian": c.state.rel.name} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(v+"\n"), 0o644); err != nil {
			return err
		}
	}
	os.RemoveAll(k.dir) // a stale, incomplete entry; we hold the lock
	return os.Rename(out, k.dir)
}
