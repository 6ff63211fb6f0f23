package uverbs

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/goverbs/rdma/internal/sys"
)

// Buffer is off-heap memory for RDMA: a page-aligned private anonymous
// mapping that the Go garbage collector never frees or moves, which makes it
// the memory to register with PD.RegMR (docs/abi.md §6.2).
//
// Close unmaps it; Close refuses (ErrBusy) while an MR registers any part of
// it. Close is idempotent and safe on a nil *Buffer.
type Buffer struct {
	mu    sync.Mutex
	m     *sys.Mapping
	b     []byte // the first size bytes of the mapping
	regs  int    // MRs registered over this buffer
	id    uint64
	users *bufUsers // the QPs whose posts copy inline data out of it
	clean runtime.Cleanup
}

// buffers lists the open Buffers sorted by start address, their ranges
// disjoint, for RegMR (which MR lies in which Buffer) and for the
// inline-data check of PostSend, which finds the one Buffer that can hold
// an address by binary search. It holds weak pointers only: a Buffer dropped
// without Close is collected, and its cleanup (forgetBuffer) removes its
// entry, then unmaps it as Close does, so a listed range is always mapped.
//
// Writers change buffers under buffersMu and publish a copy in bufferView
// (publishBuffersLocked). PostSend reads bufferView with one plain load,
// under its QP's send lock, and records the QP among the users of the
// Buffer it finds (bufUsers) before it copies. Buffer.Close unlists the
// Buffer and closes its users, then waits for the current holder of each
// user's send lock before it unmaps, so no inline copy that found the
// Buffer listed is still running (docs/architecture.md §3).
var (
	buffersMu  sync.Mutex
	buffers    []bufEntry
	nextBuffer uint64 // under buffersMu
	bufferView atomic.Pointer[[]bufEntry]
)

// publishBuffersLocked makes the current list the one PostSend sees. The
// caller holds buffersMu.
func publishBuffersLocked() {
	v := slices.Clone(buffers)
	bufferView.Store(&v)
}

// bufUsers are the QPs whose posts may copy inline data out of one Buffer:
// those that found it as an inline source (QP.useBuffer). A post records
// its QP, under its send lock, before it copies, and fails to once the
// Buffer is closing; then the post looks no further in that Buffer, and
// the source is refused as outside every Buffer. The QP remembers the
// Buffer it found last (QP.inlineList), so a post records itself once per
// Buffer, not per copy. bufUsers is apart from the Buffer so that the
// cleanup of a Buffer dropped without Close has it.
//
// Weak pointers, so that a QP dropped without Close is still collected
// (and with it its Device); QP.Close takes itself out (dropInlineBufs).
type bufUsers struct {
	mu      sync.Mutex
	closing bool
	qps     map[weak.Pointer[QP]]struct{}
}

// useBuffer records qp among u's users, unless the Buffer is closing. The
// caller holds qp.sendMu. It allocates when qp first uses the Buffer.
//
//go:noinline
func (qp *QP) useBuffer(u *bufUsers) bool {
	w := weak.Make(qp)
	u.mu.Lock()
	_, known := u.qps[w]
	ok := !u.closing
	if ok && !known {
		if u.qps == nil {
			u.qps = make(map[weak.Pointer[QP]]struct{})
		}
		u.qps[w] = struct{}{}
	}
	u.mu.Unlock()
	if ok && !known {
		// Forget the Buffers closed since, so that the list keeps to
		// the Buffers the QP still uses.
		if len(qp.inlineBufs) == cap(qp.inlineBufs) {
			qp.inlineBufs = slices.DeleteFunc(qp.inlineBufs, (*bufUsers).isClosing)
		}
		qp.inlineBufs = append(qp.inlineBufs, u)
	}
	return ok
}

func (u *bufUsers) isClosing() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closing
}

// dropInlineBufs takes a closed QP out of the users of its Buffers. No
// post runs on it any more (Close has set closed under sendMu).
func (qp *QP) dropInlineBufs() {
	w := weak.Make(qp)
	for _, u := range qp.inlineBufs {
		u.mu.Lock()
		delete(u.qps, w)
		u.mu.Unlock()
	}
	qp.inlineBufs = nil
}

// wait closes u to new users, then returns once every post of its users
// that could have found the Buffer before the caller unlisted it has
// finished: it waits for the current holder of each user's send lock, if
// any, to release it (ringLock.waitRelease; a post reads the list after
// taking the lock, and records its QP before it copies). Posts that take
// the lock later see the new list, or fail to record themselves. The
// caller has unlisted the Buffer.
func (u *bufUsers) wait() {
	u.mu.Lock()
	u.closing = true
	qps := make([]*QP, 0, len(u.qps))
	for w := range u.qps {
		if qp := w.Value(); qp != nil {
			qps = append(qps, qp)
		}
	}
	u.mu.Unlock()
	for _, qp := range qps {
		qp.sendMu.waitRelease()
	}
}

// bufferAtLocked returns the index of the entry that can contain addr (the
// last one starting at or below it), or -1. The caller holds buffersMu.
func bufferAtLocked(addr uint64) int { return bufferAt(buffers, addr) }

// bufferAt returns the index of the entry of list that can contain addr.
func bufferAt(list []bufEntry, addr uint64) int {
	lo, hi := 0, len(list) // list[:lo] start at or below addr
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if list[m].start <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// addBufferLocked lists e. Every Buffer is unlisted before it is unmapped
// (Close, forgetBuffer), so no listed range can overlap a new mapping; an
// entry that does anyway is stale, since the kernel could not have mapped
// e there, and is dropped. The caller holds buffersMu.
func addBufferLocked(e bufEntry) {
	i := bufferAtLocked(e.start) + 1 // first entry starting above e.start
	j := i
	if i > 0 && buffers[i-1].end > e.start {
		i--
	}
	for j < len(buffers) && buffers[j].start < e.end {
		j++
	}
	buffers = slices.Replace(buffers, i, j, e)
	publishBuffersLocked()
}

// removeBufferLocked drops the entry of the Buffer with this start and id,
// if it is still listed. The caller holds buffersMu.
func removeBufferLocked(start, id uint64) {
	if i := bufferAtLocked(start); i >= 0 && buffers[i].start == start && buffers[i].id == id {
		buffers = slices.Delete(buffers, i, i+1)
		publishBuffersLocked()
	}
}

type bufEntry struct {
	id         uint64
	start, end uint64
	b          weak.Pointer[Buffer]
	users      *bufUsers
}

type bufKey struct {
	start, id uint64
	m         *sys.Mapping
	users     *bufUsers
}

// forgetBuffer is the GC cleanup of a Buffer dropped without Close: it
// unlists the Buffer, waits for the posts that could still be copying
// inline data out of it, then unmaps it, in Close's order. It holds the
// mapping, so the mapping's own cleanup cannot unmap it first. (The id
// check in removeBufferLocked is kept as a guard: while the mapping stays,
// no other Buffer can be listed at its address.)
func forgetBuffer(k bufKey) {
	buffersMu.Lock()
	removeBufferLocked(k.start, k.id)
	buffersMu.Unlock()
	k.users.wait()
	k.m.UnmapCollected()
}

// AllocBuffer maps size bytes (rounded up to whole pages) of zeroed memory.
// Bytes returns exactly size bytes.
func AllocBuffer(size int) (*Buffer, error) {
	const op = "alloc buffer"
	if size <= 0 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("size %d: a buffer needs at least one byte", size)}
	}
	pg := os.Getpagesize()
	n := (size + pg - 1) &^ (pg - 1)
	if n < size {
		return nil, &OpError{Op: op, Err: fmt.Errorf("size %d overflows when rounded to pages", size)}
	}
	m, err := sys.MmapAnon(n, "buffer")
	if err != nil {
		return nil, err
	}
	b := &Buffer{m: m, b: m.Bytes()[:size:size], users: new(bufUsers)}
	start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.b))))
	buffersMu.Lock()
	nextBuffer++
	b.id = nextBuffer
	addBufferLocked(bufEntry{id: b.id, start: start, end: start + uint64(size), b: weak.Make(b), users: b.users})
	buffersMu.Unlock()
	b.clean = runtime.AddCleanup(b, forgetBuffer, bufKey{start: start, id: b.id, m: m, users: b.users})
	return b, nil
}

// Bytes returns the buffer's memory, or nil once it is closed. The slice
// must not be used after Close.
func (b *Buffer) Bytes() []byte {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b
}

// Len returns the size asked for in AllocBuffer (0 once closed).
func (b *Buffer) Len() int { return len(b.Bytes()) }

// Addr returns the address of the first byte (0 once closed), the form in
// which scatter/gather entries name memory.
func (b *Buffer) Addr() uint64 {
	p := b.Bytes()
	if len(p) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p))))
}

// Close unmaps the buffer. It refuses with an error matching ErrBusy while
// an MR still registers part of it: close the MR first. A PostSend copying
// inline data out of the buffer finishes first: Close waits for the send
// lock of each QP whose posts took inline data from the buffer (and of no
// other QP); posts that come later refuse it as an inline source.
func (b *Buffer) Close() error {
	if b == nil {
		return nil
	}
	m, err := b.unlist()
	if m == nil {
		return err
	}
	b.users.wait()
	return m.Unmap()
}

// unlist takes the buffer off the list and returns its mapping, or nil if
// it is closed already or still registered (then with the error).
func (b *Buffer) unlist() (*sys.Mapping, error) {
	// Lock order: buffersMu, then b.mu (as in bufferOf).
	buffersMu.Lock()
	defer buffersMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		return nil, nil
	}
	if b.regs > 0 {
		return nil, &OpError{Op: "close buffer", Err: &busyError{msg: fmt.Sprintf(
			"the buffer is still registered by %s: close them before unmapping the memory they point at", plural(b.regs, "MR"))}}
	}
	start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b.b))))
	removeBufferLocked(start, b.id)
	b.clean.Stop()
	m := b.m
	b.m, b.b = nil, nil
	return m, nil
}

// bufferOf returns the open Buffer that contains [addr, addr+n) and counts a
// registration on it, or nil if the range is not inside one.
func bufferOf(addr uint64, n int) *Buffer {
	buffersMu.Lock()
	defer buffersMu.Unlock()
	i := bufferAtLocked(addr)
	if i < 0 {
		return nil
	}
	e := buffers[i]
	if addr+uint64(n) > e.end || addr+uint64(n) < addr {
		return nil
	}
	b := e.b.Value()
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.b) == 0 {
		return nil
	}
	b.regs++
	return b
}

// inBuffer reports whether [addr, addr+n) lies inside a Buffer of list (a
// bufferView). The caller holds its QP's send lock, which keeps every
// Buffer it finds mapped, closed or collected meanwhile: Buffer.Close and
// forgetBuffer wait for it before they unmap. It allocates nothing.
func inBuffer(list []bufEntry, addr, n uint64) bool { return bufferWith(list, addr, n) >= 0 }

// bufferWith is inBuffer, returning the index of the Buffer, or -1.
func bufferWith(list []bufEntry, addr, n uint64) int {
	end := addr + n
	if end < addr {
		return -1
	}
	if i := bufferAt(list, addr); i >= 0 && end <= list[i].end {
		return i
	}
	return -1
}

// unregister drops a registration counted by bufferOf.
func (b *Buffer) unregister() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.regs--
	b.mu.Unlock()
}
