//go:build linux

package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The lab reads Debian's package archive through apt states of its own, one
// per Debian release and guest architecture, in the cache
// (cache/apt/ARCH-RELEASE): each has its own sources list naming exactly
// that release's suites, its own package lists and an empty dpkg status.
// The host's sources and preferences are neither changed nor read, so a host
// that lists backports, testing or a third-party archive gives the lab the
// same packages as one that does not; apt.conf settings (a proxy, for
// example) still apply. No root is needed to read them.

// debianRelease is a Debian release and the suites of it the lab reads.
type debianRelease struct {
	name   string
	suites []debianSuite
}

// debianSuite is one suite: the archive (debian or debian-security, under
// the mirror) and the suite's name.
type debianSuite struct{ archive, suite string }

// debianReleases are the releases the lab looks a kernel series up in, in
// this order: a series is taken from the first release that serves it, so
// 6.1 and 6.12 stay Debian 12's kernels (the lab's default pair), 6.16 to
// 7.x come from trixie-backports, and 5.10 from bullseye (LTS).
var debianReleases = []debianRelease{
	{"bookworm", []debianSuite{{"debian", "bookworm"}, {"debian", "bookworm-updates"}, {"debian-security", "bookworm-security"}}},
	{"trixie", []debianSuite{{"debian", "trixie"}, {"debian", "trixie-updates"}, {"debian-security", "trixie-security"}}},
	{"trixie-backports", []debianSuite{{"debian", "trixie-backports"}}},
	{"sid", []debianSuite{{"debian", "sid"}}},
	{"bullseye", []debianSuite{{"debian", "bullseye"}, {"debian-security", "bullseye-security"}}},
}

// userlandRelease is the release a foreign guest's userland comes from: the
// host's (Debian 12), so that its rdma-core matches the tests' expectations
// and its C library the host's binaries.
const userlandRelease = "bookworm"

func releaseNamed(name string) *debianRelease {
	for i := range debianReleases {
		if debianReleases[i].name == name {
			return &debianReleases[i]
		}
	}
	return nil
}

// debianMirror is the archive's base URL; GOVERBS_LAB_DEBIAN_MIRROR
// replaces it (the debian and debian-security archives must lie under it).
func debianMirror() string {
	if m := os.Getenv("GOVERBS_LAB_DEBIAN_MIRROR"); m != "" {
		return strings.TrimRight(m, "/")
	}
	return "http://deb.debian.org"
}

// debianKeyring verifies every release the lab reads: Debian 12's
// debian-archive-keyring holds the keys of bullseye, bookworm, trixie and
// sid.
const debianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// aptListsMaxAge: older package lists are fetched again before a kernel is
// looked up, so that a new kernel of a series is found within a day.
const aptListsMaxAge = 24 * time.Hour

// aptState is one apt state of the lab.
type aptState struct {
	arch string
	rel  *debianRelease
	dir  string
}

func (e *env) aptState(arch string, rel *debianRelease) *aptState {
	return &aptState{arch: arch, rel: rel, dir: filepath.Join(e.cache, "apt", arch+"-"+rel.name)}
}

func (s *aptState) String() string { return s.rel.name + " (" + s.arch + ")" }

// opts are the apt-get and apt-cache options that select the state.
func (s *aptState) opts() []string {
	return []string{
		"-o", "APT::Architecture=" + s.arch,
		"-o", "APT::Architectures=" + s.arch,
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(s.dir, "sources.list"),
		"-o", "Dir::Etc::sourceparts=" + filepath.Join(s.dir, "sources.list.d"),
		"-o", "Dir::Etc::preferences=" + filepath.Join(s.dir, "preferences"),
		"-o", "Dir::Etc::preferencesparts=" + filepath.Join(s.dir, "preferences.d"),
		"-o", "Dir::State=" + filepath.Join(s.dir, "state"),
		"-o", "Dir::State::status=" + filepath.Join(s.dir, "state", "status"),
		"-o", "Dir::Cache=" + filepath.Join(s.dir, "cache"),
		"-o", "APT::Sandbox::User=root",
		"-o", "Acquire::Languages=none",
		// apt.conf's pin by release (a preference in all but name) would
		// rank the suites of a release apart.
		"-o", "APT::Default-Release=",
		// A failed fetch fails apt-get update (apt 2.6 exits 0 after a
		// transient one).
		"-o", "APT::Update::Error-Mode=any",
	}
}

// sourcesList is the state's sources.list: the release's suites, main
// only, and of each only its Packages index (not the translations or the
// AppStream metadata apt.conf.d may ask for).
func (s *aptState) sourcesList() string {
	var b strings.Builder
	for _, su := range s.rel.suites {
		fmt.Fprintf(&b, "deb [signed-by=%s target=Packages] %s/%s %s main\n", debianKeyring, debianMirror(), su.archive, su.suite)
	}
	return b.String()
}

// updatedStamp is touched after each successful apt-get update of a state:
// apt dates the list files by the archive's Last-Modified, not by when
// they were fetched.
func (s *aptState) updatedStamp() string { return filepath.Join(s.dir, "updated") }

// listsAge returns how long ago the state's package lists were fetched, and
// false when they never were.
func (s *aptState) listsAge() (time.Duration, bool) {
	m, _ := filepath.Glob(filepath.Join(s.dir, "state", "lists", "*_Packages*"))
	fi, err := os.Stat(s.updatedStamp())
	if len(m) == 0 || err != nil {
		return 0, false
	}
	return time.Since(fi.ModTime()), true
}

// onceErr is an action run at most once per process.
type onceErr struct {
	once sync.Once
	err  error
}

// update runs apt-get update for the state, at most once per process.
func (e *env) update(s *aptState) error {
	e.aptMu.Lock()
	if e.aptUpdates == nil {
		e.aptUpdates = map[string]*onceErr{}
	}
	o := e.aptUpdates[s.dir]
	if o == nil {
		o = &onceErr{}
		e.aptUpdates[s.dir] = o
	}
	e.aptMu.Unlock()
	o.once.Do(func() { o.err = e.updateState(s) })
	return o.err
}

func (e *env) updateState(s *aptState) error {
	for _, p := range []string{"state/lists/partial", "cache/archives/partial", "sources.list.d", "preferences.d"} {
		if err := os.MkdirAll(filepath.Join(s.dir, p), 0o755); err != nil {
			return err
		}
	}
	if !fileExists(debianKeyring) {
		return fmt.Errorf("%s is missing; install it with: apt-get install -y debian-archive-keyring", debianKeyring)
	}
	unlock, err := e.lockFile("apt-" + filepath.Base(s.dir))
	if err != nil {
		return err
	}
	defer unlock()
	// Another process may have fetched them while this one waited.
	if age, ok := s.listsAge(); ok && age < time.Minute {
		return nil
	}
	status := filepath.Join(s.dir, "state", "status")
	if !fileExists(status) {
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(s.dir, "sources.list"), []byte(s.sourcesList()), 0o644); err != nil {
		return err
	}
	e.logf("fetching the package lists of %s ...", s)
	if err := e.apt(append(s.opts(), "update")...); err != nil {
		return fmt.Errorf("apt-get update of %s: %w", s, err)
	}
	if m, _ := filepath.Glob(filepath.Join(s.dir, "state", "lists", "*_Packages*")); len(m) == 0 {
		return fmt.Errorf("apt-get update of %s fetched no package lists", s)
	}
	now := time.Now()
	if err := os.WriteFile(s.updatedStamp(), nil, 0o644); err != nil {
		return err
	}
	return os.Chtimes(s.updatedStamp(), now, now)
}

// ready makes sure the state has package lists, fetching them when it has
// none or they are older than aptListsMaxAge. Old lists are used, with a
// warning, when they cannot be fetched again (offline, for example).
func (e *env) ready(s *aptState) error {
	age, ok := s.listsAge()
	if ok && age < aptListsMaxAge {
		return nil
	}
	err := e.update(s)
	if err != nil && ok {
		e.logf("warning: %v; using the package lists of %s fetched %v ago", err, s, age.Round(time.Minute))
		return nil
	}
	return err
}

// cacheOutput runs apt-cache with the state's options.
func (s *aptState) cacheOutput(args ...string) ([]byte, error) {
	out, err := exec.Command("apt-cache", append(s.opts(), args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("apt-cache %s (%s): %v: %s", strings.Join(args, " "), s, err, tail(out, 10))
	}
	return out, nil
}

// download runs apt-get download of pkgs (name or name=version) into dir,
// fetching the lists again once if it fails (a package replaced in the
// archive since the lists were fetched).
func (e *env) download(s *aptState, dir string, pkgs ...string) error {
	dl := append(append(s.opts(), "download"), pkgs...)
	err := e.run(dir, "apt-get", dl...)
	if err == nil {
		return nil
	}
	if uerr := e.update(s); uerr != nil {
		return fmt.Errorf("%w\n(apt-get update of %s failed too: %v)", err, s, uerr)
	}
	return e.run(dir, "apt-get", dl...)
}

// stanzas parses apt-cache show output into one map per package stanza
// (the first line of each field; continuation lines are left out).
func stanzas(out []byte) []map[string]string {
	var all []map[string]string
	cur := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				all = append(all, cur)
				cur = map[string]string{}
			}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			cur[k] = strings.TrimSpace(v)
		}
	}
	if len(cur) > 0 {
		all = append(all, cur)
	}
	return all
}

// versionGreater reports whether Debian version a sorts after b (dpkg
// --compare-versions).
func versionGreater(a, b string) bool {
	return exec.Command("dpkg", "--compare-versions", a, "gt", b).Run() == nil
}
