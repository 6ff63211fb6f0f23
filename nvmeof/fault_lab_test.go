package nvmeof_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

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
// with the kernel's own host as with ours (docs/kernel-behaviour.md §5).
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
		var errs []error
		select {
		case errs = <-done:
		case <-time.After(3 * time.Minute):
			t.Fatal("I/O still runs 3 minutes after the target's port was removed")
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
