package uverbs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/testutil"
)

// RLIMIT_MEMLOCK (docs/robustness.md §1 item 22): the kernel charges the
// pages an MR pins to the process and refuses a registration past
// RLIMIT_MEMLOCK with ENOMEM, or any registration with EPERM when the limit is
// 0, unless the process has CAP_IPC_LOCK (kernel: core/umem.c ib_umem_get,
// mm/mlock.c can_do_mlock; docs/abi.md §3.15). Root has that capability, so
// the case runs in a child process of the test binary as user nobody
// (65534), whose limit the parent lowers with prlimit before letting it go
// on.

// memlockChildEnv carries "limit:size:errno" to the child and marks its role.
const memlockChildEnv = "GOVERBS_TEST_MEMLOCK_CHILD"

const nobody = 65534

func TestBadMemlockUnprivileged(t *testing.T) {
	testutil.RequireRDMA(t)
	testutil.RequireRoot(t) // to switch the child to nobody and lower its limit
	testutil.LoopbackDevice(t)
	exe := copyTestBinary(t)
	cases := []struct {
		name  string
		limit uint64
		size  int
		errno unix.Errno
	}{
		{"region larger than the limit", 64 << 10, 1 << 20, unix.ENOMEM},
		{"limit zero", 0, 4096, unix.EPERM},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run=^TestMemlockChild$", "-test.v", "-test.count=1")
			cmd.Dir = filepath.Dir(exe)
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d:%d", memlockChildEnv, c.limit, c.size, c.errno))
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The child waits on stdin until its limit is set.
			lim := unix.Rlimit{Cur: c.limit, Max: c.limit}
			errLim := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_MEMLOCK, &lim, nil)
			if errLim == nil {
				_, errLim = io.WriteString(stdin, "go\n")
			}
			stdin.Close()
			errWait := cmd.Wait()
			t.Logf("child output:\n%s", out.String())
			if errLim != nil {
				t.Fatalf("setting the child's RLIMIT_MEMLOCK: %v", errLim)
			}
			if errWait != nil {
				t.Fatalf("child: %v", errWait)
			}
			if !strings.Contains(out.String(), "--- PASS: TestMemlockChild") {
				t.Fatal("the child did not run its test")
			}
		})
	}
}

// copyTestBinary copies the test binary where nobody can execute it: go test
// builds it in a private (0700) directory.
func copyTestBinary(t *testing.T) string {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dir, err := os.MkdirTemp("", "goverbs-memlock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "uverbs.test")
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestMemlockChild is the child's side of TestBadMemlockUnprivileged; it does
// nothing unless started by it.
func TestMemlockChild(t *testing.T) {
	spec := os.Getenv(memlockChildEnv)
	if spec == "" {
		return
	}
	f := strings.Split(spec, ":")
	if len(f) != 3 {
		t.Fatalf("%s=%q", memlockChildEnv, spec)
	}
	limit, err1 := strconv.ParseUint(f[0], 10, 64)
	size, err2 := strconv.Atoi(f[1])
	errno, err3 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the parent: %v", err)
	}
	if os.Geteuid() != nobody || os.Getegid() != nobody {
		t.Fatalf("running as %d:%d, want %d:%d", os.Geteuid(), os.Getegid(), nobody, nobody)
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil || rl.Cur != limit || rl.Max != limit {
		t.Fatalf("RLIMIT_MEMLOCK %+v, %v; want %d", rl, err, limit)
	}

	c, err := Open(testutil.LoopbackDevice(t))
	if err != nil {
		t.Fatalf("Open as nobody: %v", err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	buf, err := AllocBuffer(size)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()

	mr, err := pd.RegMR(buf.Bytes(), AccessLocalWrite)
	if err == nil {
		mr.Close()
		t.Fatalf("registering %d bytes under RLIMIT_MEMLOCK %d succeeded", size, limit)
	}
	t.Logf("RegMR: %v", err)
	var me *MemlockError
	if !errors.As(err, &me) || !errors.Is(err, unix.Errno(errno)) {
		t.Fatalf("RegMR: %v, want a *MemlockError matching %v", err, unix.Errno(errno))
	}
	if me.Size != size || me.Cur != limit || me.Max != limit || me.Root {
		t.Errorf("MemlockError %+v, want size %d, limit %d, not root", me, size, limit)
	}
	for _, s := range []string{
		"reg_mr", unix.Errno(errno).Error(),
		fmt.Sprintf("could not pin %d bytes", size),
		fmt.Sprintf("RLIMIT_MEMLOCK, which is %d bytes (hard limit %d bytes)", limit, limit),
		"ulimit -l", "CAP_IPC_LOCK",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
	// Within the limit, registration works: it is the limit that refused.
	if limit >= 4096 {
		small, err := pd.RegMR(buf.Bytes()[:4096], AccessLocalWrite)
		if err != nil {
			t.Fatalf("registering one page under a %d-byte limit: %v", limit, err)
		}
		if err := small.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
