//go:build linux

package lab

import (
	"bytes"
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

// userlandPackages are the Debian packages of a foreign guest's userland,
// with everything they depend on: a shell and the few tools tests run
// (sh, sleep, true, uname, taskset), iproute2's rdma, python3 for the
// rsocket preload tests, rdma-core's libraries, provider and tools, and
// nvme-cli and fio for the NVMe over RDMA tests (internal/nvmetest). The
// guest's /etc is the host's, so nvme-cli reads the host NQN that the
// host's own nvme-cli package wrote (hostPackages).
var userlandPackages = []string{
	"dash", "coreutils", "util-linux", "grep", "sed",
	"iproute2",
	"python3",
	"libibverbs1", "ibverbs-providers", "ibverbs-utils",
	"librdmacm1", "rdmacm-utils", "perftest",
	"nvme-cli", "fio",
}

// userlandLayout changes when the layout of a built userland changes.
const userlandLayout = "2"

// mergedUsr are the top-level directories that are symbolic links into /usr
// on Debian 12 and later (the merged /usr); the packages still ship files
// under them.
var mergedUsr = []string{"bin", "sbin", "lib"}

// userland returns the /usr tree of a foreign guest's userland, building it
// once: the dependency closure of userlandPackages (apt-cache depends
// --recurse, without recommends or suggests) in the guest's architecture,
// from Debian 12 through the lab's own apt state (apt.go), downloaded with apt-get download and unpacked with dpkg-deb into a merged
// /usr. The guest mounts it over the host's /usr (and with it /bin, /sbin
// and /lib); no maintainer scripts run, which none of the tools need.
func (e *env) userland(arch *guestArch) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n", userlandLayout, arch.name, strings.Join(userlandPackages, " "))
	dir := filepath.Join(e.cache, "userland", arch.name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	usr := filepath.Join(dir, "root", "usr")
	if fileExists(filepath.Join(dir, "packages")) {
		return usr, nil
	}
	unlock, err := e.lockFile("userland-" + arch.name)
	if err != nil {
		return "", err
	}
	defer unlock()
	if fileExists(filepath.Join(dir, "packages")) {
		return usr, nil
	}
	if err := e.buildUserland(arch, dir); err != nil {
		return "", fmt.Errorf("building the %s userland: %w", arch.name, err)
	}
	return usr, nil
}

func (e *env) buildUserland(arch *guestArch, dir string) error {
	st := e.aptState(arch.name, releaseNamed(userlandRelease))
	if err := e.ready(st); err != nil {
		return err
	}
	pkgs, err := e.aptClosure(st.opts(), userlandPackages)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "tmp-*"))
	for _, p := range old {
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(p)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	debDir := filepath.Join(tmp, "debs")
	if err := os.Mkdir(debDir, 0o755); err != nil {
		return err
	}
	e.logf("downloading the %s userland (%d packages) ...", arch.name, len(pkgs))
	if err := e.download(st, debDir, pkgs...); err != nil {
		return err
	}
	debs, _ := filepath.Glob(filepath.Join(debDir, "*.deb"))
	if len(debs) != len(pkgs) {
		return fmt.Errorf("apt-get download of %d packages left %d .deb files", len(pkgs), len(debs))
	}
	sort.Strings(debs)
	out := filepath.Join(tmp, "out")
	root := filepath.Join(out, "root")
	for _, d := range mergedUsr {
		if err := os.MkdirAll(filepath.Join(root, "usr", d), 0o755); err != nil {
			return err
		}
		if err := os.Symlink("usr/"+d, filepath.Join(root, d)); err != nil {
			return err
		}
	}
	e.logf("unpacking the %s userland ...", arch.name)
	var list strings.Builder
	for _, deb := range debs {
		if err := unpackDeb(deb, root); err != nil {
			return err
		}
		list.WriteString(filepath.Base(deb) + "\n")
	}
	// dash's postinst makes /bin/sh; no maintainer scripts run here.
	sh := filepath.Join(root, "usr", "bin", "sh")
	if _, err := os.Lstat(sh); err != nil {
		if err := os.Symlink("dash", sh); err != nil {
			return err
		}
	}
	// Only /usr goes to the guest: files the packages put elsewhere (/etc,
	// /var) are the host's there.
	if err := os.WriteFile(filepath.Join(out, "packages"), []byte(list.String()), 0o644); err != nil {
		return err
	}
	os.RemoveAll(dir) // a stale, incomplete entry; we hold the lock
	return os.Rename(out, dir)
}

// aptClosure returns roots and every package they depend on, recursively
// (Depends and Pre-Depends), as apt-cache depends lists them; virtual
// packages (<name>) are left out, their providers are listed.
func (e *env) aptClosure(aptOpts, roots []string) ([]string, error) {
	args := append(append([]string{}, aptOpts...), "depends", "--recurse",
		"--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
		"--no-replaces", "--no-enhances")
	args = append(args, roots...)
	out, err := exec.Command("apt-cache", args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("apt-cache depends --recurse: %v: %s", err, tail(out, 20))
	}
	seen := map[string]bool{}
	var pkgs []string
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" || line[0] == ' ' || line[0] == '<' {
			continue
		}
		name := strings.TrimSpace(line)
		if !seen[name] {
			seen[name] = true
			pkgs = append(pkgs, name)
		}
	}
	sort.Strings(pkgs)
	for _, r := range roots {
		if !seen[r] {
			return nil, fmt.Errorf("apt-cache knows no package %s (check apt sources)", r)
		}
	}
	return pkgs, nil
}

// unpackDeb unpacks the files of a .deb into root with dpkg-deb
// --fsys-tarfile and tar. --keep-directory-symlink keeps root's /bin, /sbin
// and /lib links into /usr (dpkg-deb -x would replace them with
// directories).
func unpackDeb(deb, root string) error {
	dpkg := exec.Command("dpkg-deb", "--fsys-tarfile", deb)
	tar := exec.Command("tar", "-x", "--keep-directory-symlink", "--no-same-owner", "-C", root)
	pipe, err := dpkg.StdoutPipe()
	if err != nil {
		return err
	}
	tar.Stdin = pipe
	var dErr, tErr bytes.Buffer
	dpkg.Stderr, tar.Stderr = &dErr, &tErr
	if err := dpkg.Start(); err != nil {
		return err
	}
	terr := tar.Run()
	derr := dpkg.Wait()
	if derr != nil {
		return fmt.Errorf("dpkg-deb --fsys-tarfile %s: %v: %s", filepath.Base(deb), derr, strings.TrimSpace(dErr.String()))
	}
	if terr != nil {
		return fmt.Errorf("tar -x of %s: %v: %s", filepath.Base(deb), terr, strings.TrimSpace(tErr.String()))
	}
	return nil
}
