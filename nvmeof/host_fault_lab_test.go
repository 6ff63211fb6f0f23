//go:build linux

package nvmeof

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/nvmetest"
	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

// nvmetDebugfs would be nvmet's debugfs directory: from 6.10 the kernel
// can make a directory per controller there whose state file takes
// "fatal" (drivers/nvme/target/debugfs.c nvmet_ctrl_state_write), but
// only when built with CONFIG_NVME_TARGET_DEBUGFS, which Debian's kernels
// are not (docs/kernel-behaviour.md §6).
const nvmetDebugfs = "/sys/kernel/debug/nvmet"

// debugfsMagic is DEBUGFS_MAGIC (include/uapi/linux/magic.h).
const debugfsMagic = 0x64626720

// kernelQPCount counts the QPs the kernel holds for itself (no process):
// the kernel target's, and each device's QP1.
func kernelQPCount(t *testing.T) int {
	t.Helper()
	raw := testutil.RunTool(t, "rdma", "-j", "resource", "show", "qp")
	var objs []map[string]any
	if err := json.Unmarshal([]byte(raw), &objs); err != nil {
		t.Fatalf("rdma resource show qp: %v in %q", err, raw)
	}
	n := 0
	for _, o := range objs {
		if _, ok := o["pid"]; !ok {
			n++
		}
	}
	return n
}

// sendShortCapsule sends 32 bytes on q where a command capsule of at
// least 64 belongs, through a free slot that it keeps.
func sendShortCapsule(t *testing.T, q *queue) {
	t.Helper()
	q.life.RLock()
	defer q.life.RUnlock()
	var i int
	select {
	case i = <-q.free:
	case <-time.After(time.Minute):
		t.Fatal("no free slot on the queue in a minute")
	}
	clear(q.sqe(i))
	sge := []uverbs.SGE{q.mr.SGE(i*sqeSize, 32)}
	if err := q.qp.PostSend([]uverbs.SendWR{{ID: uint64(i), Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: sge}}); err != nil {
		t.Fatal(err)
	}
}

// A fatal error of the kernel target's controller under our host's I/O.
// nvmet_rdma takes a capsule shorter than 64 bytes on a queue of a
// controller for one ("Ctrl Fatal Error: capsule size less than 64
// bytes"; kernel: drivers/nvme/target/rdma.c nvmet_rdma_recv_done,
// nvmet_rdma_error_comp) and calls nvmet_ctrl_fatal_error, which sets
// CSTS.CFS and deletes the controller from a work item
// (drivers/nvme/target/core.c nvmet_fatal_error_handler, then
// nvmet_rdma_delete_ctrl, which disconnects each of its queues): the
// path a kernel with nvmet's debugfs also takes when "fatal" is written
// to a controller's state file. Every command waiting ends with
// ErrControllerLost, saying the connection ended, and the target frees
// the controller's QPs once our host has closed; Close frees ours. No
// lab kernel has nvmet's debugfs (docs/kernel-behaviour.md §6), which the
// test checks first.
func TestFaultKernelTargetFatal(t *testing.T) {
	p := testutil.LabPairs(t)[0]
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/sys/kernel/debug", &fs); err != nil || fs.Type != debugfsMagic {
		t.Fatalf("debugfs is not mounted at /sys/kernel/debug (%v): the lab's guest mounts it (test/lab/guestinit mountRoot)", err)
	}
	if _, err := os.Stat(nvmetDebugfs); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: %v; the kernels the lab boots have no nvmet debugfs (docs/kernel-behaviour.md §6)", nvmetDebugfs, err)
	}

	before := kernelQPCount(t)
	nvmetest.RequireNVMeoF(t)
	kt := nvmetest.StartKernelTarget(t, nvmetest.TargetConfig{Addr: p.Ends[0].Addr, Size: 16 << 20})
	ctx := labCtx(t)
	c, err := Connect(ctx, kt.Addr.String(), kt.NQN, &Config{IOQueues: 2, QueueDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// I/O on every queue until it fails.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		started = make(chan struct{})
		once    sync.Once
	)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 16<<10)
			for i := 0; ; i++ {
				off := int64(g*64+i%64) * int64(len(buf)) % (ns.Size() - int64(len(buf)))
				var err error
				if i%2 == 0 {
					_, err = ns.WriteAt(buf, off)
				} else {
					_, err = ns.ReadAt(buf, off)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if i == 8 {
					once.Do(func() { close(started) })
				}
			}
		}()
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-started:
	case <-ended:
		t.Fatalf("I/O failed before the fault: %v", errs)
	case <-time.After(2 * time.Minute):
		t.Fatal("no I/O completed in 2 minutes")
	}
	// The kernel's messages from now on (SEEK_END: kernel/printk/printk.c
	// devkmsg_llseek).
	klog, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(klog)
	if _, err := syscall.Seek(klog, 0, 2); err != nil {
		t.Fatal(err)
	}
	sendShortCapsule(t, c.io[0])

	select {
	case <-ended:
	case <-time.After(3 * time.Minute):
		t.Fatal("I/O still runs 3 minutes after the short capsule")
	}
	for _, err := range errs {
		if !errors.Is(err, ErrControllerLost) {
			t.Errorf("I/O ended with %v, want ErrControllerLost", err)
		}
	}
	t.Logf("I/O ended with: %v", errs[0])
	if err := c.Err(); !errors.Is(err, ErrControllerLost) {
		t.Errorf("Err() = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Logf("Close of a lost controller: %v", err)
	}
	// The kernel says why.
	var said string
	buf := make([]byte, 8192)
	for {
		n, err := syscall.Read(klog, buf)
		if err == syscall.EINTR || err == syscall.EPIPE {
			continue // EPIPE: records overwritten before they were read
		}
		if err != nil || n <= 0 {
			break // EAGAIN: nothing more
		}
		// "prio,seq,usec,flags;message\n" then " KEY=value" lines.
		_, msg, _ := strings.Cut(string(buf[:n]), ";")
		msg, _, _ = strings.Cut(msg, "\n")
		if strings.Contains(strings.ToLower(msg), "fatal error") {
			said += msg + "; "
		}
	}
	if !strings.Contains(said, "capsule size less than 64 bytes") || !strings.Contains(said, "fatal error occurred") {
		t.Errorf("the kernel did not log the controller's fatal error: %q", said)
	}
	t.Logf("the kernel: %s", said)

	deadline := time.Now().Add(2 * time.Minute)
	for {
		n := kernelQPCount(t)
		if n == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 minutes after the fatal error the kernel holds %d QPs (%d before)", n, before)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
