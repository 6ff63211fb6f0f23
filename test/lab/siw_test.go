package lab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeadersCompiler reads the compiler from .kernelvariables as Debian
// 12's 6.1 and 6.12 headers packages write it: 6.1 sets CROSS_COMPILE only
// for cross builds, 6.12 always.
func TestHeadersCompiler(t *testing.T) {
	for _, tc := range []struct{ vars, want string }{
		{`override ARCH = x86
override KERNELRELEASE = 6.1.0-56-amd64
CCACHE = ccache
CC = $(if $(DEBIAN_KERNEL_USE_CCACHE),$(CCACHE)) $(CROSS_COMPILE)gcc-12
ifneq ($(DEB_BUILD_ARCH),$(DEB_HOST_ARCH))
override CROSS_COMPILE = $(DEB_HOST_GNU_TYPE)-
endif
DEBIAN_KERNEL_NO_CC_VERSION_CHECK = y
`, "gcc-12"},
		{`override ARCH = x86
override KERNELRELEASE = 6.12.117+deb12-amd64
CCACHE = ccache
CC = $(if $(DEBIAN_KERNEL_USE_CCACHE),$(CCACHE)) $(CROSS_COMPILE)gcc-12
DEB_BUILD_ARCH ?= $(shell dpkg --print-architecture)
override CROSS_COMPILE = x86_64-linux-gnu-
DEBIAN_KERNEL_NO_CC_VERSION_CHECK = y
`, "x86_64-linux-gnu-gcc-12"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".kernelvariables"), []byte(tc.vars), 0o644))
		cc, err := headersCompiler(dir)
		require.NoError(t, err)
		require.Equal(t, tc.want, cc)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".kernelvariables"), []byte("override ARCH = x86\n"), 0o644))
	_, err := headersCompiler(dir)
	require.ErrorContains(t, err, "names no compiler")
	_, err = headersCompiler(t.TempDir())
	require.ErrorContains(t, err, "has no .kernelvariables")
}

func TestRootIncludes(t *testing.T) {
	mk := filepath.Join(t.TempDir(), "Makefile")
	require.NoError(t, os.WriteFile(mk, []byte("include /usr/src/linux-headers-6.1.0-56-common/Makefile\n"), 0o644))
	require.NoError(t, rootIncludes(mk, "/cache/root"))
	b, err := os.ReadFile(mk)
	require.NoError(t, err)
	require.Equal(t, "include /cache/root/usr/src/linux-headers-6.1.0-56-common/Makefile\n", string(b))
}

func TestKernelSeries(t *testing.T) {
	for rel, want := range map[string]string{"6.1.0-56-amd64": "6.1", "6.12.117+deb12-amd64": "6.12"} {
		got, err := kernelSeries(rel)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := kernelSeries("amd64")
	require.Error(t, err)
}
