package rxe

import (
	"strings"
	"testing"
	"unsafe"
)

func TestRingHeaderValidation(t *testing.T) {
	type hdr struct{ log2, mask, prod, cons uint32 }
	cases := []struct {
		name    string
		size    int // mapping length (0: the exact size the header needs)
		h       hdr
		minElem int
		want    string
	}{
		{"ok", 0, hdr{7, 127, 0, 0}, 48, ""},
		{"ok nonzero indices", 0, hdr{6, 15, 3, 9}, 40, ""},
		{"shorter than header", 383, hdr{7, 127, 0, 0}, 48, "smaller than the 384-byte queue header"},
		{"slots too small", 0, hdr{5, 15, 0, 0}, 48, "slots are 32 bytes (log2_elem_size 5) but 48 are needed"},
		{"mask not power of two minus one", 4096, hdr{6, 5, 0, 0}, 48, "index_mask 0x5"},
		{"mask zero", 4096, hdr{6, 0, 0, 0}, 48, "index_mask 0x0"},
		{"mapping shorter than slots", 384 + 15*64, hdr{6, 15, 0, 0}, 48, "describes 16 slots of 64 bytes"},
		{"absurd log2", 4096, hdr{40, 15, 0, 0}, 48, "log2_elem_size 40"},
		{"huge mask", 4096, hdr{6, 0xffffffff, 0, 0}, 48, "describes 4294967296 slots"},
		{"producer beyond mask", 0, hdr{6, 15, 16, 0}, 48, "exceed index_mask"},
		{"consumer beyond mask", 0, hdr{6, 15, 0, 99}, 48, "exceed index_mask"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			size := c.size
			if size == 0 {
				size = 384 + int(c.h.mask+1)<<c.h.log2
			}
			buf := mapAnon(t, max(size, 384))[:size]
			if size >= 384 {
				le.PutUint32(buf[0:], c.h.log2)
				le.PutUint32(buf[4:], c.h.mask)
				le.PutUint32(buf[128:], c.h.prod)
				le.PutUint32(buf[256:], c.h.cons)
			}
			_, perr := NewProducer(buf, c.minElem)
			_, cerr := NewConsumer(buf, c.minElem)
			for _, err := range []error{perr, cerr} {
				if c.want == "" {
					if err != nil {
						t.Fatalf("valid header refused: %v", err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one containing %q", err, c.want)
				}
			}
		})
	}
	buf := mapAnon(t, 4096)
	if _, err := NewProducer(buf[4:], 16); err == nil || !strings.Contains(err.Error(), "not 8-byte aligned") {
		t.Fatalf("misaligned mapping: %v", err)
	}
}

func TestRingGeometry(t *testing.T) {
	r := newFakeRing(t, 8, 32)
	p, err := NewProducer(r.buf, 208)
	if err != nil {
		t.Fatal(err)
	}
	if p.Capacity() != 31 || p.SlotSize() != 256 {
		t.Fatalf("Capacity %d SlotSize %d, want 31 and 256", p.Capacity(), p.SlotSize())
	}
	if p.Free() != 31 || p.Pending() != 0 {
		t.Fatalf("empty ring: Free %d Pending %d", p.Free(), p.Pending())
	}
}

// TestProducerFullWraparound fills the ring to capacity, checks that every
// slot is the one the kernel would read, lets the "kernel" consume, and
// repeats across many wraparounds.
func TestProducerFullWraparound(t *testing.T) {
	r := newFakeRing(t, 6, 8)
	r.kprod.Store(5) // indices survive a QP reset; start mid-ring
	r.kcons.Store(5)
	p, err := NewProducer(r.buf, 40)
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	for round := 0; round < 50; round++ {
		for i := 0; i < p.Capacity(); i++ {
			if p.Full() {
				t.Fatalf("round %d: full after %d of %d entries", round, i, p.Capacity())
			}
			s := p.Slot()
			idx := r.kprod.Load()
			if want := r.slot(idx); unsafe.SliceData(s) != unsafe.SliceData(want) || len(s) != 64 || cap(s) != 64 {
				t.Fatalf("Slot is not data + (%d << 6) with length 64 (len %d cap %d)", idx, len(s), cap(s))
			}
			seq++
			le.PutUint64(s, seq)
			p.Publish()
			if got := r.kprod.Load(); got != (idx+1)&7 {
				t.Fatalf("producer_index %d after publish, want %d", got, (idx+1)&7)
			}
		}
		if !p.Full() || p.Free() != 0 || p.Pending() != 7 {
			t.Fatalf("round %d: after %d posts Full=%v Free=%d Pending=%d", round, p.Capacity(), p.Full(), p.Free(), p.Pending())
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Publish on a full ring did not panic")
				}
			}()
			p.Publish()
		}()
		// The kernel consumes three, then the rest; the entries are in order.
		for k := 0; k < 7; k++ {
			c := r.kcons.Load()
			if got, want := le.Uint64(r.slot(c)), seq-6+uint64(k); got != want {
				t.Fatalf("kernel read entry %d at slot %d, want %d", got, c, want)
			}
			r.kcons.Store((c + 1) & 7)
			if k == 2 && (p.Full() || p.Free() != 3) {
				t.Fatalf("after 3 consumed: Full=%v Free=%d", p.Full(), p.Free())
			}
		}
	}
}

func TestConsumerEmptyWraparound(t *testing.T) {
	r := newFakeRing(t, 7, 4)
	c, err := NewConsumer(r.buf, 48)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Empty() || c.Len() != 0 {
		t.Fatal("new CQ is not empty")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Consume on an empty ring did not panic")
			}
		}()
		c.Consume()
	}()
	var next uint64
	for round := 0; round < 40; round++ {
		n := 1 + round%3 // at most capacity 3
		for i := 0; i < n; i++ {
			v := next + uint64(i)
			r.kernelPostCQE(t, func(s []byte) { le.PutUint64(s, v) })
		}
		if c.Len() != n {
			t.Fatalf("Len %d, want %d", c.Len(), n)
		}
		for i := 0; i < n; i++ {
			if c.Empty() {
				t.Fatalf("round %d: empty after %d of %d", round, i, n)
			}
			if got := le.Uint64(c.Peek()); got != next {
				t.Fatalf("Peek read %d, want %d", got, next)
			}
			idx := r.kcons.Load()
			c.Consume()
			if got := r.kcons.Load(); got != (idx+1)&3 {
				t.Fatalf("consumer_index %d after Consume, want %d", got, (idx+1)&3)
			}
			next++
		}
		if !c.Empty() {
			t.Fatal("not empty after consuming everything")
		}
	}
}
