package rxe

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/rdma/internal/mmio"
)

// Ring is a validated view of one mapped rxe queue (struct rxe_queue_buf):
// the slot geometry read from the header the kernel wrote, and atomic views
// of the two indices. Producer and Consumer add the index protocol of one
// side.
//
// Geometry is read from the header, never computed from the requested
// sizes, as rdma-core does (providers/rxe/rxe.c reads log2_elem_size from
// the mapping).
type Ring struct {
	data  []byte // the slot area, exactly slots<<shift bytes
	shift uint   // log2_elem_size
	mask  uint32 // index_mask
	prod  *atomic.Uint32
	cons  *atomic.Uint32
}

func newRing(buf []byte, minElem int, what string) (Ring, error) {
	if len(buf) < RingHeaderSize {
		return Ring{}, fmt.Errorf("rxe: %s ring mapping is %d bytes, smaller than the %d-byte queue header; map the whole size the kernel returned in mminfo", what, len(buf), RingHeaderSize)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%8 != 0 {
		return Ring{}, fmt.Errorf("rxe: %s ring mapping at %p is not 8-byte aligned; pass the slice returned by mmap", what, unsafe.SliceData(buf))
	}
	log2 := mmio.U32(buf, ringLog2ElemSize).Load()
	mask := mmio.U32(buf, ringIndexMask).Load()
	if log2 >= 31 {
		return Ring{}, fmt.Errorf("rxe: %s ring header has log2_elem_size %d; the mapping is not an rxe queue", what, log2)
	}
	if elem := 1 << log2; elem < minElem {
		return Ring{}, fmt.Errorf("rxe: %s ring slots are %d bytes (log2_elem_size %d) but %d are needed; the mapping does not match the queue's capabilities", what, elem, log2, minElem)
	}
	slots := uint64(mask) + 1
	if mask == 0 || slots&(slots-1) != 0 {
		return Ring{}, fmt.Errorf("rxe: %s ring header has index_mask %#x; it must be a power of two minus one and at least 1", what, mask)
	}
	need := uint64(RingHeaderSize) + slots<<log2
	if uint64(len(buf)) < need {
		return Ring{}, fmt.Errorf("rxe: %s ring mapping is %d bytes but its header describes %d slots of %d bytes (%d bytes with the header); map the whole size the kernel returned", what, len(buf), slots, 1<<log2, need)
	}
	r := Ring{
		data:  buf[ringData:need:need],
		shift: uint(log2),
		mask:  mask,
		prod:  mmio.U32(buf, ringProducer),
		cons:  mmio.U32(buf, ringConsumer),
	}
	if p, c := r.prod.Load(), r.cons.Load(); p > mask || c > mask {
		return Ring{}, fmt.Errorf("rxe: %s ring indices producer %d consumer %d exceed index_mask %d; the mapping is corrupt", what, p, c, mask)
	}
	return r, nil
}

// Capacity is the number of entries the ring can hold: index_mask, since one
// slot always stays empty (full is (producer+1)&mask == consumer).
func (r *Ring) Capacity() int { return int(r.mask) }

// SlotSize is the size of one slot in bytes (1 << log2_elem_size).
func (r *Ring) SlotSize() int { return 1 << r.shift }

func (r *Ring) slot(i uint32) []byte {
	shift := r.shift & 63 // always < 64; the mask tells the compiler so
	off := uint(i&r.mask) << shift
	end := off + 1<<shift
	return r.data[off:end:end]
}

// Producer is the user side of a ring the user fills and the kernel drains:
// a send queue, receive queue or SRQ (QUEUE_TYPE_FROM_CLIENT in the kernel).
// The user owns producer_index; the kernel publishes consumer_index with
// smp_store_release.
//
// A Producer is not safe for concurrent use: hold one lock per queue, as
// rdma-core holds sq.lock / rq.lock (providers/rxe/rxe_queue.h).
type Producer struct {
	Ring
	next uint32 // private copy of producer_index, the slot to fill next
	seen uint32 // consumer_index as last loaded from the kernel
}

// NewProducer validates the header of a mapped SQ, RQ or SRQ whose entries
// need at least elemSize bytes and returns its producer side. The indices
// are read from the header: after a QP reset or an SRQ resize they need not
// be 0.
func NewProducer(buf []byte, elemSize int) (*Producer, error) {
	r, err := newRing(buf, elemSize, "work queue")
	if err != nil {
		return nil, err
	}
	return &Producer{Ring: r, next: r.prod.Load(), seen: r.cons.Load()}, nil
}

// Full reports whether every slot holds an entry the kernel has not
// consumed yet. It loads consumer_index (acquire) only when the cached copy
// says the ring is full, so that a poster does not pull the kernel's cache
// line on every post.
func (p *Producer) Full() bool {
	n := (p.next + 1) & p.mask
	if n != p.seen {
		return false
	}
	p.seen = mmio.LoadAcquire32(p.cons) & p.mask
	return n == p.seen
}

// Free is the number of slots that can be filled now (loads consumer_index).
func (p *Producer) Free() int {
	p.seen = mmio.LoadAcquire32(p.cons) & p.mask
	return int((p.seen - p.next - 1) & p.mask)
}

// Pending is the number of published entries the kernel has not consumed
// (loads consumer_index).
func (p *Producer) Pending() int {
	p.seen = mmio.LoadAcquire32(p.cons) & p.mask
	return int((p.next - p.seen) & p.mask)
}

// Slot returns the next free slot. Call it only after Full reported false.
// The bytes are the shared mapping: write the entry, then Publish. Never
// touch a slot after publishing it: the kernel writes bookkeeping into
// posted send WQEs.
func (p *Producer) Slot() []byte { return p.slot(p.next) }

// Publish hands the slot returned by Slot to the kernel: a store-release of
// producer_index+1, so every byte written to the slot is visible to the
// kernel before the new index (rdma-core advance_producer). It panics if the
// ring is full, which means Full was not checked.
func (p *Producer) Publish() {
	if p.Full() {
		panic("rxe: Publish on a full ring; check Full before filling a slot")
	}
	p.next = (p.next + 1) & p.mask
	mmio.StoreRelease32(p.prod, p.next)
}

// Stage hands the slot returned by Slot to the ring without publishing it:
// the private producer index advances, and Commit later makes every staged
// slot visible to the kernel with one store-release. It panics if the ring
// is full, which means Full was not checked.
func (p *Producer) Stage() {
	n := (p.next + 1) & p.mask
	if n == p.seen && p.Full() {
		panic("rxe: Stage on a full ring; check Full before filling a slot")
	}
	p.next = n
}

// Next is the private producer index: it moves only as slots are staged
// or published, so a caller that holds the ring's lock sees from it whether
// its call added entries.
func (p *Producer) Next() uint32 { return p.next }

// Commit publishes the staged slots: a store-release of the private
// producer index (rdma-core advance_producer, once per batch; docs/abi.md
// §3.5).
func (p *Producer) Commit() { mmio.StoreRelease32(p.prod, p.next) }

// Consumer is the user side of a ring the kernel fills and the user drains:
// a completion queue (QUEUE_TYPE_TO_CLIENT). The user owns consumer_index;
// the kernel publishes producer_index with smp_store_release.
//
// A Consumer is not safe for concurrent use: hold one lock per CQ.
type Consumer struct {
	Ring
	next uint32 // private copy of consumer_index, the slot to read next
	seen uint32 // producer_index as last loaded from the kernel
}

// NewConsumer validates the header of a mapped CQ whose entries need at
// least elemSize bytes and returns its consumer side. After RESIZE_CQ the
// kernel has moved the unread entries to the start of the new ring; build a
// new Consumer on the new mapping.
func NewConsumer(buf []byte, elemSize int) (*Consumer, error) {
	r, err := newRing(buf, elemSize, "completion queue")
	if err != nil {
		return nil, err
	}
	return &Consumer{Ring: r, next: r.cons.Load(), seen: r.prod.Load()}, nil
}

// Empty reports whether there is no entry to read. It loads producer_index
// (acquire) only when every entry seen so far has been consumed; the
// acquire load orders the reads of the entries after it.
func (c *Consumer) Empty() bool {
	if c.next != c.seen {
		return false
	}
	c.seen = mmio.LoadAcquire32(c.prod) & c.mask
	return c.next == c.seen
}

// Len is the number of entries ready to read (loads producer_index).
func (c *Consumer) Len() int {
	c.seen = mmio.LoadAcquire32(c.prod) & c.mask
	return int((c.seen - c.next) & c.mask)
}

// Peek returns the next entry. Call it only after Empty reported false. The
// bytes are the shared mapping and are valid until Consume.
func (c *Consumer) Peek() []byte { return c.slot(c.next) }

// Consume releases the entry returned by Peek to the kernel: a
// store-release of consumer_index+1, so the reads of the entry complete
// before the kernel may reuse the slot (rdma-core advance_consumer). It
// panics if the ring is empty, which means Empty was not checked.
func (c *Consumer) Consume() {
	c.skip()
	c.publish()
}

// publish stores the private consumer index to the shared header.
func (c *Consumer) publish() { mmio.StoreRelease32(c.cons, c.next) }

// IndexStore returns the word and the value publish stores, for the caller
// of CQ.Take, which makes the store itself after it, just before it
// releases its lock (uverbs CQ.Poll).
func (c *Consumer) IndexStore() (*atomic.Uint32, uint32) { return c.cons, c.next }

// skip advances the private index without publishing it.
func (c *Consumer) skip() {
	if c.next == c.seen && c.Empty() {
		panic("rxe: Consume on an empty ring; check Empty before reading an entry")
	}
	c.next = (c.next + 1) & c.mask
}
