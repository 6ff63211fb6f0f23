package provider

import (
	"errors"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// PostSend is the write() command POST_SEND with no work request, the send
// doorbell of the drivers whose kernel side reads the send ring itself: rxe
// runs the QP's requester on the WQEs already in the ring (rdma-core:
// providers/rxe/rxe.c post_send_db; docs/abi.md §3.7), siw processes its
// send ring (kernel: siw_verbs.c siw_post_send; rdma-core: siw.c siw_db).
// It lives off the Go heap, in a slot of a page its Device's Doorbells
// mapped, so that the response pointer inside it always points at memory
// that cannot move, and ringing it builds nothing: Device.Doorbell writes
// the PostSendLen bytes at it.
type PostSend struct {
	hdr  abi.UverbsCmdHdr
	cmd  abi.UverbsPostSend
	resp abi.UverbsPostSendResp
}

// PostSendLen is the length of the command a PostSend holds.
const PostSendLen = unsafe.Sizeof(abi.UverbsCmdHdr{}) + unsafe.Sizeof(abi.UverbsPostSend{})

// Command reports whether the PostSend is a POST_SEND command (for tests).
func (db *PostSend) Command() uint32 { return db.hdr.Command }

// QPHandle is the QP handle the PostSend rings (for tests).
func (db *PostSend) QPHandle() uint32 { return db.cmd.QPHandle }

// build writes the command for the QP handle into db, whose response
// follows it in the same slot.
func (db *PostSend) build(handle uint32) {
	db.hdr = abi.UverbsCmdHdr{
		Command:  abi.IB_USER_VERBS_CMD_POST_SEND,
		InWords:  uint16(PostSendLen / 4),
		OutWords: uint16(unsafe.Sizeof(abi.UverbsPostSendResp{}) / 4),
	}
	db.cmd = abi.UverbsPostSend{
		Response: uint64(uintptr(unsafe.Pointer(&db.resp))),
		QPHandle: handle,
		// Any wqe_size of at least sizeof(ib_uverbs_send_wr) is accepted
		// (kernel: core/uverbs_cmd.c ib_uverbs_post_send).
		WQESize: uint32(unsafe.Sizeof(abi.UverbsSendWR{})),
	}
	db.resp = abi.UverbsPostSendResp{}
}

// The doorbells share pages: a slot of doorbellSlot bytes each (a
// PostSend rounded up to a cache line, so that two QPs' responses never
// share one), doorbellSlots to a page of doorbellPage bytes, one bit each
// in a page's mask of used slots.
const (
	doorbellSlot  = 64
	doorbellPage  = 4096
	doorbellSlots = doorbellPage / doorbellSlot
)

// The mask of a page's used slots is one uint64, and a PostSend fits its
// slot (both fail to compile otherwise).
var _ [64 - doorbellSlots]struct{}
var _ [doorbellSlot - unsafe.Sizeof(PostSend{})]struct{}

// Doorbells holds the PostSend doorbells of one device's QPs, each in a
// slot of an anonymous page shared with up to 63 others, where a page per
// QP costs an mmap at its creation and an munmap at its close (which under
// emulation, with the process's threads on several CPUs, is a slow TLB
// shoot-down). librxe keeps no such command: it builds POST_SEND on the
// stack at each doorbell (rdma-core: providers/rxe/rxe.c post_send_db),
// which Go cannot do without the command's response pointer pointing into
// a stack that may move. A page is unmapped when its last slot is freed,
// so that a device whose QPs are all closed holds no mapping for them.
// The zero value is ready to use; it is safe for concurrent use.
type Doorbells struct {
	mu     sync.Mutex
	pages  []*doorbellPageState
	closed bool
}

type doorbellPageState struct {
	m    *sys.Mapping
	base uintptr
	used uint64 // bit i: slot i holds a QP's doorbell
}

// ErrDoorbellsClosed is New's error once Close was called: the device is
// closing.
var ErrDoorbellsClosed = errors.New("the device is closed: open it again to create QPs")

// New builds the doorbell of the QP handle in a free slot, mapping a page
// when none has one (what names the page for the leak tracer and errors);
// give it back with Free after DESTROY_QP.
func (d *Doorbells) New(handle uint32, what string) (*PostSend, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrDoorbellsClosed
	}
	var p *doorbellPageState
	for _, q := range d.pages {
		if q.used != ^uint64(0) {
			p = q
			break
		}
	}
	if p == nil {
		m, err := sys.MmapAnon(doorbellPage, what)
		if err != nil {
			return nil, err
		}
		p = &doorbellPageState{m: m, base: uintptr(unsafe.Pointer(unsafe.SliceData(m.Bytes())))}
		d.pages = append(d.pages, p)
	}
	i := bits.TrailingZeros64(^p.used)
	p.used |= 1 << i
	db := (*PostSend)(unsafe.Pointer(&p.m.Bytes()[i*doorbellSlot]))
	db.build(handle)
	return db, nil
}

// Free gives back the slot of db, a doorbell New returned, once its QP is
// destroyed; a nil db, or one after Close, is ignored.
func (d *Doorbells) Free(db *PostSend) {
	if db == nil {
		return
	}
	a := uintptr(unsafe.Pointer(db))
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, p := range d.pages {
		if a < p.base || a >= p.base+doorbellPage {
			continue
		}
		i := (a - p.base) / doorbellSlot
		*db = PostSend{}
		p.used &^= 1 << i
		if p.used == 0 {
			p.m.Unmap()
			d.pages = append(d.pages[:k], d.pages[k+1:]...)
		}
		return
	}
}

// InUse returns the number of slots held and of pages mapped (for tests).
func (d *Doorbells) InUse() (slots, pages int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.pages {
		slots += bits.OnesCount64(p.used)
	}
	return slots, len(d.pages)
}

// Close unmaps the pages left, after the device's QPs are closed; New
// fails from then on. Device.Close closes every QP first, so a slot left
// can only be that of a QP whose create raced the close (its Free, after
// Close, is ignored).
func (d *Doorbells) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, p := range d.pages {
		p.m.Unmap()
	}
	d.pages = nil
}
