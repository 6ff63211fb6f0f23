package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKernelImageSeries: the image packages of every naming Debian has
// used are found with their series; flavours, metapackages, debug symbols
// and other architectures are not.
func TestKernelImageSeries(t *testing.T) {
	for name, want := range map[string]string{
		"linux-image-5.10.0-32-amd64":           "5.10",
		"linux-image-6.1.0-57-amd64":            "6.1",
		"linux-image-6.1.0-0.deb11.48-amd64":    "6.1",
		"linux-image-6.12.118+deb12-amd64":      "6.12",
		"linux-image-6.18.15+deb13-amd64":       "6.18",
		"linux-image-7.3.4+deb13-amd64":         "7.3",
		"linux-image-6.12.12+bpo-amd64":         "6.12",
		"linux-image-7.3.4+deb13-arm64":         "",
		"linux-image-6.1.0-57-rt-amd64":         "",
		"linux-image-6.1.0-57-cloud-amd64":      "",
		"linux-image-6.1.0-57-amd64-dbg":        "",
		"linux-image-6.1.0-57-amd64-unsigned":   "",
		"linux-image-6.12-amd64":                "",
		"linux-image-amd64":                     "",
		"linux-image-6.1-amd64-signed-template": "",
	} {
		require.Equal(t, want, kernelImageSeries(name, "amd64"), name)
	}
	require.Equal(t, "7.3", kernelImageSeries("linux-image-7.3.4+deb13-arm64", "arm64"))
	require.Equal(t, "", kernelImageSeries("linux-image-7.3.4+deb13-arm64-16k", "arm64"))
}

// TestKernelPackageFiles: a 7.x image package brings its split packages,
// pinned to its version; 6.x's brings nothing else (its linux-base is
// Debian's kernel scripts, not a part of the kernel).
func TestKernelPackageFiles(t *testing.T) {
	c := kernelCandidate{pkg: "linux-image-7.3.4+deb13-amd64", version: "7.3.4-1~bpo13+1"}
	got := kernelPackageFiles(c, "linux-base-7.3.4+deb13-amd64 (= 7.3.4-1~bpo13+1), linux-binary-7.3.4+deb13-amd64 (= 7.3.4-1~bpo13+1), linux-modules-7.3.4+deb13-amd64 (= 7.3.4-1~bpo13+1), kmod, linux-base (>= 4.12~)")
	require.Equal(t, []string{
		"linux-image-7.3.4+deb13-amd64=7.3.4-1~bpo13+1",
		"linux-base-7.3.4+deb13-amd64=7.3.4-1~bpo13+1",
		"linux-binary-7.3.4+deb13-amd64=7.3.4-1~bpo13+1",
		"linux-modules-7.3.4+deb13-amd64=7.3.4-1~bpo13+1",
	}, got)
	c = kernelCandidate{pkg: "linux-image-6.1.0-57-amd64", version: "6.1.192-3"}
	got = kernelPackageFiles(c, "kmod, linux-base (>= 4.3~), initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool")
	require.Equal(t, []string{"linux-image-6.1.0-57-amd64=6.1.192-3"}, got)
}

// TestFindKernelFiles: the vmlinuz and modules of 6.x (boot/, lib/modules)
// and of 7.x's split packages (usr/lib/modules/REL/vmlinuz).
func TestFindKernelFiles(t *testing.T) {
	mk := func(files ...string) string {
		root := t.TempDir()
		for _, f := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, f), nil, 0o644))
		}
		return root
	}
	root := mk("boot/vmlinuz-6.1.0-57-amd64", "lib/modules/6.1.0-57-amd64/modules.builtin")
	rel, mods, vmlinuz, err := findKernelFiles(root)
	require.NoError(t, err)
	require.Equal(t, "6.1.0-57-amd64", rel)
	require.Equal(t, filepath.Join(root, "lib/modules/6.1.0-57-amd64"), mods)
	require.Equal(t, filepath.Join(root, "boot/vmlinuz-6.1.0-57-amd64"), vmlinuz)

	root = mk("usr/lib/modules/7.3.4+deb13-amd64/vmlinuz", "usr/lib/modules/7.3.4+deb13-amd64/modules.builtin")
	rel, mods, vmlinuz, err = findKernelFiles(root)
	require.NoError(t, err)
	require.Equal(t, "7.3.4+deb13-amd64", rel)
	require.Equal(t, filepath.Join(root, "usr/lib/modules/7.3.4+deb13-amd64"), mods)
	require.Equal(t, filepath.Join(mods, "vmlinuz"), vmlinuz)

	_, _, _, err = findKernelFiles(mk("usr/lib/modules/7.3.4+deb13-amd64/modules.builtin"))
	require.ErrorContains(t, err, "no boot/vmlinuz-7.3.4+deb13-amd64")
	_, _, _, err = findKernelFiles(mk("boot/vmlinuz-6.1.0-57-amd64"))
	require.ErrorContains(t, err, "no lib/modules or usr/lib/modules")
}

// TestAptStateIsolated: the lab's apt state names its own sources and
// preferences, never the host's, and lists only its release's suites.
func TestAptStateIsolated(t *testing.T) {
	e := &env{cache: "/cache"}
	s := e.aptState("arm64", releaseNamed("bookworm"))
	opts := strings.Join(s.opts(), " ")
	for _, o := range []string{"Dir::Etc::sourcelist=/cache/apt/arm64-bookworm/sources.list",
		"Dir::Etc::sourceparts=/cache/apt/arm64-bookworm/sources.list.d",
		"Dir::Etc::preferences=/cache/apt/arm64-bookworm/preferences",
		"Dir::Etc::preferencesparts=/cache/apt/arm64-bookworm/preferences.d",
		"Dir::State::status=/cache/apt/arm64-bookworm/state/status",
		"APT::Architectures=arm64",
		"APT::Default-Release=",
		"APT::Update::Error-Mode=any"} {
		require.Contains(t, opts, o)
	}
	require.NotContains(t, opts, "/etc/apt")
	t.Setenv("GOVERBS_LAB_DEBIAN_MIRROR", "http://mirror.example/")
	require.Equal(t, "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg target=Packages] http://mirror.example/debian bookworm main\n"+
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg target=Packages] http://mirror.example/debian bookworm-updates main\n"+
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg target=Packages] http://mirror.example/debian-security bookworm-security main\n",
		s.sourcesList())
	require.Equal(t, "bookworm", debianReleases[0].name, "6.1 and 6.12 come from Debian 12 first")
}

func TestStanzas(t *testing.T) {
	st := stanzas([]byte("Package: a\nVersion: 1\nDescription: x\n more\n\nPackage: b\nVersion: 2\n"))
	require.Equal(t, []map[string]string{{"Package": "a", "Version": "1", "Description": "x"}, {"Package": "b", "Version": "2"}}, st)
}

func TestVersionGreater(t *testing.T) {
	require.True(t, versionGreater("7.3.4-1~bpo13+1", "7.2.13-1"))
	require.True(t, versionGreater("5.10.244-1", "5.10.223-1"))
	require.False(t, versionGreater("6.12.117-1~bpo12+1", "6.12.118-1"))
}

func TestSortSeries(t *testing.T) {
	require.Equal(t, []string{"5.10", "6.1", "6.12", "7.3"}, sortSeries([]string{"6.12", "7.3", "5.10", "6.1", "6.12"}))
}
