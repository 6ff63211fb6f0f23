package mlx5

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// Context is what ALLOC_UCONTEXT (GET_CONTEXT with mlx5's driver data)
// gave a device: the queue limits, the CQE version and the mapped UAR pages
// with their bfregs.
type Context struct {
	Lim        DeviceLimits
	CQEVersion int
	uars       []*sys.Mapping
	BFRegs     []BFReg
	// CQUAR is the UAR CQs are armed through: the first of page 0
	// without a dedicated non-cached UAR (mlx5.c cq_uar_reg).
	CQUAR []byte

	// SRQMu guards every SRQ's free list of the device: SRQ.Post takes
	// entries from it and CQ.Poll gives them back (libmlx5 takes the SRQ's
	// lock in both, srq.c mlx5_post_srq_recv, mlx5_free_srq_wqe).
	SRQMu sync.Mutex

	uidxMu   sync.Mutex
	uidxUsed map[uint32]bool
	uidxNext uint32
}

// BFReg is one bfreg (libmlx5 struct mlx5_bf). A doorbell writes its
// register's offset (and on a dedicated bfreg flips its BlueFlame half), so
// the doorbells of QPs that share a bfreg are serialised by BF.Lock
// (libmlx5: mlx5_bf.lock, a spin lock). A low-latency bfreg belongs to one
// QP, whose send lock serialises its posts, so it has no lock (mlx5.c
// need_uuar_lock).
type BFReg struct {
	BF BlueFlame
}

// Defaults of libmlx5's bfreg request (mlx5.c get_total_uuars,
// get_num_low_lat_uuars; mlx5-abi.h MLX5_DEF_TOT_UUARS = 16,
// MLX5_MED_BFREGS_TSHOLD = 12, MLX5_NUM_NON_FP_BFREGS_PER_UAR = 2).
const (
	defTotalBfregs    = 16
	medBfregsThresh   = 12
	nonFPBfregsPerUAR = 2
	bfregsPerUAR      = 4    // NUM_BFREGS_PER_UAR
	adapterPageSize   = 4096 // MLX5_ADAPTER_PAGE_SIZE
	mmapCmdShift      = 8    // MLX5_IB_MMAP_CMD_SHIFT
)

// AllocUcontextReq is the driver data of GET_CONTEXT (struct
// mlx5_ib_alloc_ucontext_req_v2) as libmlx5 fills it for a system page of
// pageSize bytes (mlx5.c mlx5_alloc_context), without DEVX and dynamic UARs
// (docs/mlx5.md §10).
func AllocUcontextReq(pageSize int) abi.Mlx5AllocUcontextReqV2 {
	tot := max(pageSize/adapterPageSize*nonFPBfregsPerUAR, defTotalBfregs)
	tot = (tot + nonFPBfregsPerUAR - 1) &^ (nonFPBfregsPerUAR - 1)
	return abi.Mlx5AllocUcontextReqV2{
		TotalNumBfregs:      uint32(tot),
		NumLowLatencyBfregs: uint32(max(4, tot-medBfregsThresh)),
		MaxCQEVersion:       1, // MLX5_CQE_VERSION_V1
		LibCaps:             abi.MLX5_LIB_CAP_4K_UAR,
	}
}

// UARPages is how many system pages of UARs hold the bfregs of the
// response (mlx5.c: tot_bfregs / (num_uars_per_page × 2); a kernel that
// reports neither num_uars_per_page nor log_uar_size has one UAR a page).
func UARPages(resp *abi.Mlx5AllocUcontextResp) (pages, uarsPerPage int) {
	uarsPerPage = int(resp.NumUarsPerPage)
	if uarsPerPage == 0 && resp.LogUarSize == 0 {
		uarsPerPage = 1
	}
	if uarsPerPage == 0 {
		return 0, 0
	}
	return int(resp.TotBfregs) / (uarsPerPage * nonFPBfregsPerUAR), uarsPerPage
}

// UARMmapOffset is the mmap offset of UAR page i: (command << 8 | i)
// pages, command MLX5_IB_MMAP_REGULAR_PAGE (docs/mlx5.md §8).
func UARMmapOffset(i, pageSize int) int64 {
	return int64(abi.MLX5_IB_MMAP_REGULAR_PAGE<<mmapCmdShift|i) * int64(pageSize)
}

// NewContext checks the GET_CONTEXT response r, maps the UAR pages with
// mmap (the device's descriptor, MAP_SHARED) and lays out the bfregs;
// lowLat is the number of low-latency bfregs the request asked for, and
// newLock makes the lock of each shared bfreg. name names the device in
// errors.
func NewContext(r *abi.Mlx5AllocUcontextResp, name string, pageSize, lowLat int, mmap func(off int64, n int, what string) (*sys.Mapping, error), newLock func() sync.Locker) (*Context, error) {
	if r.CQEVersion > 1 {
		return nil, fmt.Errorf("mlx5 device %s uses CQE version %d; versions 0 and 1 are implemented: %w", name, r.CQEVersion, rdma.ErrNotSupported)
	}
	pages, perPage := UARPages(r)
	if pages == 0 || r.BfRegSize == 0 || r.BfRegSize%128 != 0 {
		return nil, fmt.Errorf("mlx5 device %s gave %d bfregs of %d bytes (%d UARs a page); this package needs the kernel to allocate the bfregs with the context (without dynamic UARs): %w", name, r.TotBfregs, r.BfRegSize, r.NumUarsPerPage, rdma.ErrNotSupported)
	}
	mc := NewContextState(DeviceLimits{
		MaxSQDescSize: int(r.MaxSQDescSz),
		MaxRQDescSize: int(r.MaxRQDescSz),
		MaxSendWQEBB:  int(r.MaxSendWqebb),
		MaxRecvWR:     int(r.MaxRecvWR),
		MaxSRQRecvWR:  int(r.MaxSRQRecvWR),
	}, int(r.CQEVersion))
	for i := 0; i < pages; i++ {
		m, err := mmap(UARMmapOffset(i, pageSize), pageSize, fmt.Sprintf("uar page %d %s", i, name))
		if err != nil {
			mc.Unmap()
			return nil, err
		}
		mc.uars = append(mc.uars, m)
	}
	pageBytes := make([][]byte, len(mc.uars))
	for i, m := range mc.uars {
		pageBytes[i] = m.Bytes()
	}
	if err := mc.LayBFRegs(pageBytes, perPage, int(r.BfRegSize), int(r.TotBfregs)-lowLat, newLock); err != nil {
		mc.Unmap()
		return nil, err
	}
	return mc, nil
}

// NewContextState is a Context with limits lim and CQE version v and no
// UAR pages yet (LayBFRegs places the bfregs in pages of the caller's).
func NewContextState(lim DeviceLimits, v int) *Context {
	return &Context{Lim: lim, CQEVersion: v, uidxUsed: make(map[uint32]bool)}
}

// LayBFRegs places the bfregs in the mapped UAR pages (mlx5.c
// mlx5_init_context): bfreg n = (page × uarsPerPage + sub-UAR) × 4 + slot
// is at page + 4096 × sub-UAR + 0x800 + slot × size (docs/mlx5.md §10).
// The kernel numbers the two bfregs of each UAR that QPs get 0, 1, 2, …
// (n/4×2 + slot), and gives those numbered lowLatFrom (total less the
// low-latency count asked for) and up to one QP each (the kernel's
// alloc_high_class_bfreg); the others are shared and get a lock of
// newLock's.
func (mc *Context) LayBFRegs(pages [][]byte, perPage, size, lowLatFrom int, newLock func() sync.Locker) error {
	if len(pages) == 0 || len(pages[0]) < adapterPageSize {
		return fmt.Errorf("mlx5: no UAR page to arm CQs through: %w", rdma.ErrNotSupported)
	}
	mc.CQUAR = pages[0][:adapterPageSize]
	mc.BFRegs = make([]BFReg, len(pages)*perPage*bfregsPerUAR)
	for n := range mc.BFRegs {
		page, sub, slot := n/(perPage*bfregsPerUAR), n/bfregsPerUAR%perPage, n%bfregsPerUAR
		off := adapterPageSize*sub + BFRegOffset + slot*size
		reg := pages[page]
		if off+size > len(reg) {
			return fmt.Errorf("mlx5 bfreg %d at %#x+%d lies outside its %d-byte UAR page: %w", n, off, size, len(reg), rdma.ErrNotSupported)
		}
		// bfreg 0 is shared by every QP that gets it and takes only the
		// 8-byte doorbell (Dedicated false); libmlx5 gives it no halves
		// (buf_size 0, mlx5.c mlx5_init_context), so its doorbells all
		// land in the register's first 8 bytes, and so do ours.
		half := size / 2
		if n == 0 {
			half = 0
		}
		mc.BFRegs[n].BF = BlueFlame{Reg: reg[off : off+size : off+size], BufSize: half, Dedicated: n != 0, PreferBF: true}
		// bfreg 0 stays locked where libmlx5 takes no lock (mlx5.c
		// need_uuar_lock): every doorbell stores the register's offset,
		// which QPs sharing it would race on. Slots 2 and 3 are never
		// given to a QP.
		if n == 0 || slot >= nonFPBfregsPerUAR || n/bfregsPerUAR*nonFPBfregsPerUAR+slot < lowLatFrom {
			mc.BFRegs[n].BF.Lock = newLock()
		}
	}
	return nil
}

// Unmap unmaps the UAR pages.
func (mc *Context) Unmap() {
	for _, m := range mc.uars {
		m.Unmap()
	}
	mc.uars = nil
}

// AllocUIDX returns a free user index for a QP or SRQ with CQE version 1
// (24 bits, libmlx5 mlx5_store_uidx), or MLX5_IB_DEFAULT_UIDX with
// version 0.
func (mc *Context) AllocUIDX() (uint32, error) {
	if mc.CQEVersion == 0 {
		return DefaultUIDX, nil
	}
	mc.uidxMu.Lock()
	defer mc.uidxMu.Unlock()
	for range 1 << 24 {
		u := mc.uidxNext
		if mc.uidxNext++; mc.uidxNext == DefaultUIDX {
			mc.uidxNext = 0
		}
		if !mc.uidxUsed[u] {
			mc.uidxUsed[u] = true
			return u, nil
		}
	}
	return 0, errors.New("every mlx5 user index of the device is in use: close QPs or SRQs")
}

// FreeUIDX returns user index u.
func (mc *Context) FreeUIDX(u uint32) {
	if mc.CQEVersion == 0 {
		return
	}
	mc.uidxMu.Lock()
	delete(mc.uidxUsed, u)
	mc.uidxMu.Unlock()
}

// Queue is user memory holding a ring and, in its last page, the
// doorbell record: page-aligned anonymous memory the kernel pins on create
// (libmlx5 allocates both itself; docs/mlx5.md §1).
type Queue struct {
	m     *sys.Mapping
	Ring  []byte
	DBRec []byte
}

// NewQueue allocates a ring of ringBytes and a doorbell record page.
func NewQueue(ringBytes int, what string) (*Queue, error) {
	page := os.Getpagesize()
	n := (ringBytes + page - 1) &^ (page - 1)
	m, err := sys.MmapAnon(n+page, what)
	if err != nil {
		return nil, err
	}
	b := m.Bytes()
	return &Queue{m: m, Ring: b[:ringBytes:ringBytes], DBRec: b[n : n+64 : n+64]}, nil
}

// RingAddr is the ring's address, for the create command.
func (q *Queue) RingAddr() uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(q.Ring))))
}

// DBRecAddr is the doorbell record's address, for the create command.
func (q *Queue) DBRecAddr() uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(q.DBRec))))
}

// Unmap frees the memory; a nil Queue or one unmapped already is left alone.
func (q *Queue) Unmap() {
	if q != nil && q.m != nil {
		q.m.Unmap()
		q.m = nil
	}
}
