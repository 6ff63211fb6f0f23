package lab

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type cpioEntry struct {
	name         string
	mode         uint32
	rmaj, rmin   uint32
	data         []byte
	headerOffset int
}

// parseCPIO reads a newc archive the way the kernel's initramfs unpacker
// does, checking magic and 4-byte alignment.
func parseCPIO(t *testing.T, b []byte) []cpioEntry {
	var out []cpioEntry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		require.NoError(t, err)
		return uint32(v)
	}
	for {
		require.Zero(t, off%4, "header at unaligned offset %d", off)
		require.Equal(t, "070701", string(b[off:off+6]))
		e := cpioEntry{mode: field(1), rmaj: field(9), rmin: field(10), headerOffset: off}
		size, namesize := int(field(6)), int(field(11))
		nameStart := off + 110
		e.name = string(b[nameStart : nameStart+namesize-1])
		require.Zero(t, b[nameStart+namesize-1], "name not NUL-terminated")
		dataStart := (nameStart + namesize + 3) &^ 3
		e.data = b[dataStart : dataStart+size]
		off = (dataStart + size + 3) &^ 3
		if e.name == "TRAILER!!!" {
			require.Equal(t, len(b), off, "bytes after the trailer")
			return out
		}
		out = append(out, e)
	}
}

func TestCPIO(t *testing.T) {
	var buf bytes.Buffer
	w := &cpioWriter{w: &buf}
	w.Dir("dev", 0o755)
	w.CharDev("dev/console", 0o600, 5, 1)
	w.File("init", 0o755, []byte("12345"))
	w.File("modules/a.ko", 0o644, []byte("abcdefgh"))
	w.File("empty", 0o644, nil)
	require.NoError(t, w.Close())

	got := parseCPIO(t, buf.Bytes())
	require.Len(t, got, 5)
	require.Equal(t, "dev", got[0].name)
	require.Equal(t, uint32(0o040755), got[0].mode)
	require.Equal(t, "dev/console", got[1].name)
	require.Equal(t, uint32(0o020600), got[1].mode)
	require.Equal(t, [2]uint32{5, 1}, [2]uint32{got[1].rmaj, got[1].rmin})
	require.Equal(t, "init", got[2].name)
	require.Equal(t, uint32(0o100755), got[2].mode)
	require.Equal(t, "12345", string(got[2].data))
	require.Equal(t, "abcdefgh", string(got[3].data))
	require.Empty(t, got[4].data)
}

func TestModName(t *testing.T) {
	require.Equal(t, "rdma_rxe", modName("kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko.xz"))
	require.Equal(t, "crc32_generic", modName("crc32-generic.ko"))
	require.Equal(t, "9p", modName("/x/9p.ko"))
}

func TestModinfo(t *testing.T) {
	_, err := modinfo([]byte("not an ELF file"))
	require.Error(t, err)
}

func TestExtractVmlinuxRejects(t *testing.T) {
	_, err := extractVmlinux(make([]byte, 4096))
	require.ErrorContains(t, err, "not a bzImage")
	require.False(t, hasPVHNote([]byte("\x7fELF garbage")))
}

func TestQemuEscape(t *testing.T) {
	require.Equal(t, "/tmp/a,,b", qemuEscape("/tmp/a,b"))
}

// fakeAptGet puts an apt-get in PATH that fails with out and status 100 for
// the first fails runs, then succeeds; it returns the file counting the runs.
func fakeAptGet(t *testing.T, fails int, out string) string {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := fmt.Sprintf(`#!/bin/sh
n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s
if [ $n -le %[2]d ]; then echo '%[3]s' >&2; exit 100; fi
echo "ok $*"
`, count, fails, out)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apt-get"), []byte(script), 0o755))
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	return count
}

func runs(t *testing.T, count string) string {
	b, err := os.ReadFile(count)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// TestAptLockRetry: apt-get is run again while it fails on a lock held by
// another apt (apt-daily at boot), up to a bound; other failures are final.
func TestAptLockRetry(t *testing.T) {
	defer func(r, p time.Duration) { aptLockRetry, aptLockPause = r, p }(aptLockRetry, aptLockPause)
	aptLockRetry, aptLockPause = time.Minute, time.Millisecond
	lockMsg := "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 812 (apt-get)"

	var log bytes.Buffer
	e := &env{log: &log}
	count := fakeAptGet(t, 3, lockMsg)
	require.NoError(t, e.aptUpdate())
	require.Equal(t, "4", runs(t, count))
	require.Contains(t, log.String(), "lab: apt-get update: another apt or dpkg holds its lock; trying again")

	e = &env{log: &log}
	count = fakeAptGet(t, 3, "E: Unable to locate package nosuch")
	err := e.apt("install", "-y", "nosuch")
	require.ErrorContains(t, err, "Unable to locate package nosuch")
	require.Equal(t, "1", runs(t, count), "a failure other than a lock must not be retried")

	aptLockRetry = 20 * time.Millisecond
	e = &env{log: &log}
	fakeAptGet(t, 1<<20, lockMsg)
	err = e.apt("update")
	require.ErrorContains(t, err, "held its lock for 20ms")
	require.ErrorContains(t, err, "Could not get lock")
}

// TestGoTool: the go command is found without go in PATH.
func TestGoTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p, err := goTool()
	require.NoError(t, err)
	out, err := exec.Command(p, "env", "GOROOT").Output()
	require.NoError(t, err, "%s", p)
	require.Equal(t, filepath.Dir(filepath.Dir(p)), strings.TrimSpace(string(out)))
}

func TestAccelArgs(t *testing.T) {
	amd64, arm64 := guestArchs[ArchAMD64], guestArchs[ArchARM64]
	for _, v := range []string{"", "tcg"} {
		a, err := accelArgs(v, amd64)
		require.NoError(t, err)
		require.Equal(t, []string{"-accel", "tcg,thread=multi", "-cpu", "max"}, a)
		a, err = accelArgs(v, arm64)
		require.NoError(t, err)
		require.Equal(t, []string{"-accel", "tcg,thread=multi", "-cpu", "max,pauth-impdef=on"}, a)
	}
	_, err := accelArgs("hvf", amd64)
	require.ErrorContains(t, err, `GOVERBS_LAB_ACCEL="hvf": use tcg (the default) or kvm`)
	foreign := arm64
	if runtime.GOARCH == ArchARM64 {
		foreign = amd64
	}
	_, err = accelArgs("kvm", foreign)
	require.ErrorContains(t, err, "unset GOVERBS_LAB_ACCEL to run under TCG")
}

func TestArch(t *testing.T) {
	a, err := archFor("")
	require.NoError(t, err)
	require.Equal(t, ArchAMD64, a.name)
	require.Equal(t, runtime.GOARCH != ArchAMD64, a.foreign())
	a, err = archFor("arm64")
	require.NoError(t, err)
	require.Equal(t, runtime.GOARCH != ArchARM64, a.foreign())
	_, err = archFor("riscv64")
	require.ErrorContains(t, err, "use -arch amd64 or -arch arm64")
}
