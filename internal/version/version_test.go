package version

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(rev, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/goverbs/rdma", Version: "(devel)"}}
		bi.Settings = []debug.BuildSetting{{Key: "CGO_ENABLED", Value: "0"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
		return bi
	}
	for _, c := range []struct {
		name  string
		stamp stamp
		bi    *debug.BuildInfo
		want  string
	}{
		{"nothing known", stamp{}, nil, "(devel)"},
		{"make dist, tag", stamp{"v0.1.0", rev, false}, vcs("", ""), "v0.1.0 (commit 0123456789ab)"},
		{"make dist, dirty", stamp{"v0.1.0-dev", rev, true}, vcs("", ""), "v0.1.0-dev (commit 0123456789ab, modified)"},
		// The linker's stamp wins over the toolchain's record.
		{"stamp over vcs", stamp{"v0.2.0", "fedcba9876543210", false}, vcs(rev, "true"), "v0.2.0 (commit fedcba987654)"},
		{"go build with vcs", stamp{}, vcs(rev, "true"), "(devel) (commit 0123456789ab, modified)"},
		{"go build with vcs, clean", stamp{}, vcs(rev, "false"), "(devel) (commit 0123456789ab)"},
		{"go install @version", stamp{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0"},
		{"make without git", stamp{version: "v0.1.0-dev"}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v0.1.0-dev"},
		{"short revision", stamp{"v0.1.0", "abc1234", false}, nil, "v0.1.0 (commit abc1234)"},
	} {
		if got := resolve(c.stamp, c.bi).String(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRequested(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"-version"}, true},
		{[]string{"--version"}, true},
		{nil, false},
		{[]string{"-v"}, false},
		{[]string{"-version", "-s"}, false}, // left to the program's own flags
		{[]string{"-s", "-version"}, false},
		{[]string{"version"}, false},
	} {
		if got := Requested(c.args); got != c.want {
			t.Errorf("Requested(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
