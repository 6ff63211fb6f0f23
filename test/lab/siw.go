//go:build linux

package lab

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Debian's kernels are built without CONFIG_RDMA_SIW, so the lab builds
// siw.ko (soft-iWARP, drivers/infiniband/sw/siw) itself for the kernel it
// boots: the kernel's own linux-headers package (with the -common headers
// and linux-kbuild it depends on) and the linux-source package of the same
// version are fetched with apt-get download and unpacked with dpkg-deb into
// the cache, nothing is installed, and only siw's directory is built out of
// tree:
//
//	make -C <headers> M=<siw> CONFIG_RDMA_SIW=m CONFIG_DEBUG_INFO_BTF_MODULES= modules
//
// with the compiler the headers name (.kernelvariables: gcc-12 for Debian
// 12's kernels). BTF is left out: it needs pahole, and a module without BTF
// loads all the same. The module is checked to carry the vermagic of the
// kernel's own modules, so that init_module cannot refuse it. Being
// unsigned and out of tree, it taints the guest kernel (flags O and E), which
// the lab's tests do not mind.
//
// Everything is kept beside the kernel in the cache: the downloaded header
// packages and siw's sources in siw-inputs, the module in siw-<hash>, where
// the hash covers siwRecipe and the kernel package and version, so a warm
// run neither downloads nor builds.

// siwRecipe changes whenever the way siw.ko is built changes.
const siwRecipe = "siw-1: headers+kbuild+source of the image version; make M=siw CONFIG_RDMA_SIW=m CONFIG_DEBUG_INFO_BTF_MODULES="

// siwPackages are the host packages the build needs beyond hostPackages:
// make, the compiler Debian 12 builds its kernels with (linux-headers'
// Depends: linux-compiler-gcc-12-x86 on 6.1, gcc-12 on 6.12), and libelf1
// for linux-kbuild's objtool, which runs on every x86 module (its other
// libraries, libc6, zlib1g and libssl3, are on every Debian 12 system).
// linux-kbuild is unpacked, not installed, so apt does not pull them in.
var siwPackages = []string{"make", "gcc-12", "libelf1"}

// siwKO returns the path of siw.ko for k, building it when the cache has
// none.
func (e *env) siwKO(k *kernel) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", siwRecipe, k.pkg, k.version)
	dir := filepath.Join(k.dir, "siw-"+hex.EncodeToString(h.Sum(nil))[:12])
	ko := filepath.Join(dir, "siw.ko")
	if fileExists(ko) {
		return ko, nil
	}
	unlock, err := e.lockFile("siw-" + k.pkg)
	if err != nil {
		return "", err
	}
	defer unlock()
	if fileExists(ko) {
		return ko, nil
	}
	// A kernel whose compiler this host cannot install was found so before:
	// say so again without unpacking the headers, unless it is there now.
	// Headers the archive does not serve stay so for this version (dir
	// names it).
	noneFile := dir + ".none"
	if b, err := os.ReadFile(noneFile); err == nil {
		cc, why, _ := strings.Cut(string(b), "\n")
		if _, err := exec.LookPath(cc); cc == "" || err != nil {
			return "", &SiwUnavailableError{Release: k.release, Why: strings.TrimSpace(why), cc: cc}
		}
	}
	start := time.Now()
	if err := e.buildSiw(k, dir); err != nil {
		var none *SiwUnavailableError
		if errors.As(err, &none) {
			// Written only after the lists were fetched again this run
			// (siwInputs), so that an offline run records nothing.
			none.Why += " (recorded in " + noneFile + ")"
			os.WriteFile(noneFile, []byte(none.cc+"\n"+none.Why+"\n"), 0o644)
			return "", err
		}
		return "", fmt.Errorf("building siw.ko (soft-iWARP) for %s: %w\n(rxelab -no-siw boots without siw)", k.release, err)
	}
	e.logf("built siw.ko for %s in %.0fs", k.release, time.Since(start).Seconds())
	return ko, nil
}

// SiwUnavailableError says why the lab cannot build siw.ko for a kernel:
// the archive no longer serves the kernel's headers at its version (a
// backports suite keeps only its newest kernel's), or they name a compiler
// that this host's apt sources do not serve (the kernels of another Debian
// release, built with its gcc). The lab then boots without siw.
type SiwUnavailableError struct {
	Release string // the kernel release
	Why     string
	cc      string
}

func (e *SiwUnavailableError) Error() string {
	return fmt.Sprintf("no siw for %s: %s", e.Release, e.Why)
}

// compiler makes sure the compiler cc, as the headers name it
// (x86_64-linux-gnu-gcc-14 or gcc-12), is installed: when it is not, and
// the host's apt serves it, it is installed as the lab installs its other
// packages. A module built by another compiler than the kernel's is not
// what the kernel's own build would make, so none is substituted.
func (e *env) compiler(cc string) error {
	if _, err := exec.LookPath(cc); err == nil {
		return nil
	}
	pkg := strings.TrimPrefix(cc, "x86_64-linux-gnu-")
	candidate := func() string {
		out, _ := exec.Command("apt-cache", "policy", pkg).Output()
		if m := regexp.MustCompile(`(?m)^\s*Candidate: (\S+)`).FindSubmatch(out); m != nil && string(m[1]) != "(none)" {
			return string(m[1])
		}
		return ""
	}
	cand := candidate()
	if cand == "" && os.Geteuid() == 0 && e.aptUpdate() == nil {
		cand = candidate()
	}
	if cand == "" {
		return &SiwUnavailableError{cc: cc, Why: fmt.Sprintf("its headers build with %s (their .kernelvariables), and this host's apt sources serve no %s package; a host of the kernel's own Debian release could build it", cc, pkg)}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("the kernel headers build with %s, which is not installed; install it with: sudo apt-get install -y %s", cc, pkg)
	}
	unlock, err := e.lockFile("apt")
	if err != nil {
		return err
	}
	defer unlock()
	e.logf("installing %s %s for siw.ko ...", pkg, cand)
	if err := e.apt("install", "-y", "--no-install-recommends", pkg); err != nil {
		return fmt.Errorf("installing %s for siw.ko: %w", pkg, err)
	}
	if _, err := exec.LookPath(cc); err != nil {
		return fmt.Errorf("apt-get installed %s, but there is no %s: %w", pkg, cc, err)
	}
	return nil
}

// siwInputs are the downloaded inputs of the build, kept in the cache.
type siwInputs struct {
	debs []string // linux-headers-*, linux-headers-*-common, linux-kbuild-*
	src  string   // drivers/infiniband/sw/siw of linux-source
}

func (e *env) buildSiw(k *kernel, out string) error {
	if k.version == "" {
		return errors.New("the cached kernel has no recorded package version")
	}
	in, err := e.siwInputs(k)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(k.dir, "tmp-siw-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "root")
	for _, d := range in.debs {
		if err := e.run(tmp, "dpkg-deb", "-x", d, root); err != nil {
			return err
		}
	}
	headers := filepath.Join(root, "usr/src/linux-headers-"+k.release)
	if err := rootIncludes(filepath.Join(headers, "Makefile"), root); err != nil {
		return err
	}
	cc, err := headersCompiler(headers)
	if err != nil {
		return err
	}
	if err := e.compiler(cc); err != nil {
		if none, ok := err.(*SiwUnavailableError); ok {
			none.Release = k.release
		}
		return err
	}
	if _, err := exec.LookPath("make"); err != nil {
		return errors.New("make is not installed; install it with: apt-get install -y make")
	}
	build := filepath.Join(tmp, "siw")
	if err := copyDir(in.src, build); err != nil {
		return err
	}
	e.logf("building siw.ko for %s ...", k.release)
	if err := e.run(build, "make", "-C", headers, "M="+build,
		"CONFIG_RDMA_SIW=m", "CONFIG_DEBUG_INFO_BTF_MODULES=", "modules"); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(build, "siw.ko"))
	if err != nil {
		return fmt.Errorf("make did not leave siw.ko: %w", err)
	}
	if err := checkVermagic(data, k); err != nil {
		return err
	}
	res := filepath.Join(tmp, "out")
	if err := os.Mkdir(res, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(res, "siw.ko"), data, 0o644); err != nil {
		return err
	}
	os.RemoveAll(out) // a stale, incomplete entry; we hold the lock
	return os.Rename(res, out)
}

// siwInputs downloads the header packages and siw's sources of k's version
// once, into k.dir/siw-inputs.
func (e *env) siwInputs(k *kernel) (*siwInputs, error) {
	dir := filepath.Join(k.dir, "siw-inputs")
	load := func() (*siwInputs, error) {
		debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
		src := filepath.Join(dir, "siw")
		if len(debs) < 3 || !fileExists(filepath.Join(src, "Makefile")) {
			return nil, errors.New("incomplete")
		}
		return &siwInputs{debs: debs, src: src}, nil
	}
	if in, err := load(); err == nil {
		return in, nil
	}
	tmp, err := os.MkdirTemp(k.dir, "tmp-siw-inputs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	st := e.aptState(ArchAMD64, releaseNamed(k.debian))
	if err := e.ready(st); err != nil {
		return nil, err
	}
	headers := "linux-headers-" + k.release
	pkgs, err := headerPackages(st, headers, k.version)
	if err != nil {
		if uerr := e.update(st); uerr != nil {
			return nil, err
		}
		if pkgs, err = headerPackages(st, headers, k.version); err != nil {
			// Backports suites keep the headers of their newest kernel
			// only, while older signed images stay (trixie-backports:
			// 6.18.15's image, no 6.18 headers).
			why := fmt.Sprintf("%s does not serve its headers, %s %s", st, headers, k.version)
			if strings.HasSuffix(st.rel.name, "-backports") {
				why += " (a backports suite keeps its newest kernel's headers only)"
			}
			return nil, &SiwUnavailableError{Release: k.release, Why: why}
		}
	}
	series, err := kernelSeries(k.release)
	if err != nil {
		return nil, err
	}
	source := "linux-source-" + series + "=" + k.version
	e.logf("downloading %s %s from %s ...", strings.Join(pkgs, " "), source, st)
	if err := e.download(st, tmp, append(pkgs, source)...); err != nil {
		return nil, fmt.Errorf("%w\nthe headers or sources of the cached kernel %s %s may have left the archive (Debian can replace a kernel under the same package name); remove %s and the lab downloads the current one", err, k.pkg, k.version, k.dir)
	}
	srcDebs, _ := filepath.Glob(filepath.Join(tmp, "linux-source-*.deb"))
	if len(srcDebs) != 1 {
		return nil, fmt.Errorf("apt-get download %s left %d .deb files", source, len(srcDebs))
	}
	e.logf("extracting drivers/infiniband/sw/siw from %s ...", filepath.Base(srcDebs[0]))
	if err := extractSiwSource(srcDebs[0], filepath.Join(tmp, "siw")); err != nil {
		return nil, err
	}
	if err := os.Remove(srcDebs[0]); err != nil {
		return nil, err
	}
	os.RemoveAll(dir) // a stale, incomplete entry; the caller holds the lock
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return load()
}

// headerPackages returns the packages to download for the headers package
// of version v, as apt-get download arguments: the package itself and the
// linux-headers-* and linux-kbuild-* packages it depends on, pinned to v
// where the dependency is "(= v)" (the -common headers), else apt's
// candidate (linux-kbuild-6.1 (>= v) is not always served at v).
func headerPackages(st *aptState, headers, v string) ([]string, error) {
	out, err := st.cacheOutput("show", headers+"="+v)
	if err != nil {
		return nil, err
	}
	pkgs := []string{headers + "=" + v}
	for _, line := range strings.Split(string(out), "\n") {
		deps, ok := strings.CutPrefix(line, "Depends:")
		if !ok {
			continue
		}
		for _, d := range strings.Split(deps, ",") {
			d = strings.TrimSpace(d)
			if strings.Contains(d, "|") {
				continue
			}
			name, cons, _ := strings.Cut(d, " ")
			if !strings.HasPrefix(name, "linux-headers-") && !strings.HasPrefix(name, "linux-kbuild-") {
				continue
			}
			if strings.TrimSpace(cons) == "(= "+v+")" {
				name += "=" + v
			}
			pkgs = append(pkgs, name)
		}
		break
	}
	if len(pkgs) < 3 {
		return nil, fmt.Errorf("%s=%s depends on no linux-headers-*-common and linux-kbuild-* package", headers, v)
	}
	return pkgs, nil
}

// kernelSeries turns a release (6.1.0-56-amd64, 6.12.117+deb12-amd64) into
// the suffix of its linux-source package (6.1, 6.12).
func kernelSeries(release string) (string, error) {
	m := regexp.MustCompile(`^(\d+\.\d+)[.-]`).FindStringSubmatch(release)
	if m == nil {
		return "", fmt.Errorf("kernel release %q has no major.minor", release)
	}
	return m[1], nil
}

// extractSiwSource copies drivers/infiniband/sw/siw out of the
// linux-source-X.Y.tar.xz inside deb into dir. Only that directory is
// written, although the whole archive is decompressed (xz -dc).
func extractSiwSource(deb, dir string) error {
	fsys := exec.Command("dpkg-deb", "--fsys-tarfile", deb)
	var fsysErr bytes.Buffer
	fsys.Stderr = &fsysErr
	debTar, err := fsys.StdoutPipe()
	if err != nil {
		return err
	}
	if err := fsys.Start(); err != nil {
		return err
	}
	defer fsys.Wait()
	defer debTar.Close()
	tr := tar.NewReader(debTar)
	for {
		h, err := tr.Next()
		if err != nil {
			return fmt.Errorf("%s has no usr/src/linux-source-*.tar.xz: %v %s", deb, err, strings.TrimSpace(fsysErr.String()))
		}
		if strings.HasPrefix(h.Name, "./usr/src/linux-source-") && strings.HasSuffix(h.Name, ".tar.xz") {
			break
		}
	}
	xz := exec.Command("xz", "-dc")
	xz.Stdin = tr
	var xzErr bytes.Buffer
	xz.Stderr = &xzErr
	srcTar, err := xz.StdoutPipe()
	if err != nil {
		return err
	}
	if err := xz.Start(); err != nil {
		return fmt.Errorf("xz: %w", err)
	}
	const sub = "/drivers/infiniband/sw/siw/"
	n := 0
	sr := tar.NewReader(srcTar)
	for {
		h, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			xz.Process.Kill()
			xz.Wait()
			return fmt.Errorf("reading the kernel source archive: %v %s", err, strings.TrimSpace(xzErr.String()))
		}
		i := strings.Index(h.Name, sub)
		if i < 0 || h.Typeflag != tar.TypeReg || strings.Count(h.Name, "/") != strings.Count(h.Name[:i]+sub, "/") {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(sr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, h.Name[i+len(sub):]), data, 0o644); err != nil {
			return err
		}
		n++
	}
	if err := xz.Wait(); err != nil {
		return fmt.Errorf("xz -dc: %v: %s", err, strings.TrimSpace(xzErr.String()))
	}
	if n == 0 || !fileExists(filepath.Join(dir, "Makefile")) {
		return fmt.Errorf("%s holds no drivers/infiniband/sw/siw", deb)
	}
	return nil
}

// rootIncludes points the headers' absolute includes
// (include /usr/src/linux-headers-...-common/Makefile) into root, where the
// packages were unpacked instead of installed.
func rootIncludes(makefile, root string) error {
	b, err := os.ReadFile(makefile)
	if err != nil {
		return fmt.Errorf("the headers package has no Makefile: %w", err)
	}
	fixed := regexp.MustCompile(`(?m)^include /`).ReplaceAll(b, []byte("include "+root+"/"))
	return os.WriteFile(makefile, fixed, 0o644)
}

// headersCompiler returns the compiler the headers' .kernelvariables name:
// CC = ... $(CROSS_COMPILE)gcc-12, with CROSS_COMPILE = x86_64-linux-gnu-
// on 6.12, and on 6.1 set only for cross builds (to
// $(DEB_HOST_GNU_TYPE)-, which is not ours).
func headersCompiler(headers string) (string, error) {
	b, err := os.ReadFile(filepath.Join(headers, ".kernelvariables"))
	if err != nil {
		return "", fmt.Errorf("the headers package has no .kernelvariables: %w", err)
	}
	cross := ""
	if m := regexp.MustCompile(`(?m)^override CROSS_COMPILE = ([^$\s]+)$`).FindSubmatch(b); m != nil {
		cross = string(m[1])
	}
	m := regexp.MustCompile(`(?m)^CC = .*\$\(CROSS_COMPILE\)(\S+)$`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s/.kernelvariables names no compiler (CC = ...)", headers)
	}
	return cross + string(m[1]), nil
}

// checkVermagic compares the module's vermagic with that of a module of the
// kernel itself (ib_core, which siw needs): init_module refuses a module
// whose vermagic differs (kernel: kernel/module/main.c check_modinfo).
func checkVermagic(ko []byte, k *kernel) error {
	got, err := modinfo(ko)
	if err != nil {
		return fmt.Errorf("siw.ko: %w", err)
	}
	ref, err := os.ReadFile(filepath.Join(k.dir, "modules", "ib_core.ko"))
	if err != nil {
		return err
	}
	want, err := modinfo(ref)
	if err != nil {
		return fmt.Errorf("ib_core.ko: %w", err)
	}
	if len(got["vermagic"]) != 1 || len(want["vermagic"]) != 1 || got["vermagic"][0] != want["vermagic"][0] {
		return fmt.Errorf("siw.ko has vermagic %q, the kernel's modules %q", got["vermagic"], want["vermagic"])
	}
	return nil
}

// siwDeps returns the modules siw.ko needs loaded first (its depends=),
// each of which must be among the kernel's guest modules.
func siwDeps(ko []byte, k *kernel) ([]string, error) {
	info, err := modinfo(ko)
	if err != nil {
		return nil, fmt.Errorf("siw.ko: %w", err)
	}
	var deps []string
	for _, dep := range info["depends"] {
		for _, d := range strings.Split(dep, ",") {
			if d = strings.TrimSpace(d); d == "" {
				continue
			}
			if !fileExists(filepath.Join(k.dir, "modules", d+".ko")) {
				return nil, fmt.Errorf("siw.ko needs module %s, which the lab does not load (add it to guestModules in test/lab/modules.go)", d)
			}
			deps = append(deps, d)
		}
	}
	return deps, nil
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	for _, ent := range ents {
		if !ent.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, ent.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, ent.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
