package mlx5

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
)

// The context's driver data and UAR layout, field by field against
// docs/mlx5.md §10.

func newMutex() sync.Locker { return new(sync.Mutex) }

func TestAllocUcontextReq(t *testing.T) {
	for _, c := range []struct {
		page, tot, lowLat int
	}{
		// mlx5.c get_total_uuars: max(page/4096 × 2, 16) aligned to 2;
		// get_num_low_lat_uuars: max(4, total − 12).
		{4096, 16, 4},
		{16384, 16, 4},
		{65536, 32, 20},
	} {
		req := AllocUcontextReq(c.page)
		b := unsafe.Slice((*byte)(unsafe.Pointer(&req)), unsafe.Sizeof(req))
		if len(b) != 32 {
			t.Fatalf("mlx5_ib_alloc_ucontext_req_v2 is %d bytes, want 32", len(b))
		}
		// Offsets of struct mlx5_ib_alloc_ucontext_req_v2: total_num_bfregs
		// 0, num_low_latency_bfregs 4, flags 8, comp_mask 12,
		// max_cqe_version 16, lib_caps 24.
		le := binary.LittleEndian
		if got := le.Uint32(b[0:]); got != uint32(c.tot) {
			t.Errorf("page %d: total_num_bfregs %d, want %d", c.page, got, c.tot)
		}
		if got := le.Uint32(b[4:]); got != uint32(c.lowLat) {
			t.Errorf("page %d: num_low_latency_bfregs %d, want %d", c.page, got, c.lowLat)
		}
		if got := le.Uint32(b[8:]); got != 0 {
			t.Errorf("page %d: flags %#x, want 0 (no DEVX)", c.page, got)
		}
		if b[16] != 1 {
			t.Errorf("page %d: max_cqe_version %d, want 1", c.page, b[16])
		}
		if got := le.Uint64(b[24:]); got != abi.MLX5_LIB_CAP_4K_UAR {
			t.Errorf("page %d: lib_caps %#x, want MLX5_LIB_CAP_4K_UAR alone", c.page, got)
		}
		for _, i := range []int{12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23} {
			if b[i] != 0 {
				t.Errorf("page %d: byte %d is %#x, want 0", c.page, i, b[i])
			}
		}
	}
}

func TestUARPages(t *testing.T) {
	for _, c := range []struct {
		tot, perPage, logSize uint32
		pages, uarsPerPage    int
	}{
		{16, 1, 12, 8, 1},
		{32, 16, 12, 1, 16}, // 64 KiB pages, 4 KiB UARs
		{16, 0, 0, 8, 1},    // a kernel that reports neither: one UAR a page
		{16, 0, 12, 0, 0},
	} {
		r := abi.Mlx5AllocUcontextResp{TotBfregs: c.tot, NumUarsPerPage: c.perPage, LogUarSize: c.logSize}
		pages, per := UARPages(&r)
		if pages != c.pages || per != c.uarsPerPage {
			t.Errorf("%+v: %d pages of %d UARs, want %d of %d", c, pages, per, c.pages, c.uarsPerPage)
		}
	}
	// (MLX5_IB_MMAP_REGULAR_PAGE << 8 | index) pages.
	if got := UARMmapOffset(3, 4096); got != 3*4096 {
		t.Errorf("UAR page 3: mmap offset %#x, want %#x", got, 3*4096)
	}
}

func TestBFRegLayout(t *testing.T) {
	pages := [][]byte{make([]byte, 16384), make([]byte, 16384)}
	mc := &Context{}
	// 16 bfregs for QPs (two a UAR), the top 4 of them low-latency.
	if err := mc.LayBFRegs(pages, 4, 512, 12, newMutex); err != nil {
		t.Fatal(err)
	}
	if len(mc.BFRegs) != 2*4*4 {
		t.Fatalf("%d bfregs, want 32", len(mc.BFRegs))
	}
	for n := range mc.BFRegs {
		page, sub, slot := n/16, n/4%4, n%4
		want := &pages[page][4096*sub+0x800+slot*512]
		bf := &mc.BFRegs[n].BF
		// bfreg 0 has no halves (libmlx5: buf_size 0, mlx5.c
		// mlx5_init_context): its doorbell always lands at its start.
		wantHalf := 256
		if n == 0 {
			wantHalf = 0
		}
		if &bf.Reg[0] != want || len(bf.Reg) != 512 || bf.BufSize != wantHalf || bf.Dedicated != (n != 0) {
			t.Errorf("bfreg %d: register at page %d offset %#x, %d bytes, halves %d, dedicated %v",
				n, page, uintptr(unsafe.Pointer(&bf.Reg[0]))-uintptr(unsafe.Pointer(&pages[page][0])), len(bf.Reg), bf.BufSize, bf.Dedicated)
		}
		// The kernel's numbers 12-15 (mlx5_ib_alloc_ucontext's
		// low-latency ones) are slots 0 and 1 of UARs 6 and 7.
		lowLat := n == 24 || n == 25 || n == 28 || n == 29
		if shared := bf.Lock != nil; shared == lowLat {
			t.Errorf("bfreg %d: locked %v, want %v", n, shared, !lowLat)
		}
	}
	if err := (&Context{}).LayBFRegs([][]byte{make([]byte, 4096)}, 2, 512, 12, newMutex); !errors.Is(err, rdma.ErrNotSupported) {
		t.Errorf("bfregs past the page: %v, want ErrNotSupported", err)
	}
}

func TestUserIndex(t *testing.T) {
	mc := NewContextState(DeviceLimits{}, 1)
	a, _ := mc.AllocUIDX()
	b, _ := mc.AllocUIDX()
	if a == b {
		t.Fatalf("two QPs got user index %d", a)
	}
	mc.FreeUIDX(a)
	mc.uidxNext = DefaultUIDX - 1
	c, _ := mc.AllocUIDX()
	d, _ := mc.AllocUIDX()
	if c != DefaultUIDX-1 || d != a {
		t.Errorf("after %#x came %#x, want the free index %#x (never %#x)", c, d, a, DefaultUIDX)
	}
	v0 := &Context{}
	if u, _ := v0.AllocUIDX(); u != DefaultUIDX {
		t.Errorf("CQE version 0: user index %#x, want MLX5_IB_DEFAULT_UIDX", u)
	}
}
