//go:build linux

package nvmeof

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/goverbs/rdma/internal/nvmetest"
	"github.com/goverbs/rdma/internal/testutil"
)

// The kernel's host (nvme_rdma, nvme-cli) against our target, over every
// lab device pair: the block devices it makes are read and written with
// O_DIRECT, and what they hold is compared with the namespaces' stores.

// countingStore counts the Flush and Write Zeroes that reach a memory
// store.
type countingStore struct {
	*memStore
	syncs, zeroes atomic.Int32
}

func (c *countingStore) Sync() error { c.syncs.Add(1); return nil }

func (c *countingStore) zeroAt(off, n int64) error {
	c.zeroes.Add(1)
	return c.memStore.zeroAt(off, n)
}

// alignedBuf returns n bytes at a 4 KiB boundary, as O_DIRECT wants.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := (4096 - int(uintptr(unsafe.Pointer(&b[0]))&4095)) & 4095
	return b[off : off+n]
}

// BLKZEROOUT (include/uapi/linux/fs.h _IO(0x12, 127)) zeroes a range of a
// block device: with Write Zeroes, where the device offers it.
const blkZeroOut = 0x127f

func zeroOut(f *os.File, off, n uint64) error {
	r := [2]uint64{off, n}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), blkZeroOut, uintptr(unsafe.Pointer(&r))); e != 0 {
		return e
	}
	return nil
}

func TestTargetLabKernelHost(t *testing.T) {
	testutil.EachLabPair(t, func(t *testing.T, p testutil.LabPair) {
		nvmetest.RequireNVMeoF(t)
		mem := memNS(t, 32<<20, 512)
		path := filepath.Join("/dev/shm", fmt.Sprintf("goverbs-nvmeof-%d-%s", os.Getpid(), p.Kind))
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(path) })
		if err := os.Truncate(path, 16<<20); err != nil {
			t.Fatal(err)
		}
		file, err := FileNamespace(path, 4096)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { file.Close() })
		cs := &countingStore{memStore: &memStore{b: make([]byte, 4<<20)}}
		counted, err := NewNamespace(cs, 4<<20, 512)
		if err != nil {
			t.Fatal(err)
		}
		sub := &Subsystem{NQN: "nqn.2024-01.io.goverbs:kernel-" + p.Kind, Model: "goverbs lab", Namespaces: []*TargetNamespace{mem, file, counted}}
		tgt := labTarget(t, p, nil, sub)

		// The kernel's host asks for its keys to be invalidated (keyed
		// SGLs with the Invalidate sub type) and the target answers with
		// SEND with Invalidate: the host then posts no LOCAL_INV of its
		// own (nvme_rdma_inv_rkey_done counts those), the device
		// invalidates the keys it registered (rxe_invalidate_mr,
		// siw_invalidate_stag), and a response naming a wrong key would
		// have the host log "Bogus remote invalidation" and reset
		// (drivers/nvme/host/rdma.c nvme_rdma_process_nvme_rsp).
		klog := nvmetest.OpenKernelLog(t)
		devInval := map[string]string{"rxe": "rdma_rxe:rxe_invalidate_mr", "siw": "siw:siw_invalidate_stag"}[p.Kind]
		calls, err := nvmetest.CountCalls(t, "nvme_rdma:nvme_rdma_inv_rkey_done", devInval)
		if err != nil {
			if testutil.InLab() {
				t.Fatalf("counting the kernel's invalidations: %v", err)
			}
			t.Logf("not counting the kernel's invalidations: %v", err)
		}
		bogus := func(when string) {
			t.Helper()
			for _, l := range klog.Lines() {
				if strings.Contains(l, "Bogus remote invalidation") {
					t.Fatalf("%s: the kernel's host logged %q: a response invalidated another key than its command's", when, l)
				}
			}
		}

		h := nvmetest.ConnectKernelHost(t, tgt.Addr(), sub.NQN)
		if len(h.Namespaces) != 3 {
			t.Fatalf("the kernel's host has namespaces %v", h.Namespaces)
		}
		if cs := tgt.Controllers(); len(cs) != 1 || cs[0].IOQueues < 1 || cs[0].Subsystem != sub.NQN {
			t.Fatalf("the target's controllers: %+v", cs)
		}
		if model, _ := os.ReadFile(filepath.Join("/sys/class/nvme", h.Ctrl, "model")); strings.TrimSpace(string(model)) != "goverbs lab" {
			t.Fatalf("the kernel's host reads the model %q", model)
		}

		r := rand.New(rand.NewPCG(3, 4))
		for i, ns := range []*TargetNamespace{mem, file, counted} {
			dev, err := os.OpenFile(h.Namespaces[i], os.O_RDWR|syscall.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			bs := ns.BlockSize()
			sizes := []int{bs, 4096, 8192 + bs, 128 << 10, 1 << 20}
			offs := []int64{0, int64(3 * bs), 1 << 20, ns.Size() - (1 << 20)}
			for _, size := range sizes {
				for _, off := range offs {
					if off+int64(size) > ns.Size() {
						continue
					}
					data := alignedBuf(size)
					copy(data, randomBytes(r, size))
					if n, err := dev.WriteAt(data, off); err != nil || n != size {
						t.Fatalf("%s: write %d at %d: %d, %v", h.Namespaces[i], size, off, n, err)
					}
					got := make([]byte, size)
					ns.ReadAt(got, off)
					if !bytes.Equal(got, data) {
						t.Fatalf("%s: %d bytes written at %d: the namespace's store differs", h.Namespaces[i], size, off)
					}
					back := alignedBuf(size)
					if n, err := dev.ReadAt(back, off); err != nil || n != size || !bytes.Equal(back, data) {
						t.Fatalf("%s: %d bytes at %d read back: %d, %v, equal %v", h.Namespaces[i], size, off, n, err, bytes.Equal(back, data))
					}
				}
			}
			// What the target's side writes, the kernel reads (O_DIRECT:
			// no page cache in between).
			data := randomBytes(r, 64<<10)
			ns.WriteAt(data, 2<<20)
			back := alignedBuf(len(data))
			if _, err := dev.ReadAt(back, 2<<20); err != nil || !bytes.Equal(back, data) {
				t.Fatalf("%s: reading what the target wrote: %v", h.Namespaces[i], err)
			}
			if err := dev.Close(); err != nil {
				t.Fatal(err)
			}
		}

		// Many goroutines at once, each in a region of its own: the
		// kernel spreads them over its I/O queues.
		dev0, err := os.OpenFile(h.Namespaces[0], os.O_RDWR|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 9))
				base := int64(16<<20) + int64(g)<<20
				for range 30 {
					size := (1 + r.IntN(64)) * 512
					off := base + int64(r.IntN((1<<20-size)/512))*512
					data := alignedBuf(size)
					copy(data, randomBytes(r, size))
					if _, err := dev0.WriteAt(data, off); err != nil {
						errs <- err
						return
					}
					back := alignedBuf(size)
					if _, err := dev0.ReadAt(back, off); err != nil {
						errs <- err
						return
					}
					got := make([]byte, size)
					mem.ReadAt(got, off)
					if !bytes.Equal(back, data) || !bytes.Equal(got, data) {
						errs <- fmt.Errorf("goroutine %d: %d bytes at %d differ (read back %v, target %v)", g, size, off, bytes.Equal(back, data), bytes.Equal(got, data))
						return
					}
				}
			}()
		}
		wg.Wait()
		dev0.Close()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}

		// fsync sends Flush (the controller reports a volatile write
		// cache); BLKZEROOUT sends Write Zeroes (ONCS).
		dev, err := os.OpenFile(h.Namespaces[2], os.O_RDWR|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		syncs := cs.syncs.Load()
		if err := dev.Sync(); err != nil {
			t.Fatal(err)
		}
		if cs.syncs.Load() == syncs {
			t.Fatal("fsync of the block device sent no Flush")
		}
		data := alignedBuf(64 << 10)
		copy(data, randomBytes(r, len(data)))
		if _, err := dev.WriteAt(data, 1<<20); err != nil {
			t.Fatal(err)
		}
		if err := zeroOut(dev, 1<<20+4096, 16<<10); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(data))
		counted.ReadAt(got, 1<<20)
		if cs.zeroes.Load() == 0 || !bytes.Equal(got[:4096], data[:4096]) || !bytes.Equal(got[4096:20480], make([]byte, 16<<10)) || !bytes.Equal(got[20480:], data[20480:]) {
			t.Fatalf("BLKZEROOUT: %d Write Zeroes reached the store, the data zeroed right: %v", cs.zeroes.Load(),
				bytes.Equal(got[4096:20480], make([]byte, 16<<10)))
		}
		dev.Close()

		bogus("after the I/O")
		if calls != nil {
			hits, err := calls.Hits()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the host's own LOCAL_INVs %d, keys the %s device invalidated %d", hits["nvme_rdma:nvme_rdma_inv_rkey_done"], p.Kind, hits[devInval])
			if n := hits["nvme_rdma:nvme_rdma_inv_rkey_done"]; n != 0 {
				t.Errorf("the kernel's host posted %d LOCAL_INVs of its own: the target's responses did not invalidate its keys", n)
			}
			if hits[devInval] == 0 {
				t.Errorf("%s invalidated no key (%s): the target's responses did not invalidate the host's keys", p.Kind, devInval)
			}
		}
		h.Disconnect()
		bogus("after the disconnect")
		settled(t, tgt)
	})
}

// nvme discover against our discovery controller.
func TestTargetLabKernelDiscover(t *testing.T) {
	testutil.EachLabPair(t, func(t *testing.T, p testutil.LabPair) {
		nvmetest.RequireNVMeoF(t)
		ns := memNS(t, 1<<20, 512)
		a := &Subsystem{NQN: "nqn.2024-01.io.goverbs:discover-a", Namespaces: []*TargetNamespace{ns}}
		b := &Subsystem{NQN: "nqn.2024-01.io.goverbs:discover-b", Namespaces: []*TargetNamespace{ns}}
		tgt := labTarget(t, p, nil, a, b)
		out, err := nvmetest.Discover(t, tgt.Addr())
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"subnqn:  " + a.NQN, "subnqn:  " + b.NQN, "subnqn:  " + DiscoveryNQN,
			"subtype: current discovery subsystem", "subtype: nvme subsystem",
			"traddr:  " + p.Ends[0].Addr, fmt.Sprintf("trsvcid: %d", tgt.Addr().Port()), "trtype:  rdma",
		} {
			if !strings.Contains(out, want) {
				t.Fatalf("nvme discover does not say %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "Discovery Log Entry"); n != 3 {
			t.Fatalf("nvme discover lists %d entries:\n%s", n, out)
		}
		settled(t, tgt)
	})
}

// stableGoroutines waits until the number of goroutines has not changed
// for half a second (commands' goroutines ending), and returns it.
// queueList returns the target's queues.
func (t *Target) queueList() []*tQueue {
	t.mu.Lock()
	defer t.mu.Unlock()
	qs := make([]*tQueue, 0, len(t.queues))
	for q := range t.queues {
		qs = append(qs, q)
	}
	return qs
}

// queueGoroutines counts the goroutines that run a method of one of qs:
// a queue's goroutines (its poller, its workers, its lifecycle) start in
// a method of the queue, which their stacks show with its address.
func queueGoroutines(qs []*tQueue) int {
	buf := make([]byte, 4<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		for _, q := range qs {
			if strings.Contains(g, ".(*tQueue).") && strings.Contains(g, fmt.Sprintf("(%p", q)) {
				n++
				break
			}
		}
	}
	return n
}

// startBlockIO runs O_DIRECT writes of random sizes in n goroutines of
// their own, each in its 1 MiB region of dev, each read back and compared
// with what was written and with the namespace's store, until Stop.
func startBlockIO(dev *os.File, ns *TargetNamespace, n int) *testutil.Rounds {
	return testutil.StartRounds(n, func(g int) func() error {
		r := rand.New(rand.NewPCG(uint64(g), 11))
		base := int64(g) << 20
		return func() error {
			size := (1 + r.IntN(32)) * 4096
			off := base + int64(r.IntN((1<<20-size)/4096))*4096
			data := alignedBuf(size)
			copy(data, randomBytes(r, size))
			back := alignedBuf(size)
			_, err := dev.WriteAt(data, off)
			if err == nil {
				_, err = dev.ReadAt(back, off)
			}
			if err == nil {
				got := make([]byte, size)
				ns.ReadAt(got, off)
				if !bytes.Equal(back, data) || !bytes.Equal(got, data) {
					err = fmt.Errorf("goroutine %d: %d bytes at %d differ (read back %v, target %v)", g, size, off, bytes.Equal(back, data), bytes.Equal(got, data))
				}
			}
			return err
		}
	})
}

// The kernel's host resets its controller on our target while O_DIRECT
// I/O runs: nvme reset tears the host's queues down, disables the
// controller (CC.EN 0) and connects again, the admin queue's Connect
// asking for a new controller (kernel: drivers/nvme/host/rdma.c
// nvme_rdma_reset_ctrl_work, nvme_rdma_shutdown_ctrl, nvme_rdma_setup_ctrl).
// The I/O waits through it (the host requeues what was in flight) and
// goes on; the target frees the old controller, with its queues and
// goroutines, and serves the new one, with a new ID and as many queues;
// what was written before and after reads back equal, on the block device
// and in the namespace.
func TestFaultKernelHostReset(t *testing.T) {
	testutil.EachLabPair(t, func(t *testing.T, p testutil.LabPair) {
		nvmetest.RequireNVMeoF(t)
		mem := memNS(t, 8<<20, 512)
		sub := &Subsystem{NQN: "nqn.2024-01.io.goverbs:reset-" + p.Kind, Namespaces: []*TargetNamespace{mem}}
		tgt := labTarget(t, p, nil, sub)
		before := runtime.NumGoroutine()

		h := nvmetest.ConnectKernelHost(t, tgt.Addr(), sub.NQN)
		old := tgt.Controllers()
		if len(old) != 1 || old[0].IOQueues < 1 {
			t.Fatalf("the target's controllers: %+v", old)
		}
		dev, err := os.OpenFile(h.Namespaces[0], os.O_RDWR|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		const workers = 4
		load := startBlockIO(dev, mem, workers)
		load.Wait(t, 4, 2*time.Minute)
		if errs := load.Stop(); len(errs) > 0 {
			t.Fatal(errs)
		}
		oldQueues := tgt.queueList()
		t.Logf("controller %d with %d I/O queues; %d goroutines of its queues", old[0].ID, old[0].IOQueues, queueGoroutines(oldQueues))

		load = startBlockIO(dev, mem, workers)
		load.Wait(t, 4, 2*time.Minute)
		if err := h.Reset(); err != nil {
			t.Fatal(err)
		}
		load.Wait(t, 8, 2*time.Minute)
		if errs := load.Stop(); len(errs) > 0 {
			t.Fatalf("I/O through the reset: %v", errs)
		}
		var now []TargetController
		if !poll(30*time.Second, func() bool {
			now = tgt.Controllers()
			return len(now) == 1 && now[0].ID != old[0].ID && now[0].IOQueues == old[0].IOQueues && tgt.queueCount() == old[0].IOQueues+1
		}) {
			t.Fatalf("after the reset the target has controllers %+v and %d queues; before it %+v", now, tgt.queueCount(), old)
		}
		t.Logf("after the reset: controller %d with %d I/O queues", now[0].ID, now[0].IOQueues)
		// The old controller's queues have no goroutine left. (A count
		// of all goroutines would not do: an I/O queue keeps as many
		// workers as it once had commands at once, which varies.)
		if !poll(10*time.Second, func() bool { return queueGoroutines(oldQueues) == 0 }) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines of the old controller's queues are left:\n%s", queueGoroutines(oldQueues), buf[:runtime.Stack(buf, true)])
		}

		// Every region, read whole through the host, equals the store.
		for g := range workers {
			back := alignedBuf(1 << 20)
			if _, err := dev.ReadAt(back, int64(g)<<20); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 1<<20)
			mem.ReadAt(got, int64(g)<<20)
			if !bytes.Equal(back, got) {
				t.Fatalf("region %d: the block device and the namespace differ", g)
			}
		}
		dev.Close()
		h.Disconnect()
		settled(t, tgt)
		noGoroutinesLeft(t, before)
	})
}
