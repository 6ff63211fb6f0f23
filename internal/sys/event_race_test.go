package sys

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Reads whose context expires just as an event arrives must never leave a
// past deadline on the file: a later Read without a deadline has to wait for
// the next event, not fail at once with "i/o timeout".
func TestEventFileTimeoutRace(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	w := NewFD(p[1], "pipe w")
	defer w.Close()
	ef, err := NewEventFile(p[0], "pipe r")
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		one := []byte{1}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			unix.Write(w.Raw(), one)
			if i%4 == 0 {
				time.Sleep(time.Duration(i%50) * time.Microsecond)
			}
		}
	}()
	buf := make([]byte, 1)
	reads, timeouts := 0, 0
	end := time.Now().Add(1500 * time.Millisecond)
	for i := 0; time.Now().Before(end); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%40)*time.Microsecond)
		_, err := ef.Read(ctx, buf)
		cancel()
		switch {
		case err == nil:
			reads++
		case errors.Is(err, context.DeadlineExceeded):
			timeouts++
		default:
			close(stop)
			wg.Wait()
			t.Fatalf("read %d: %v (a forced deadline leaked into a Read)", i, err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d reads, %d timeouts", reads, timeouts)

	// Empty the pipe, then a Read without deadline must wait for the next
	// byte instead of failing with a stale deadline.
	for {
		n, err := ef.TryRead(make([]byte, 4096))
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := ef.Read(context.Background(), buf)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Read returned %v before any event was written", err)
	case <-time.After(100 * time.Millisecond):
	}
	unix.Write(w.Raw(), []byte{2})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Read after the event: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return after an event")
	}
	// A cancellable Read that does not expire also waits and works.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		time.Sleep(20 * time.Millisecond)
		unix.Write(w.Raw(), []byte{3})
	}()
	if _, err := ef.Read(ctx, buf); err != nil || buf[0] != 3 {
		t.Fatalf("Read with a live context: %v, %d", err, buf[0])
	}
}

func TestEventFileRawAfterClose(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[1])
	ef, err := NewEventFile(p[0], "pipe r")
	if err != nil {
		t.Fatal(err)
	}
	if ef.Raw() != p[0] {
		t.Fatalf("Raw %d, want %d", ef.Raw(), p[0])
	}
	ef.Close()
	if ef.Raw() != -1 {
		t.Fatalf("Raw after Close = %d, want -1", ef.Raw())
	}
}

func TestForgetCollected(t *testing.T) {
	func() { _, _ = MmapAnon(4096, "forget me") }()
	deadline := time.Now().Add(5 * time.Second)
	n := 0
	for n == 0 && time.Now().Before(deadline) {
		runtimeGC()
		time.Sleep(5 * time.Millisecond)
		n = ForgetCollected()
	}
	if n == 0 {
		t.Fatal("the dropped mapping was never reported as collected")
	}
	for _, l := range Leaks() {
		if contains(l, "forget me") {
			t.Fatalf("record kept after ForgetCollected: %s", l)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// ReadSpin under a writer with jitter and contexts that end at random, with
// and without a spin: every byte written is read exactly once, a context
// that ends never leaves a deadline behind (only ctx errors or data come
// back), and Close wakes a spinning or parked reader with ErrClosed.
func TestEventFileSpinStress(t *testing.T) {
	t.Run("park", func(t *testing.T) { eventFileStress(t, false) })
	t.Run("thread", func(t *testing.T) { eventFileStress(t, true) })
}

// eventFileStress is TestEventFileSpinStress with ReadSpin (thread false)
// or ReadThread: for ReadThread, Close must end a thread blocked in read.
func eventFileStress(t *testing.T, thread bool) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	w := NewFD(p[1], "pipe w")
	defer w.Close()
	ef, err := NewEventFile(p[0], "pipe r")
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	readFn := ef.ReadSpin
	if thread {
		if err := ef.EnableThreadWait(); err != nil {
			t.Fatal(err)
		}
		readFn = ef.ReadThread
	}

	stop := make(chan struct{})
	written := make(chan int, 1)
	go func() {
		n := 0
		for i := 0; ; i++ {
			select {
			case <-stop:
				written <- n
				return
			default:
			}
			if _, err := unix.Write(w.Raw(), []byte{byte(i)}); err == nil {
				n++
			}
			time.Sleep(time.Duration(i%60) * time.Microsecond)
		}
	}()
	spins := []int{0, 1, 20}
	buf := make([]byte, 64)
	read, ctxErrs := 0, 0
	end := time.Now().Add(1500 * time.Millisecond)
	for i := 0; time.Now().Before(end); i++ {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		switch i % 3 {
		case 1:
			ctx, cancel = context.WithTimeout(ctx, time.Duration(i%70)*time.Microsecond)
		case 2:
			ctx, cancel = context.WithCancel(ctx)
			go func(d time.Duration) { time.Sleep(d); cancel() }(time.Duration(i%50) * time.Microsecond)
		}
		n, err := readFn(ctx, buf, spins[i%len(spins)])
		cancel()
		switch {
		case err == nil:
			read += n
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			ctxErrs++
		default:
			t.Fatalf("read %d: %v", i, err)
		}
	}
	close(stop)
	total := <-written
	for read < total {
		n, err := readFn(context.Background(), buf, 10)
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	if n, _ := ef.TryRead(buf); read != total || n != 0 {
		t.Fatalf("read %d bytes (and %d more queued), wrote %d", read, n, total)
	}
	t.Logf("%d bytes, %d context ends", total, ctxErrs)

	// The last case closes the file under a reader: a spinning one, or
	// for ReadThread one blocked in read.
	closeSpin := math.MaxInt
	if thread {
		closeSpin = 0
	}
	for i, spin := range []int{0, 100, closeSpin} {
		last := i == 2
		done := make(chan error, 1)
		go func() {
			_, err := readFn(context.Background(), buf, spin)
			done <- err
		}()
		time.Sleep(5 * time.Millisecond)
		if last {
			ef.Close()
		} else {
			// The reader still waits.
			select {
			case err := <-done:
				t.Fatalf("spin %d: read returned %v with nothing written", spin, err)
			default:
			}
			unix.Write(w.Raw(), []byte{1})
		}
		select {
		case err := <-done:
			if last && !errors.Is(err, ErrClosed) {
				t.Fatalf("Close during a read: %v, want ErrClosed", err)
			}
			if !last && err != nil {
				t.Fatalf("spin %v: %v", spin, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("spin %v: the reader did not return", spin)
		}
	}
}

// A Read whose context cannot end allocates nothing, spinning or not.
func TestEventFileReadAllocs(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	w := NewFD(p[1], "pipe w")
	defer w.Close()
	ef, err := NewEventFile(p[0], "pipe r")
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if err := ef.EnableThreadWait(); err != nil {
		t.Fatal(err)
	}
	one, buf := []byte{1}, make([]byte, 1)
	for _, thread := range []bool{false, true} {
		for _, spin := range []int{0, 20} {
			allocs := testing.AllocsPerRun(200, func() {
				unix.Write(w.Raw(), one)
				var err error
				if thread {
					_, err = ef.ReadThread(context.Background(), buf, spin)
				} else {
					_, err = ef.ReadSpin(context.Background(), buf, spin)
				}
				if err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("thread %v, spin %v: %v allocations per Read, want 0", thread, spin, allocs)
			}
		}
	}
	// ReadThread keeps its context registration from one read to the next:
	// a loop under one cancellable context allocates nothing either.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	allocs := testing.AllocsPerRun(200, func() {
		unix.Write(w.Raw(), one)
		if _, err := ef.ReadThread(ctx, buf, 0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadThread under one cancellable context: %v allocations per Read, want 0", allocs)
	}
	// That registration still ends a later read when the context ends.
	cancel()
	if _, err := ef.ReadThread(ctx, buf, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadThread after cancel: %v", err)
	}
}
