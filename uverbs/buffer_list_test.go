package uverbs

import (
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"
	"unsafe"
	"weak"

	"github.com/goverbs/rdma/internal/sys"
)

// TestBufferList drives the sorted list of open Buffers directly: lookups
// find the one entry that can hold an address, stale overlapping entries
// are replaced when a new Buffer is listed there, and removal checks the id.
func TestBufferList(t *testing.T) {
	buffersMu.Lock()
	saved := buffers
	buffers = nil
	defer func() { buffers = saved; publishBuffersLocked(); buffersMu.Unlock() }()

	live := &Buffer{}
	w := weak.Make(live)
	add := func(id, start, end uint64) { addBufferLocked(bufEntry{id: id, start: start, end: end, b: w}) }
	starts := func() []uint64 {
		var s []uint64
		for _, e := range buffers {
			s = append(s, e.start)
		}
		return s
	}
	add(1, 0x3000, 0x4000)
	add(2, 0x1000, 0x2000)
	add(3, 0x8000, 0x9000)
	if got := starts(); len(got) != 3 || got[0] != 0x1000 || got[1] != 0x3000 || got[2] != 0x8000 {
		t.Fatalf("starts %#x, want sorted 0x1000 0x3000 0x8000", got)
	}
	if v := bufferView.Load(); v == nil || !slices.Equal(*v, buffers) {
		t.Fatal("the list PostSend reads is not the one published last")
	}
	for _, c := range []struct {
		addr, n uint64
		want    bool
	}{
		{0x1000, 0x1000, true}, {0x1800, 0x800, true}, {0x1800, 0x801, false},
		{0x0fff, 1, false}, {0x2000, 1, false}, {0x3fff, 1, true}, {0x8000, 0x1000, true},
		{0x9000, 1, false}, {0x10, 1, false}, {^uint64(0), 2, false},
	} {
		if got := inBuffer(buffers, c.addr, c.n); got != c.want {
			t.Errorf("inBuffer(%#x, %#x) = %v, want %v", c.addr, c.n, got, c.want)
		}
	}
	// A new Buffer over the range of 1 and 3's start can only be there if
	// their mappings are gone: both entries go.
	add(4, 0x2800, 0x8800)
	if got := starts(); len(got) != 2 || got[0] != 0x1000 || got[1] != 0x2800 {
		t.Fatalf("after an overlapping add: starts %#x, want 0x1000 0x2800", got)
	}
	removeBufferLocked(0x2800, 99) // another id: a newer Buffer at the address stays
	if len(buffers) != 2 {
		t.Fatalf("remove with a stale id dropped an entry: %d left", len(buffers))
	}
	removeBufferLocked(0x2800, 4)
	removeBufferLocked(0x1000, 2)
	if len(buffers) != 0 || len(*bufferView.Load()) != 0 {
		t.Fatalf("%d entries left after removing all (%d published)", len(buffers), len(*bufferView.Load()))
	}
	if inBuffer(buffers, 0x1000, 1) {
		t.Fatal("an address is inside a Buffer of an empty list")
	}
	runtime.KeepAlive(live)
}

// postInlineFrom posts an inline SEND of the first byte at addr on the
// rig's RC QP, which records the QP among the users of the Buffer there.
func (r *nativeRig) postInlineFrom(tb testing.TB, addr uint64) {
	tb.Helper()
	r.send(tb, r.qp, []SendWR{{Op: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: addr, Length: 1}}}}, &r.sqK)
}

// Buffer.Close unlists the Buffer at once but unmaps it only once no post
// can still be copying inline data out of it: a post holds its QP's send
// lock from reading the list until the copy is done, and Close waits for
// the send lock of every QP whose posts used the Buffer before it unmaps.
func TestBufferCloseWaitsForInlineCopy(t *testing.T) {
	r := newNativeRig(t)
	b, err := AllocBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	mem := b.Bytes()
	r.postInlineFrom(t, b.Addr())
	r.qp.sendMu.Lock() // a post that has read the list and copies now
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	for b.Bytes() != nil { // unlisted under b.mu and buffersMu
		runtime.Gosched()
	}
	if v := bufferView.Load(); v != nil && inBuffer(*v, uint64(uintptr(unsafe.Pointer(&mem[0]))), 1) {
		t.Error("a closing Buffer is still listed for PostSend")
	}
	// The memory must stay mapped as long as the send lock is held.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("Buffer.Close unmapped while a post held its QP's send lock: %v", p)
			}
		}()
		for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
			mem[0]++
			select {
			case err := <-closed:
				t.Errorf("Buffer.Close returned (%v) while a post held its QP's send lock", err)
				return
			default:
			}
			runtime.Gosched()
		}
	}()
	r.qp.sendMu.Unlock()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// A Buffer dropped without Close is unlisted, then unmapped, by its GC
// cleanup in Close's order: the memory stays mapped while a post holds its
// QP's send lock, and the leak tracer records the Buffer as collected.
func TestBufferDroppedWaitsForInlineCopy(t *testing.T) {
	r := newNativeRig(t)
	collected := sys.Collected()
	mem := func() []byte { // the Buffer itself becomes unreachable
		b, err := AllocBuffer(64)
		if err != nil {
			t.Fatal(err)
		}
		r.postInlineFrom(t, b.Addr())
		return b.Bytes()
	}()
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	listed := func() bool { v := bufferView.Load(); return v != nil && inBuffer(*v, addr, 1) }
	if !listed() {
		t.Fatal("a new Buffer is not listed for PostSend")
	}
	r.qp.sendMu.Lock() // a post that has read the list and copies now
	for start := time.Now(); listed(); runtime.GC() {
		if time.Since(start) > 10*time.Second {
			r.qp.sendMu.Unlock()
			t.Fatal("the dropped Buffer was not collected within 10s")
		}
		runtime.Gosched()
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var sink byte
	touch := func(write bool) (fault any) {
		defer func() { fault = recover() }()
		if write {
			mem[0]++
		}
		sink += mem[0]
		return nil
	}
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; runtime.Gosched() {
		if p := touch(true); p != nil {
			t.Errorf("a dropped Buffer was unmapped while a post held its QP's send lock: %v", p)
			break
		}
	}
	r.qp.sendMu.Unlock()
	// Read only from here on: once unmapped, the page may be someone
	// else's.
	for start := time.Now(); touch(false) == nil; runtime.Gosched() {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the dropped Buffer was still mapped 10s after the post let go of its send lock")
		}
	}
	if n := sys.Collected(); n != collected+1 {
		t.Errorf("%d records of collected resources, want %d: the dropped Buffer's mapping and the %d before the test", n, collected+1, collected)
	}
	if collected == 0 { // records of earlier tests stay for the run's leak check
		sys.ForgetCollected()
	}
}

// Buffer.Close waits only for the QPs whose posts used the Buffer: a QP
// that never copied out of it may hold its send lock meanwhile, and a QP
// that did is waited for once and no more after its Close took it out.
func TestBufferCloseWaitsForItsUsersOnly(t *testing.T) {
	r := newNativeRig(t)
	b, err := AllocBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	r.postInlineFrom(t, b.Addr())
	if !r.qp.useBuffer(b.users) || len(b.users.qps) != 1 || len(r.qp.inlineBufs) != 1 {
		t.Fatalf("a post from the Buffer left %d users of it and %d Buffers on the QP, want 1 and 1", len(b.users.qps), len(r.qp.inlineBufs))
	}
	r.ud.sendMu.Lock() // another QP's post, from elsewhere, running
	defer r.ud.sendMu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Buffer.Close waited for the send lock of a QP that never used the Buffer")
	}
	if r.qp.useBuffer(b.users) {
		t.Error("a QP recorded itself as a user of a closed Buffer")
	}
	// A QP closes: it is no longer among the users of another Buffer.
	c, err := AllocBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r.postInlineFrom(t, c.Addr())
	r.qp.dropInlineBufs() // as QP.Close does
	if n := len(c.users.qps); n != 0 || r.qp.inlineBufs != nil {
		t.Errorf("a closed QP is still among the %d users of a Buffer it used", n)
	}
}
