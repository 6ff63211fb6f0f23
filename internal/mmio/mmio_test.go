package mmio

import (
	"encoding/binary"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func mapAnon(t testing.TB, size int) []byte {
	t.Helper()
	m, err := sys.MmapAnon(size, "mmio test region")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmap(); err != nil {
			t.Error(err)
		}
	})
	return m.Bytes()
}

func TestViewsAliasTheMappedBytes(t *testing.T) {
	b := mapAnon(t, 4096)
	U32(b, 128).Store(0xdeadbeef)
	if got := binary.NativeEndian.Uint32(b[128:]); got != 0xdeadbeef {
		t.Fatalf("U32 view wrote %#x at offset 128, want 0xdeadbeef", got)
	}
	binary.NativeEndian.PutUint32(b[256:], 7)
	if got := U32(b, 256).Load(); got != 7 {
		t.Fatalf("U32 view read %d at offset 256, want 7", got)
	}
	U64(b, 8).Store(0x0102030405060708)
	if got := binary.NativeEndian.Uint64(b[8:]); got != 0x0102030405060708 {
		t.Fatalf("U64 view wrote %#x, want 0x0102030405060708", got)
	}
	// The last word of the region is reachable.
	U64(b, len(b)-8).Store(1)
	if binary.NativeEndian.Uint64(b[len(b)-8:]) != 1 {
		t.Fatal("U64 view at the end of the region did not write the last 8 bytes")
	}
	StoreRelease32(U32(b, 0), 42)
	if got := LoadAcquire32(U32(b, 0)); got != 42 {
		t.Fatalf("LoadAcquire32 = %d, want 42", got)
	}
	StoreRelease64(U64(b, 16), 1<<40)
	if got := LoadAcquire64(U64(b, 16)); got != 1<<40 {
		t.Fatalf("LoadAcquire64 = %d, want 1<<40", got)
	}
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic; want one mentioning %q", want)
		}
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), want) {
			t.Fatalf("panic %v; want an error mentioning %q", r, want)
		}
	}()
	f()
}

func TestViewChecks(t *testing.T) {
	b := mapAnon(t, 4096) // page aligned
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"U32 negative offset", func() { U32(b, -4) }, "outside the 4096-byte region"},
		{"U32 past end", func() { U32(b, 4093) }, "outside"},
		{"U32 exactly past end", func() { U32(b, 4096) }, "outside"},
		{"U32 misaligned", func() { U32(b, 2) }, "not 4-byte aligned"},
		{"U64 misaligned", func() { U64(b, 4) }, "not 8-byte aligned"},
		{"U64 past end", func() { U64(b, 4092) }, "outside"},
		{"U64 empty slice", func() { U64(nil, 0) }, "outside the 0-byte region"},
		{"Ptr64 misaligned", func() { Ptr64(b, 12) }, "not 8-byte aligned"},
		{"Ptr32 misaligned", func() { Ptr32(b, 1) }, "not 4-byte aligned"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { mustPanic(t, c.want, c.f) })
	}
	// A sub-slice that starts at an odd address makes offset 0 misaligned:
	// alignment is checked on the address, not the offset.
	mustPanic(t, "not 4-byte aligned", func() { U32(b[1:], 0) })
	if err := CheckView(b, 3, 4); err == nil || !strings.Contains(err.Error(), "aligned") {
		t.Fatalf("CheckView(off 3, size 4) = %v, want an alignment error", err)
	}
	if err := CheckView(b, 0, 3); err == nil {
		t.Fatal("CheckView accepted size 3")
	}
	if err := CheckView(b, 4088, 8); err != nil {
		t.Fatalf("CheckView rejected the last aligned word: %v", err)
	}
}

func TestBarriersAndWrites(t *testing.T) {
	ToDeviceBarrier()
	FromDeviceBarrier()
	OrderingWriteBarrier()
	FlushWrites()
	WCStart()

	b := mapAnon(t, 4096)
	// Around each word the bytes are 0xff, so that a store wider than its
	// word shows.
	for i := range 128 {
		b[i] = 0xff
	}
	Write64(Ptr64(b, 64), 0x1122334455667788)
	if got := binary.NativeEndian.Uint64(b[64:]); got != 0x1122334455667788 {
		t.Fatalf("Write64 stored %#x", got)
	}
	Write32(Ptr32(b, 4), 0xa1b2c3d4)
	if got := binary.NativeEndian.Uint32(b[4:]); got != 0xa1b2c3d4 {
		t.Fatalf("Write32 stored %#x", got)
	}
	if got := LoadFromDevice32(U32(b, 4)); got != 0xa1b2c3d4 {
		t.Fatalf("LoadFromDevice32 loaded %#x, want 0xa1b2c3d4", got)
	}
	StoreForDevice32(U32(b, 12), 0x5a6b7c8d)
	if got := binary.NativeEndian.Uint32(b[12:]); got != 0x5a6b7c8d || b[11] != 0xff || b[16] != 0xff {
		t.Fatalf("StoreForDevice32 stored %#x, or outside its word", got)
	}
	if b[0] != 0xff || b[8] != 0xff || b[63] != 0xff || b[72] != 0xff {
		t.Fatal("Write32 or Write64 touched bytes outside its word")
	}
}

func TestBytes(t *testing.T) {
	b := mapAnon(t, 4096)
	copy(b[100:], "hello")
	addr := uint64(uintptr(unsafe.Pointer(&b[100])))
	v := Bytes(addr, 5)
	if string(v) != "hello" {
		t.Fatalf("Bytes = %q, want hello", v)
	}
	v[0] = 'j'
	if b[100] != 'j' {
		t.Fatal("Bytes does not alias the memory at addr")
	}
	if Bytes(0, 0) != nil || Bytes(addr, -1) != nil {
		t.Fatal("Bytes with n <= 0 must return nil")
	}
}

var sinkU32 uint32

func TestNoAllocations(t *testing.T) {
	b := mapAnon(t, 4096)
	p64 := Ptr64(b, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		v := U32(b, 128)
		w32 := U32(b, 192)
		StoreRelease32(v, LoadAcquire32(v)+1)
		w := U64(b, 256)
		StoreRelease64(w, LoadAcquire64(w)+1)
		ToDeviceBarrier()
		FromDeviceBarrier()
		OrderingWriteBarrier()
		FlushWrites()
		WCStart()
		Write64(p64, 1)
		Write32(Ptr32(b, 8), 2)
		StoreForDevice32(v, 3)
		StoreRelease32(w32, 4)
		if LoadAcquire32(w32) != 4 {
			panic("StoreRelease32 did not store")
		}
		WriteBlock64(b, 512, b[1024:])
		WriteBlocks64WC(b, 576, b[1024:], 2)
		StoreForDevice32WC(v, 5, Ptr64(b, 576), Ptr64(b, 1024), 2)
		StoreForDevice32WC(v, 6, Ptr64(b, 576), Ptr64(b, 1024), 0)
		sinkU32 += uint32(len(Bytes(uint64(uintptr(unsafe.Pointer(&b[0]))), 16)))
	})
	if allocs != 0 {
		t.Fatalf("views, barriers and writes allocate: %v allocs per run, want 0", allocs)
	}
}

// TestRingProducerConsumer runs a single-producer single-consumer ring over
// anonymous mapped memory with the layout style of the rxe rings: producer
// and consumer indices on their own cache lines, masked indices, one slot
// kept empty. The producer writes each slot with plain stores and publishes
// it with StoreRelease32; the consumer observes it with LoadAcquire32 and must
// see every byte of every message, in order, across many wraparounds.
func TestRingProducerConsumer(t *testing.T) {
	const (
		prodOff  = 128
		consOff  = 256
		dataOff  = 384
		slotSize = 64
		slots    = 16
		mask     = slots - 1
		messages = 100000
	)
	b := mapAnon(t, dataOff+slots*slotSize)
	prod, cons := U32(b, prodOff), U32(b, consOff)
	slot := func(i uint32) []byte { return b[dataOff+int(i)*slotSize:][:slotSize] }

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := prod.Load()
		for seq := uint64(1); seq <= messages; {
			next := (p + 1) & mask
			if next == LoadAcquire32(cons) {
				runtime.Gosched()
				continue // full
			}
			s := slot(p)
			for w := 0; w < slotSize; w += 8 {
				binary.NativeEndian.PutUint64(s[w:], seq*uint64(w+1))
			}
			StoreRelease32(prod, next)
			p = next
			seq++
		}
	}()

	c := cons.Load()
	for seq := uint64(1); seq <= messages; {
		if LoadAcquire32(prod) == c {
			runtime.Gosched()
			continue // empty
		}
		s := slot(c)
		for w := 0; w < slotSize; w += 8 {
			if got, want := binary.NativeEndian.Uint64(s[w:]), seq*uint64(w+1); got != want {
				t.Fatalf("message %d word %d: got %d, want %d (read before the producer's stores were visible)", seq, w/8, got, want)
			}
		}
		c = (c + 1) & mask
		StoreRelease32(cons, c)
		seq++
	}
	wg.Wait()
	if p, cc := prod.Load(), cons.Load(); p != cc || p != messages&mask {
		t.Fatalf("final indices producer %d consumer %d, want both %d", p, cc, messages&mask)
	}
}

func BenchmarkBarriers(b *testing.B) {
	for b.Loop() {
		ToDeviceBarrier()
		FromDeviceBarrier()
	}
}

// WriteBlock64 copies exactly 64 bytes to an aligned place in dst and
// refuses a block that does not fit or is not aligned.
func TestWriteBlock64(t *testing.T) {
	for _, w := range []struct {
		name  string
		write func([]byte, int, []byte)
	}{{"WriteBlock64", WriteBlock64}, {"WriteBlocks64WC of 1", func(d []byte, off int, s []byte) { WriteBlocks64WC(d, off, s, 1) }}} {
		dst := mapAnon(t, 4096)
		src := make([]byte, 80)
		for i := range src {
			src[i] = byte(i + 1)
		}
		w.write(dst, 136, src) // 8-byte aligned is enough
		for i := range 64 {
			if dst[136+i] != byte(i+1) {
				t.Fatalf("%s: byte %d is %d, want %d", w.name, i, dst[136+i], i+1)
			}
		}
		if dst[135] != 0 || dst[200] != 0 {
			t.Fatalf("%s wrote outside its 64 bytes", w.name)
		}
		for _, c := range []struct {
			name     string
			dst, src []byte
			off      int
		}{
			{"dst too short", dst[:100], src, 40},
			{"negative offset", dst, src, -8},
			{"src too short", dst, src[:63], 0},
			{"misaligned", dst, src, 4},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: %s did not panic", c.name, w.name)
					}
				}()
				w.write(c.dst, c.off, c.src)
			}()
		}
	}
}

func TestWriteBlocks64WC(t *testing.T) {
	dst := mapAnon(t, 4096)
	src := make([]byte, 200)
	for i := range src {
		src[i] = byte(i + 1)
	}
	WriteBlocks64WC(dst, 1024, src, 3)
	for i := range 192 {
		if dst[1024+i] != byte(i+1) {
			t.Fatalf("byte %d is %d, want %d", i, dst[1024+i], i+1)
		}
	}
	if dst[1023] != 0 || dst[1024+192] != 0 {
		t.Fatal("WriteBlocks64WC wrote outside its three blocks")
	}
	// Exact fits: the last blocks of dst, all of src.
	WriteBlocks64WC(dst, len(dst)-192, src[:192], 3)
	if dst[len(dst)-1] != 192 {
		t.Fatalf("the last byte of an exact fit is %d, want 192", dst[len(dst)-1])
	}
	for _, c := range []struct {
		name     string
		dst, src []byte
		off, n   int
	}{
		{"no block", dst, src, 0, 0},
		{"negative count", dst, src, 0, -1},
		{"dst too short for the last block", dst[:1024+191], src, 1024, 3},
		{"src too short for the last block", dst, src[:191], 0, 3},
		{"count past dst", dst, src, 0, 1 << 60},
		{"negative offset", dst, src, -64, 2},
		{"misaligned", dst, src, 12, 2},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: WriteBlocks64WC did not panic", c.name)
				}
			}()
			WriteBlocks64WC(c.dst, c.off, c.src, c.n)
		}()
	}
}

// TestStoreForDevice32WC checks the record's store and the doorbell of
// both kinds: n blocks, or with n 0 one 8-byte word, and nothing else.
// (It takes pointers and checks nothing; mlx5's TestDoorbellInsideRegister
// checks that its caller keeps them inside the register and the ring.)
func TestStoreForDevice32WC(t *testing.T) {
	dst := mapAnon(t, 4096)
	rec := U32(mapAnon(t, 4096), 4)
	src := make([]byte, 200)
	for i := range src {
		src[i] = byte(i + 1)
	}
	StoreForDevice32WC(rec, 0x01020304, Ptr64(dst, 1024), Ptr64(src, 0), 3)
	if got := LoadAcquire32(rec); got != 0x01020304 {
		t.Fatalf("the record holds %#x, want 0x01020304", got)
	}
	for i := range 192 {
		if dst[1024+i] != byte(i+1) {
			t.Fatalf("block byte %d is %d, want %d", i, dst[1024+i], i+1)
		}
	}
	if dst[1023] != 0 || dst[1024+192] != 0 {
		t.Fatal("StoreForDevice32WC wrote outside its three blocks")
	}
	StoreForDevice32WC(rec, 7, Ptr64(dst, 2048), Ptr64(src, 16), 0)
	if got := LoadAcquire32(rec); got != 7 {
		t.Fatalf("the record holds %#x, want 7", got)
	}
	for i := range 8 {
		if dst[2048+i] != byte(17+i) {
			t.Fatalf("word byte %d is %d, want %d", i, dst[2048+i], 17+i)
		}
	}
	if dst[2047] != 0 || dst[2056] != 0 {
		t.Fatal("StoreForDevice32WC with no block wrote more than one word")
	}
}
