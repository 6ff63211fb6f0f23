package nvmeof_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/nvmetest"
	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/nvmeof"
)

// ioLoop keeps reads and writes going in n goroutines until each fails,
// and returns their errors when all have stopped.
func ioLoop(ns *nvmeof.Namespace, n int) (started chan struct{}, done chan []error) {
	started, done = make(chan struct{}), make(chan []error, 1)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		once sync.Once
	)
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]byte, 16<<10)
			for i := 0; ; i++ {
				off := int64((g*64+i%64)*len(buf)) % (ns.Size() - int64(len(buf)))
				off -= off % int64(ns.BlockSize())
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
		}(g)
	}
	go func() {
		wg.Wait()
		done <- errs
	}()
	return started, done
}

// The target's port removed while I/O runs: every goroutine's I/O ends
// with ErrControllerLost, in bounded time, and Close frees everything
// (the leak tracer checks at the end of the binary). On rxe only: over
// siw the kernel's target can block for good in the port's removal,
// with the kernel's own host as with ours (docs/kernel-behaviour.md §3).
func TestFaultTargetPortRemoved(t *testing.T) {
	func(t *testing.T, p testutil.LabPair) {
		kt := kernelTarget(t, p, 16<<20)
		ctx := labCtx(t)
		c, err := nvmeof.Connect(ctx, kt.Addr.String(), kt.NQN, &nvmeof.Config{IOQueues: 2, QueueDepth: 8})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ns, err := c.Namespace(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		started, done := ioLoop(ns, 6)
		select {
		case <-started:
		case <-time.After(2 * time.Minute):
			t.Fatal("no I/O completed in 2 minutes")
		}
		kt.RemovePort()
		requireLost(t, c, done, "the target's port was removed")
		if _, err := ns.ReadAt(make([]byte, ns.BlockSize()), 0); err == nil {
			t.Error("a read after the loss succeeded")
		}
	}(t, testutil.LabPairs(t)[0])
}

const (
	faultHostEnv = "NVMEOF_TEST_FAULT_HOST" // address,nqn for the child host
)

// TestFaultHostKilled runs our host in a child process doing I/O, kills it
// with SIGKILL, and checks that the kernel's target frees the
// controller's queues: its QPs, which the kernel holds for it, go away.
func TestFaultHostKilled(t *testing.T) {
	if v := os.Getenv(faultHostEnv); v != "" {
		faultHostChild(v)
		return
	}
	p := testutil.LabPairs(t)[0]
	kt := kernelTarget(t, p, 16<<20)
	before := kernelQPs(t)

	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultHostKilled$", "-test.count=1")
	cmd.Env = append(os.Environ(), faultHostEnv+"="+kt.Addr.String()+","+kt.NQN)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testutil.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cmd.Process.Kill(); <-exited }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case s := <-line:
		if s != "running" {
			t.Fatalf("the child host printed %q; stderr: %s", s, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the child host did not start I/O in 2 minutes; stderr: %s", stderr.String())
	}
	during := kernelQPs(t)
	if during <= before {
		t.Fatalf("with our host connected the kernel holds %d QPs, as before (%d)", during, before)
	}
	cmd.Process.Kill()
	<-exited
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n := kernelQPs(t)
		if n == before {
			t.Logf("kernel QPs: %d before, %d with the host, %d after it was killed", before, during, n)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("2 minutes after our host was killed the kernel still holds %d QPs (%d before it connected)", n, before)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func faultHostChild(v string) {
	addr, nqn, _ := strings.Cut(v, ",")
	ctx := context.Background()
	c, err := nvmeof.Connect(ctx, addr, nqn, &nvmeof.Config{IOQueues: 2, QueueDepth: 8})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	started, done := ioLoop(ns, 4)
	<-started
	fmt.Println("running")
	fmt.Fprintln(os.Stderr, <-done)
	os.Exit(1)
}

// requireLost waits for ioLoop's goroutines to end once the controller
// is lost (after what happened), checks that each ended with
// ErrControllerLost, as does c.Err, and closes c.
func requireLost(t *testing.T, c *nvmeof.Controller, done chan []error, after string) {
	t.Helper()
	var errs []error
	select {
	case errs = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("I/O still runs 3 minutes after %s", after)
	}
	for _, err := range errs {
		if !errors.Is(err, nvmeof.ErrControllerLost) {
			t.Errorf("I/O ended with %v, want ErrControllerLost", err)
		}
	}
	t.Logf("I/O ended with: %v", errs[0])
	if err := c.Err(); !errors.Is(err, nvmeof.ErrControllerLost) {
		t.Errorf("Err() = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Logf("Close of a lost controller: %v", err)
	}
}

// kernelQPs counts the QPs the kernel holds for itself (no process):
// the target's, and each device's QP1.
func kernelQPs(t *testing.T) int {
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

// verifiedIO writes random data in n goroutines, each in a region of its
// own, reads every write back and compares it, until stop or an error.
type verifiedIO struct {
	*testutil.Rounds
	ns     *nvmeof.Namespace
	region int64
	mu     sync.Mutex
	last   map[int64][]byte // what each offset last read back equal
}

const verifiedChunk = 16 << 10

func startVerifiedIO(ns *nvmeof.Namespace, n int) *verifiedIO {
	v := &verifiedIO{ns: ns, region: ns.Size() / int64(n), last: map[int64][]byte{}}
	v.region -= v.region % verifiedChunk
	v.Rounds = testutil.StartRounds(n, func(g int) func() error {
		data, back := make([]byte, verifiedChunk), make([]byte, verifiedChunk)
		var i int64
		return func() error {
			off := int64(g)*v.region + i*verifiedChunk%v.region
			i++
			rand.Read(data)
			_, err := ns.WriteAt(data, off)
			if err == nil {
				_, err = ns.ReadAt(back, off)
			}
			if err == nil && !bytes.Equal(back, data) {
				err = fmt.Errorf("goroutine %d: %d bytes at %d read back differ from what was written", g, len(data), off)
			}
			if err != nil {
				return err
			}
			v.mu.Lock()
			v.last[off] = bytes.Clone(data)
			v.mu.Unlock()
			return nil
		}
	})
	return v
}

// compareFile checks that the backing file holds what every offset last
// read back.
func (v *verifiedIO) compareFile(t *testing.T, path string) {
	t.Helper()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for off, data := range v.last {
		if !bytes.Equal(file[off:off+int64(len(data))], data) {
			t.Fatalf("the backing file at %d differs from what was written there and read back", off)
		}
	}
	t.Logf("%d chunks of %d bytes written, read back and found in the backing file", len(v.last), verifiedChunk)
}

const nvmetRDMA = "nvmet_rdma"

// The kernel's target module unloaded under our host's I/O. An enabled
// port holds a reference on its transport's module (kernel:
// drivers/nvme/target/core.c nvmet_enable_port takes it with
// try_module_get(ops->owner), nvmet_disable_port drops it), so while the
// port serves, delete_module(2) refuses with EAGAIN (kernel/module/main.c
// try_stop_module) and the I/O goes on unharmed. Once the port is removed
// the module unloads (drivers/nvme/target/rdma.c nvmet_rdma_exit); the
// port's removal has ended every command with ErrControllerLost, and
// Close frees everything. The module is loaded again afterwards, and a new
// target on it serves our host. On rxe only, as TestFaultTargetPortRemoved
// (docs/kernel-behaviour.md §3).
func TestFaultTargetModuleUnloaded(t *testing.T) {
	p := testutil.LabPairs(t)[0]
	kt := kernelTarget(t, p, 16<<20)
	t.Cleanup(func() {
		if err := nvmetest.LoadLabModule(nvmetRDMA); err != nil {
			t.Errorf("the test could not load %s again: later tests in this guest lack the kernel's target: %v", nvmetRDMA, err)
		}
	})
	if ports, _ := filepath.Glob("/sys/kernel/config/nvmet/ports/*"); len(ports) != 1 {
		t.Fatalf("nvmet has ports %v: the module can be unloaded only with this test's port alone", ports)
	}
	refs, err := nvmetest.ModuleRefs(nvmetRDMA)
	if err != nil {
		t.Fatal(err)
	}
	ctx := labCtx(t)
	c, err := nvmeof.Connect(ctx, kt.Addr.String(), kt.NQN, &nvmeof.Config{IOQueues: 2, QueueDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ns, err := c.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	v := startVerifiedIO(ns, 4)
	v.Wait(t, 4, 2*time.Minute)

	err = nvmetest.UnloadModule(nvmetRDMA)
	if !errors.Is(err, syscall.EAGAIN) {
		t.Fatalf("delete_module of %s with its port enabled (refcnt %d): %v, want EAGAIN", nvmetRDMA, refs, err)
	}
	t.Logf("with the port enabled (refcnt %d): %v", refs, err)
	v.Wait(t, 8, 2*time.Minute)
	if errs := v.Stop(); len(errs) > 0 {
		t.Fatalf("I/O after the refused unload: %v", errs)
	}
	if err := ns.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	v.compareFile(t, kt.Files[0])

	started, done := ioLoop(ns, 6)
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatal("no I/O completed in 2 minutes")
	}
	kt.RemovePort()
	// nvmet_disable_port has dropped the port's reference: nothing else
	// holds the module now.
	if err := nvmetest.UnloadModule(nvmetRDMA); err != nil {
		n, _ := nvmetest.ModuleRefs(nvmetRDMA)
		t.Fatalf("with the port removed (refcnt %d): %v", n, err)
	}
	if nvmetest.ModuleLoaded(nvmetRDMA) {
		t.Fatalf("%s is still loaded after delete_module succeeded", nvmetRDMA)
	}
	requireLost(t, c, done, "the target's module was unloaded")

	// Loaded again, the kernel's target serves a new port.
	if err := nvmetest.LoadLabModule(nvmetRDMA); err != nil {
		t.Fatal(err)
	}
	kt2 := kernelTarget(t, p, 1<<20)
	c2, err := nvmeof.Connect(ctx, kt2.Addr.String(), kt2.NQN, nil)
	if err != nil {
		t.Fatalf("after %s was loaded again: %v", nvmetRDMA, err)
	}
	defer c2.Close()
	ns2, err := c2.Namespace(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	data := testutil.RandomBytes(64 << 10)
	back := make([]byte, len(data))
	if _, err := ns2.WriteAtContext(ctx, data, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ns2.ReadAtContext(ctx, back, 0); err != nil || !bytes.Equal(back, data) {
		t.Fatalf("after %s was loaded again: read back %v, equal %v", nvmetRDMA, err, bytes.Equal(back, data))
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
}
