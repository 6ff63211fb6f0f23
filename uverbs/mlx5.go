package uverbs

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
)

// The mlx5 side of the provider seam (provider.go): the context's UAR pages
// and limits, the commands' driver data, and the user-allocated rings.
// docs/mlx5.md §10 lists the facts followed and where this differs from
// libmlx5.

// mlx5Context is what ALLOC_UCONTEXT (GET_CONTEXT with mlx5's driver data)
// gave a Device: the queue limits, the CQE version and the mapped UAR pages
// with their bfregs.
type mlx5Context struct {
	lim        mlx5.DeviceLimits
	cqeVersion int
	uars       []*sys.Mapping
	bfregs     []mlx5BFReg
	// cqUAR is the UAR CQs are armed through: the first of page 0
	// without a dedicated non-cached UAR (mlx5.c cq_uar_reg).
	cqUAR []byte

	// srqMu guards every SRQ's free list of the Device: SRQ.PostRecv takes
	// entries from it and CQ.Poll gives them back (libmlx5 takes the SRQ's
	// lock in both, srq.c mlx5_post_srq_recv, mlx5_free_srq_wqe).
	srqMu sync.Mutex

	uidxMu   sync.Mutex
	uidxUsed map[uint32]bool
	uidxNext uint32
}

// mlx5BFReg is one bfreg (libmlx5 struct mlx5_bf). A doorbell flips its
// BlueFlame half, so the doorbells of QPs that share a bfreg are
// serialised by mu (bf.Lock; libmlx5: mlx5_bf.lock, a spin lock; ringLock
// is ours). A low-latency bfreg belongs to one QP, whose send lock
// serialises its posts, so it has no lock (mlx5.c need_uuar_lock).
type mlx5BFReg struct {
	mu ringLock
	bf mlx5.BlueFlame
}

// Defaults of libmlx5's bfreg request (mlx5.c get_total_uuars,
// get_num_low_lat_uuars; mlx5-abi.h MLX5_DEF_TOT_UUARS = 16,
// MLX5_MED_BFREGS_TSHOLD = 12, MLX5_NUM_NON_FP_BFREGS_PER_UAR = 2).
const (
	mlx5DefTotalBfregs    = 16
	mlx5MedBfregsThresh   = 12
	mlx5NonFPBfregsPerUAR = 2
	mlx5BfregsPerUAR      = 4     // NUM_BFREGS_PER_UAR
	mlx5AdapterPageSize   = 4096  // MLX5_ADAPTER_PAGE_SIZE
	mlx5BFOffset          = 0x800 // MLX5_BF_OFFSET
	mlx5DefaultUIDX       = mlx5.DefaultUIDX
	mlx5MmapCmdShift      = 8 // MLX5_IB_MMAP_CMD_SHIFT
)

// mlx5AllocUcontextReq is the driver data of GET_CONTEXT (struct
// mlx5_ib_alloc_ucontext_req_v2) as libmlx5 fills it for a system page of
// pageSize bytes (mlx5.c mlx5_alloc_context), without DEVX and dynamic UARs
// (docs/mlx5.md §10).
func mlx5AllocUcontextReq(pageSize int) abi.Mlx5AllocUcontextReqV2 {
	tot := max(pageSize/mlx5AdapterPageSize*mlx5NonFPBfregsPerUAR, mlx5DefTotalBfregs)
	tot = (tot + mlx5NonFPBfregsPerUAR - 1) &^ (mlx5NonFPBfregsPerUAR - 1)
	return abi.Mlx5AllocUcontextReqV2{
		TotalNumBfregs:      uint32(tot),
		NumLowLatencyBfregs: uint32(max(4, tot-mlx5MedBfregsThresh)),
		MaxCQEVersion:       1, // MLX5_CQE_VERSION_V1
		LibCaps:             abi.MLX5_LIB_CAP_4K_UAR,
	}
}

// mlx5UARPages is how many system pages of UARs hold the bfregs of the
// response (mlx5.c: tot_bfregs / (num_uars_per_page × 2); a kernel that
// reports neither num_uars_per_page nor log_uar_size has one UAR a page).
func mlx5UARPages(resp *abi.Mlx5AllocUcontextResp) (pages, uarsPerPage int) {
	uarsPerPage = int(resp.NumUarsPerPage)
	if uarsPerPage == 0 && resp.LogUarSize == 0 {
		uarsPerPage = 1
	}
	if uarsPerPage == 0 {
		return 0, 0
	}
	return int(resp.TotBfregs) / (uarsPerPage * mlx5NonFPBfregsPerUAR), uarsPerPage
}

// mlx5UARMmapOffset is the mmap offset of UAR page i: (command << 8 | i)
// pages, command MLX5_IB_MMAP_REGULAR_PAGE (docs/mlx5.md §8).
func mlx5UARMmapOffset(i, pageSize int) int64 {
	return int64(abi.MLX5_IB_MMAP_REGULAR_PAGE<<mlx5MmapCmdShift|i) * int64(pageSize)
}

// getMLX5Context runs GET_CONTEXT with mlx5's driver data and maps the UAR
// pages. It fills c.async and c.numCompVectors as getContext does.
func (c *Device) getMLX5Context() error {
	const op = "get_context"
	pageSize := os.Getpagesize()
	var req struct {
		core abi.UverbsGetContext
		drv  abi.Mlx5AllocUcontextReqV2
	}
	req.drv = mlx5AllocUcontextReq(pageSize)
	var resp struct {
		core abi.UverbsGetContextResp
		drv  abi.Mlx5AllocUcontextResp
	}
	if err := c.write(op, abi.IB_USER_VERBS_CMD_GET_CONTEXT, bytesOf(&req), bytesOf(&resp)); err != nil {
		return err
	}
	ev, err := sys.NewEventFile(int(resp.core.AsyncFD), "uverbs async events "+c.dev.Name)
	if err != nil {
		return &OpError{Op: op, Err: err}
	}
	c.async = ev
	c.numCompVectors = int(resp.core.NumCompVectors)
	mc, err := c.mapMLX5Context(op, pageSize, int(req.drv.NumLowLatencyBfregs), &resp.drv)
	if err != nil {
		c.async.Close()
		c.async = nil
		return err
	}
	c.mlx = mc
	return nil
}

// lowLat is the number of low-latency bfregs the request asked for.
func (c *Device) mapMLX5Context(op string, pageSize, lowLat int, r *abi.Mlx5AllocUcontextResp) (*mlx5Context, error) {
	if r.CQEVersion > 1 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("mlx5 device %s uses CQE version %d; versions 0 and 1 are implemented: %w", c.dev.Name, r.CQEVersion, ErrNotSupported)}
	}
	pages, perPage := mlx5UARPages(r)
	if pages == 0 || r.BfRegSize == 0 || r.BfRegSize%128 != 0 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("mlx5 device %s gave %d bfregs of %d bytes (%d UARs a page); this package needs the kernel to allocate the bfregs with the context (without dynamic UARs): %w", c.dev.Name, r.TotBfregs, r.BfRegSize, r.NumUarsPerPage, ErrNotSupported)}
	}
	mc := &mlx5Context{
		lim: mlx5.DeviceLimits{
			MaxSQDescSize: int(r.MaxSQDescSz),
			MaxRQDescSize: int(r.MaxRQDescSz),
			MaxSendWQEBB:  int(r.MaxSendWqebb),
			MaxRecvWR:     int(r.MaxRecvWR),
			MaxSRQRecvWR:  int(r.MaxSRQRecvWR),
		},
		cqeVersion: int(r.CQEVersion),
		uidxUsed:   make(map[uint32]bool),
	}
	for i := 0; i < pages; i++ {
		m, err := sys.MmapShared(c.fd, mlx5UARMmapOffset(i, pageSize), pageSize, fmt.Sprintf("uar page %d %s", i, c.dev.Name))
		if err != nil {
			mc.unmap()
			return nil, &OpError{Op: op, Err: err}
		}
		mc.uars = append(mc.uars, m)
	}
	pageBytes := make([][]byte, len(mc.uars))
	for i, m := range mc.uars {
		pageBytes[i] = m.Bytes()
	}
	if err := mc.layBFRegs(pageBytes, perPage, int(r.BfRegSize), int(r.TotBfregs)-lowLat); err != nil {
		mc.unmap()
		return nil, &OpError{Op: op, Err: err}
	}
	return mc, nil
}

// layBFRegs places the bfregs in the mapped UAR pages (mlx5.c
// mlx5_init_context): bfreg n = (page × uarsPerPage + sub-UAR) × 4 + slot
// is at page + 4096 × sub-UAR + 0x800 + slot × size (docs/mlx5.md §10).
// The kernel numbers the two bfregs of each UAR that QPs get 0, 1, 2, …
// (n/4×2 + slot), and gives those numbered lowLatFrom (total less the
// low-latency count asked for) and up to one QP each (the kernel's
// alloc_high_class_bfreg); the others are shared.
func (mc *mlx5Context) layBFRegs(pages [][]byte, perPage, size, lowLatFrom int) error {
	if len(pages) == 0 || len(pages[0]) < mlx5AdapterPageSize {
		return fmt.Errorf("mlx5: no UAR page to arm CQs through: %w", ErrNotSupported)
	}
	mc.cqUAR = pages[0][:mlx5AdapterPageSize]
	mc.bfregs = make([]mlx5BFReg, len(pages)*perPage*mlx5BfregsPerUAR)
	for n := range mc.bfregs {
		page, sub, slot := n/(perPage*mlx5BfregsPerUAR), n/mlx5BfregsPerUAR%perPage, n%mlx5BfregsPerUAR
		off := mlx5AdapterPageSize*sub + mlx5BFOffset + slot*size
		reg := pages[page]
		if off+size > len(reg) {
			return fmt.Errorf("mlx5 bfreg %d at %#x+%d lies outside its %d-byte UAR page: %w", n, off, size, len(reg), ErrNotSupported)
		}
		// bfreg 0 is shared by every QP that gets it and takes only the
		// 8-byte doorbell (Dedicated false); libmlx5 gives it no halves
		// (buf_size 0, mlx5.c mlx5_init_context), so its doorbells all
		// land in the register's first 8 bytes, and so do ours.
		half := size / 2
		if n == 0 {
			half = 0
		}
		mc.bfregs[n].bf = mlx5.BlueFlame{Reg: reg[off : off+size : off+size], BufSize: half, Dedicated: n != 0, PreferBF: true}
		// bfreg 0 stays locked where libmlx5 takes no lock (mlx5.c
		// need_uuar_lock): every doorbell stores the register's offset,
		// which QPs sharing it would race on. Slots 2 and 3 are never
		// given to a QP.
		if n == 0 || slot >= mlx5NonFPBfregsPerUAR || n/mlx5BfregsPerUAR*mlx5NonFPBfregsPerUAR+slot < lowLatFrom {
			mc.bfregs[n].bf.Lock = &mc.bfregs[n].mu
		}
	}
	return nil
}

func (mc *mlx5Context) unmap() {
	for _, m := range mc.uars {
		m.Unmap()
	}
	mc.uars = nil
}

// allocUIDX returns a free user index for a QP or SRQ with CQE version 1
// (24 bits, libmlx5 mlx5_store_uidx), or MLX5_IB_DEFAULT_UIDX with
// version 0.
func (mc *mlx5Context) allocUIDX() (uint32, error) {
	if mc.cqeVersion == 0 {
		return mlx5DefaultUIDX, nil
	}
	mc.uidxMu.Lock()
	defer mc.uidxMu.Unlock()
	for range 1 << 24 {
		u := mc.uidxNext
		if mc.uidxNext++; mc.uidxNext == mlx5DefaultUIDX {
			mc.uidxNext = 0
		}
		if !mc.uidxUsed[u] {
			mc.uidxUsed[u] = true
			return u, nil
		}
	}
	return 0, fmt.Errorf("every mlx5 user index of the Device is in use: close QPs or SRQs")
}

func (mc *mlx5Context) freeUIDX(u uint32) {
	if mc.cqeVersion == 0 {
		return
	}
	mc.uidxMu.Lock()
	delete(mc.uidxUsed, u)
	mc.uidxMu.Unlock()
}

// mlx5Queue is user memory holding a ring and, in its last page, the
// doorbell record: page-aligned anonymous memory the kernel pins on create
// (libmlx5 allocates both itself; docs/mlx5.md §1).
type mlx5Queue struct {
	m     *sys.Mapping
	ring  []byte
	dbrec []byte
}

func newMLX5Queue(ringBytes int, what string) (*mlx5Queue, error) {
	page := os.Getpagesize()
	n := (ringBytes + page - 1) &^ (page - 1)
	m, err := sys.MmapAnon(n+page, what)
	if err != nil {
		return nil, err
	}
	b := m.Bytes()
	return &mlx5Queue{m: m, ring: b[:ringBytes:ringBytes], dbrec: b[n : n+64 : n+64]}, nil
}

func (q *mlx5Queue) ringAddr() uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(q.ring))))
}
func (q *mlx5Queue) dbrecAddr() uint64 {
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(q.dbrec))))
}

func (q *mlx5Queue) unmap() {
	if q != nil && q.m != nil {
		q.m.Unmap()
		q.m = nil
	}
}

// mlx5QPType maps a QP type to the provider's (both enum ib_qp_type).
func mlx5QPType(t QPType) mlx5.QPType { return mlx5.QPType(t) }
