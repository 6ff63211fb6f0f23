package sys

import (
	"context"
	"errors"
	"runtime"
	"strings"
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

// Reads under a writer with jitter and contexts that end at random: every
// byte written is read exactly once, and a context that ends never leaves
// a deadline behind (only ctx errors or data come back). The file stays in
// non-blocking mode throughout.
func TestEventFileStress(t *testing.T) {
	w, ef := pipeEventFile(t)
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
		n, err := ef.Read(ctx, buf)
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
		n, err := ef.Read(context.Background(), buf)
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	if n, _ := ef.TryRead(buf); read != total || n != 0 {
		t.Fatalf("read %d bytes (and %d more queued), wrote %d", read, n, total)
	}
	t.Logf("%d bytes, %d context ends", total, ctxErrs)
	requireNonblocking(t, ef)
}

// requireNonblocking fails unless ef's file is in non-blocking mode.
func requireNonblocking(t *testing.T, ef *EventFile) {
	t.Helper()
	fl, err := unix.FcntlInt(uintptr(ef.Raw()), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK == 0 {
		t.Fatal("the event file left non-blocking mode")
	}
}

// A context that ends while a Read is parked ends it with ctx.Err(), for
// cancellation and for a deadline, and the next Read under another
// context waits for its event as usual.
func TestEventFileCancelParked(t *testing.T) {
	w, ef := pipeEventFile(t)
	buf := make([]byte, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := ef.Read(ctx, buf); done <- err }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Read returned %v with nothing written", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Read after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the context did not end the parked Read")
	}
	// The same context again: refused at once.
	if _, err := ef.Read(ctx, buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read under the cancelled context: %v", err)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer dcancel()
	if _, err := ef.Read(dctx, buf); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read past its deadline: %v, want context.DeadlineExceeded", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		unix.Write(w.Raw(), []byte{7})
	}()
	if n, err := ef.Read(context.Background(), buf); n != 1 || err != nil || buf[0] != 7 {
		t.Fatalf("Read after the ended contexts: %d, %v, %d", n, err, buf[0])
	}
}

// Close racing a Read that is parked, about to park, or reading: the Read
// ends with its byte or with ErrClosed, never hangs, and no byte is lost: a
// second descriptor of the pipe's read end finds every byte the Read did
// not return.
func TestEventFileCloseRace(t *testing.T) {
	for round := range 300 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		w := NewFD(p[1], "pipe w")
		spare, err := unix.FcntlInt(uintptr(p[0]), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := NewEventFile(p[0], "pipe r")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		got := make([]byte, 1)
		var n int
		go func() {
			var err error
			n, err = ef.Read(context.Background(), got)
			done <- err
		}()
		if round%3 != 0 {
			unix.Write(w.Raw(), []byte{1})
		}
		if round%5 == 0 {
			time.Sleep(time.Duration(round%40) * time.Microsecond)
		}
		ef.Close()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("round %d: Read ended with %v, want its byte or ErrClosed", round, err)
			}
			if err == nil && n != 1 {
				t.Fatalf("round %d: Read returned %d bytes", round, n)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Close did not end the Read", round)
		}
		left, _ := unix.Read(spare, make([]byte, 8)) // non-blocking: the flag is the open file's
		left = max(left, 0)
		written := 0
		if round%3 != 0 {
			written = 1
		}
		if n+left != written {
			t.Fatalf("round %d: wrote %d byte(s), the Read returned %d and %d remained", round, written, n, left)
		}
		unix.Close(spare)
		w.Close()
	}
}

// A Read allocates nothing when its context cannot end, nor under one
// cancellable context kept from Read to Read, whether the byte is there
// or the Read parks for it; that registration still ends a later Read when
// the context ends.
func TestEventFileReadAllocs(t *testing.T) {
	w, ef := pipeEventFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A writer that writes a byte some time after each request, so that
	// the Read parks first.
	req := make(chan struct{})
	defer close(req)
	go func() {
		one := []byte{1}
		for range req {
			time.Sleep(200 * time.Microsecond)
			unix.Write(w.Raw(), one)
		}
	}()
	one, buf := []byte{1}, make([]byte, 1)
	for _, c := range []struct {
		name string
		ctx  context.Context
		park bool
	}{{"background", context.Background(), false}, {"background, parked", context.Background(), true}, {"cancellable", ctx, false}, {"cancellable, parked", ctx, true}} {
		allocs := testing.AllocsPerRun(100, func() {
			if c.park {
				req <- struct{}{}
			} else {
				unix.Write(w.Raw(), one)
			}
			if _, err := ef.Read(c.ctx, buf); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Read, want 0", c.name, allocs)
		}
	}
	cancel()
	if _, err := ef.Read(ctx, buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read after cancel: %v", err)
	}
	requireNonblocking(t, ef)
}

// Interrupt ends a parked Read with ErrInterrupted, also under a context
// that can end; one given while no Read runs ends the next Read alone, and
// leaves no deadline behind: the Read after it waits for its byte.
func TestEventFileInterrupt(t *testing.T) {
	w, ef := pipeEventFile(t)
	buf := make([]byte, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []context.Context{context.Background(), ctx} {
		done := make(chan error, 1)
		go func() { _, err := ef.Read(c, buf); done <- err }()
		waitParked(t, "(*EventFile).Read(")
		ef.Interrupt()
		select {
		case err := <-done:
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("Read under %v after Interrupt: %v, want ErrInterrupted", c, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Interrupt did not end the Read under %v", c)
		}
	}
	ef.Interrupt()
	ef.Interrupt()
	if _, err := ef.Read(ctx, buf); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Read after two Interrupts: %v, want ErrInterrupted", err)
	}
	done := make(chan error, 1)
	go func() {
		n, err := ef.Read(context.Background(), buf)
		if err == nil && (n != 1 || buf[0] != 9) {
			err = errors.New("wrong byte")
		}
		done <- err
	}()
	waitParked(t, "(*EventFile).Read(")
	if _, err := unix.Write(w.Raw(), []byte{9}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Read after the interrupted ones: %v, want its byte", err)
	}
}

// waitParked waits until a goroutine is parked in the netpoller in fn.
func waitParked(t *testing.T, fn string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			head, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, fn) && strings.Contains(head, "[IO wait") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine parked in %s", fn)
		}
		time.Sleep(time.Millisecond)
	}
}
