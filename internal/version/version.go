package version

import (
	"fmt"
	"os"
	"runtime/debug"
)

// Set by make dist with -ldflags -X (the Makefile's VERSION, REVISION and
// MODIFIED): make builds with -buildvcs=false, so the toolchain records no
// commit of its own there.
var (
	version  string // a release tag, or the next release's version with -dev
	revision string // the commit's hash
	modified string // "true" when the work tree had uncommitted changes
)

// stamp is what a binary knows of its origin.
type stamp struct {
	version  string
	revision string
	modified bool
}

// String returns the running program's version, then its commit when
// known: "v0.1.0", "v0.1.0-dev (commit 0123456789ab)" or
// "v0.1.0-dev (commit 0123456789ab, modified)"; "(devel)" when neither make
// nor the toolchain recorded a version.
func String() string {
	bi, _ := debug.ReadBuildInfo()
	return resolve(stamp{version, revision, modified == "true"}, bi).String()
}

// resolve completes s, the linker's stamp, from the build information bi
// (nil when there is none): the module version, and the commit and its
// state from the vcs.* settings when s has no commit.
func resolve(s stamp, bi *debug.BuildInfo) stamp {
	if bi == nil {
		return s
	}
	if s.version == "" {
		s.version = bi.Main.Version
	}
	if s.revision == "" {
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				s.revision = kv.Value
			case "vcs.modified":
				s.modified = kv.Value == "true"
			}
		}
	}
	return s
}

func (s stamp) String() string {
	v := s.version
	if v == "" {
		v = "(devel)"
	}
	if s.revision == "" {
		return v
	}
	rev := s.revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if s.modified {
		return fmt.Sprintf("%s (commit %s, modified)", v, rev)
	}
	return fmt.Sprintf("%s (commit %s)", v, rev)
}

// Requested reports whether args, a command line without the program name,
// asks for the version: -version or --version as its only argument.
func Requested(args []string) bool {
	return len(args) == 1 && (args[0] == "-version" || args[0] == "--version")
}

// Handle prints "prog VERSION" on stdout and exits with status 0 when the
// process's command line asks for the version (Requested). Each program
// calls it first in main, before its own flags are parsed, so that every
// program answers -version alike whatever its command-line syntax.
func Handle(prog string) {
	if Requested(os.Args[1:]) {
		fmt.Println(prog, String())
		os.Exit(0)
	}
}
