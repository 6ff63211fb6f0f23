package uverbs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
)

// Access is a set of memory access rights, for MRs and for the remote access
// a QP grants (enum ib_uverbs_access_flags; rdma-core: enum
// ibv_access_flags).
type Access uint32

const (
	AccessLocalWrite   Access = 0x1  // IB_UVERBS_ACCESS_LOCAL_WRITE; the local HCA may write (receives, READ and atomic results)
	AccessRemoteWrite  Access = 0x2  // IB_UVERBS_ACCESS_REMOTE_WRITE; peers may RDMA WRITE; needs AccessLocalWrite
	AccessRemoteRead   Access = 0x4  // IB_UVERBS_ACCESS_REMOTE_READ; peers may RDMA READ
	AccessRemoteAtomic Access = 0x8  // IB_UVERBS_ACCESS_REMOTE_ATOMIC; peers may do atomics; needs AccessLocalWrite
	AccessMWBind       Access = 0x10 // IB_UVERBS_ACCESS_MW_BIND; memory windows may be bound to the MR (IBV_ACCESS_MW_BIND)
	AccessZeroBased    Access = 0x20 // IB_UVERBS_ACCESS_ZERO_BASED; remote addresses count from the MR's start (IBV_ACCESS_ZERO_BASED)
	AccessOnDemand     Access = 0x40 // IB_UVERBS_ACCESS_ON_DEMAND; not supported by rxe before 6.14
	AccessHugeTLB      Access = 0x80 // IB_UVERBS_ACCESS_HUGETLB; the memory is huge pages (IBV_ACCESS_HUGETLB)
	// The FLUSH rights exist from kernel 6.2 (rxe: 6.12 here).
	AccessFlushGlobal     Access = 1 << 8 // peers may FLUSH to global visibility (IBV_ACCESS_FLUSH_GLOBAL)
	AccessFlushPersistent Access = 1 << 9 // peers may FLUSH to persistence (IBV_ACCESS_FLUSH_PERSISTENT)
	// AccessRelaxedOrdering is an optional right: the kernel ignores it on
	// devices that do not support it.
	AccessRelaxedOrdering Access = 0x100000 // IB_UVERBS_ACCESS_RELAXED_ORDERING
)

var accessNames = []struct {
	a    Access
	name string
}{
	{AccessLocalWrite, "LOCAL_WRITE"},
	{AccessRemoteWrite, "REMOTE_WRITE"},
	{AccessRemoteRead, "REMOTE_READ"},
	{AccessRemoteAtomic, "REMOTE_ATOMIC"},
	{AccessMWBind, "MW_BIND"},
	{AccessZeroBased, "ZERO_BASED"},
	{AccessOnDemand, "ON_DEMAND"},
	{AccessHugeTLB, "HUGETLB"},
	{AccessFlushGlobal, "FLUSH_GLOBAL"},
	{AccessFlushPersistent, "FLUSH_PERSISTENT"},
	{AccessRelaxedOrdering, "RELAXED_ORDERING"},
}

// String lists the rights with their C suffixes: "LOCAL_WRITE|REMOTE_READ".
func (a Access) String() string {
	if a == 0 {
		return "0"
	}
	var parts []string
	for _, n := range accessNames {
		if a&n.a != 0 {
			parts = append(parts, n.name)
			a &^= n.a
		}
	}
	if a != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(a), 16))
	}
	return strings.Join(parts, "|")
}

// MR is a registered memory region: memory the kernel has pinned and the
// device may access, named by a local key (for this side's scatter/gather
// entries) and a remote key (for peers' RDMA and atomic operations).
//
// Close deregisters it; Close refuses (ErrBusy) while a work request the
// kernel has not retired, on a QP or SRQ of the same PD, names the region's
// lkey, because the device may still read or write the memory. Close is
// idempotent and safe on a nil *MR.
//
// rdma-core: struct ibv_mr.
type MR struct {
	pd     *PD
	h      uint64
	access Access

	mu     sync.Mutex
	closed bool
	handle uint32
	lkey   uint32
	rkey   uint32
	addr   uint64
	length int
	mem    []byte  // keeps caller memory reachable while registered; nil once closed
	buf    *Buffer // the Buffer the region lies in, if any

	// Under pd.usersMu (mrusers.go): the QPs and SRQs whose posts named
	// the lkey, and whether Close is under way.
	users   map[lkeyUser]struct{}
	closing bool
}

// RegMR registers b with the given access rights (write() command REG_MR;
// the region's device address is b's virtual address).
//
// The memory must stay valid, at the same address, until the MR is closed:
// the kernel pins its pages, and the device (here the rxe driver on other
// CPUs) reads and writes them whenever work requests or peers name them.
//
//   - Memory from AllocBuffer (or any other anonymous mmap you unmap only
//     after Close) is the recommended kind: the Go garbage collector never
//     frees or moves it, and the Buffer refuses to close while registered.
//   - Go heap memory (make([]byte, n)) also works: Go's collector does not
//     move heap objects, and the MR keeps b reachable until Close. Never
//     register memory you free or unmap by other means before Close (C
//     memory, a mapping you munmap, a file mapping: on 6.12 writable shared
//     file mappings are refused with EFAULT).
//
// Pinned pages count against RLIMIT_MEMLOCK unless the process has
// CAP_IPC_LOCK (root normally does); when the kernel refuses for that reason
// the error is a *MemlockError saying the limit and the size asked for.
//
// rdma-core: ibv_reg_mr.
func (pd *PD) RegMR(b []byte, access Access) (*MR, error) {
	const op = "reg_mr"
	if len(b) == 0 {
		return nil, &OpError{Op: op, Err: errors.New("empty memory region: register at least one byte")}
	}
	if access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && access&AccessLocalWrite == 0 {
		// kernel: include/rdma/ib_verbs.h ib_check_mr_access.
		return nil, &OpError{Op: op, Err: fmt.Errorf("access %v: remote write and remote atomic access need AccessLocalWrite too: %w", access, unix.EINVAL)}
	}
	if err := pd.hold(op); err != nil {
		return nil, err
	}
	c := pd.ctx
	r, err := c.objects(op)
	if err != nil {
		pd.kids.unhold()
		return nil, err
	}
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	req := abi.UverbsRegMR{
		Start:       addr,
		Length:      uint64(len(b)),
		HCAVA:       addr,
		PDHandle:    pd.handle,
		AccessFlags: uint32(access),
	}
	var resp abi.UverbsRegMRResp
	in, out := bytesOf(&req), bytesOf(&resp)
	if dIn, dOut := c.regMRData(); dIn+dOut > 0 {
		in = append(append([]byte(nil), in...), make([]byte, dIn)...)
		out = make([]byte, len(out)+dOut)
	}
	if err := c.write(op, abi.IB_USER_VERBS_CMD_REG_MR, in, out); err != nil {
		pd.kids.unhold()
		return nil, explainRegMR(err, len(b))
	}
	copy(bytesOf(&resp), out) // the same bytes without driver data
	mr := &MR{
		pd: pd, h: newHandle(), access: access,
		handle: resp.MRHandle, lkey: resp.LKey, rkey: resp.RKey,
		addr: addr, length: len(b), mem: b, buf: bufferOf(addr, len(b)),
	}
	pd.kids.adopt(mr, kindMR)
	pd.addMR(mr)
	if err := r.add(op, mr.h, kindMR, mr); err != nil {
		mr.close(true)
		return nil, err
	}
	return mr, nil
}

// MemlockError is the error of a registration the kernel refused because
// the pages would exceed RLIMIT_MEMLOCK (ENOMEM), or because the limit is 0
// and the process lacks CAP_IPC_LOCK (EPERM)
// (kernel: core/umem.c ib_umem_get, mm/mlock.c can_do_mlock).
// It unwraps to the errno.
type MemlockError struct {
	Size int    // bytes asked for
	Cur  uint64 // RLIMIT_MEMLOCK soft limit (unix.RLIM_INFINITY: none)
	Max  uint64 // hard limit
	Root bool   // the process runs with euid 0
	Err  error  // unix.ENOMEM or unix.EPERM
}

// Error returns the error's text.
func (e *MemlockError) Error() string {
	lim := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return strconv.FormatUint(v, 10) + " bytes"
	}
	s := fmt.Sprintf("reg_mr: %v: the kernel could not pin %d bytes: pinned memory counts against RLIMIT_MEMLOCK, which is %s (hard limit %s), together with every region already registered; "+
		"raise it (ulimit -l, LimitMEMLOCK= in a systemd unit, --ulimit memlock=-1 for docker) or grant CAP_IPC_LOCK",
		e.Err, e.Size, lim(e.Cur), lim(e.Max))
	if e.Root {
		s += " (the process runs as root, which bypasses the limit only while it keeps CAP_IPC_LOCK: a container may drop it)"
	}
	return s
}

// Unwrap returns the error's cause, for errors.Is and errors.As.
func (e *MemlockError) Unwrap() error { return e.Err }

func explainRegMR(err error, size int) error {
	var errno unix.Errno
	if !errors.As(err, &errno) || (errno != unix.ENOMEM && errno != unix.EPERM) {
		return err
	}
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) != nil {
		return err
	}
	if errno == unix.ENOMEM && rl.Cur == unix.RLIM_INFINITY {
		return err // a real shortage, not the limit
	}
	return &MemlockError{Size: size, Cur: rl.Cur, Max: rl.Max, Root: os.Geteuid() == 0, Err: errno}
}

// LKey returns the local key, for this side's scatter/gather entries.
//
// rdma-core: the lkey of struct ibv_mr.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey returns the remote key, for a peer's RDMA and atomic work requests.
//
// rdma-core: the rkey of struct ibv_mr.
func (mr *MR) RKey() uint32 { return mr.rkey }

// Addr returns the region's device address (its virtual address).
//
// rdma-core: the addr of struct ibv_mr.
func (mr *MR) Addr() uint64 { return mr.addr }

// Len returns the region's length in bytes.
//
// rdma-core: the length of struct ibv_mr.
func (mr *MR) Len() int { return mr.length }

// Bytes returns the registered memory, or nil once the MR is closed.
func (mr *MR) Bytes() []byte {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return mr.mem
}

// Access returns the rights the region was registered with.
func (mr *MR) Access() Access { return mr.access }

// PD returns the protection domain of the region.
//
// rdma-core: the pd of struct ibv_mr.
func (mr *MR) PD() *PD { return mr.pd }

// SGE returns a scatter/gather entry for length bytes at offset in the
// region. It panics if the range is outside the region, like slicing.
func (mr *MR) SGE(offset, length int) SGE {
	if offset < 0 || length < 0 || offset > mr.length || length > mr.length-offset || length > 1<<32-1 {
		panic(fmt.Sprintf("uverbs: MR.SGE(%d, %d) is outside the %d-byte region", offset, length, mr.length))
	}
	return SGE{Addr: mr.addr + uint64(offset), Length: uint32(length), LKey: mr.lkey}
}

// Close deregisters the region (DEREG_MR). It refuses with an error
// matching ErrBusy while a work request the kernel has not retired, on a QP
// or SRQ of the same PD, names the region's local key in a scatter/gather
// entry (posted receives count): wait for their completions, or close those
// QPs (QP.Close drains them). Work requests naming other regions do not
// hold it. It looks only at the QPs and SRQs whose posts named the lkey
// (each post records new lkeys; mrusers.go), so its cost does not grow
// with the number of QPs of the PD.
//
// Remote use cannot be seen: a peer may still RDMA READ, WRITE or run
// atomics on the region by its rkey until Close; once deregistered, such
// operations fail at the peer with a remote access error. Telling peers to
// stop using an rkey before closing its MR is the application protocol's
// job.
//
// If the kernel refuses the deregistration, the MR stays open (and its
// Buffer registered) and Close can be called again.
//
// rdma-core: ibv_dereg_mr.
func (mr *MR) Close() error {
	if mr == nil {
		return nil
	}
	return mr.close(false)
}

func (mr *MR) close(force bool) error {
	const op = "dereg_mr"
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.closed {
		return nil
	}
	// Only the QPs and SRQs whose posts named the lkey can hold work
	// naming it (mrusers.go). Their caches forget the lkey even when
	// forced: the kernel reuses it once the region is deregistered.
	busy := releaseLKey(mr.pd.beginCloseMR(mr), mr.lkey)
	if busy != "" && !force {
		mr.pd.reopenMR(mr)
		return &OpError{Op: op, Err: &busyError{msg: "the device may still access the MR: " + busy +
			"; poll their completions, or close those QPs/SRQs (QP.Close drains them), before deregistering memory"}}
	}
	req := abi.UverbsDeregMR{MRHandle: mr.handle}
	err := mr.pd.ctx.write(op, abi.IB_USER_VERBS_CMD_DEREG_MR, bytesOf(&req), nil)
	if err != nil && !force && !objectGone(err) {
		// The kernel still has the region registered: keep it, so that
		// its Buffer is not unmapped under the device and a later Close
		// can retry.
		mr.pd.reopenMR(mr)
		return err
	}
	mr.closed = true
	mr.mem = nil
	mr.pd.removeMR(mr)
	mr.pd.forgetMR(mr)
	mr.buf.unregister()
	mr.pd.kids.drop(mr)
	mr.pd.ctx.forget(mr.h)
	return ignoreClosedContext(err)
}

// objectGone reports whether a destroy command failed because the object no
// longer exists in the kernel: the Device's descriptor is closed (the
// kernel destroyed everything made through it, core/uverbs_main.c
// ib_uverbs_close), the device was removed (ENODEV: core/rdma_core.c
// uverbs_destroy_ufile_hw after disassociation), or the descriptor is bad
// (EBADF).
func objectGone(err error) bool {
	return errors.Is(err, ErrClosed) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EBADF)
}

// mrRange is an open MR's memory, for the inline-data check of PostSend.
type mrRange struct {
	start, end uint64
	mr         *MR
}

func (pd *PD) addMR(mr *MR) {
	pd.mrMu.Lock()
	pd.mrs = append(pd.mrs, mrRange{start: mr.addr, end: mr.addr + uint64(mr.length), mr: mr})
	pd.mrMu.Unlock()
	pd.usersMu.Lock()
	if pd.byLKey == nil {
		pd.byLKey = make(map[uint32]*MR)
	}
	pd.byLKey[mr.lkey] = mr // replaces a closed MR whose lkey the kernel reused (mrusers.go)
	pd.usersMu.Unlock()
}

func (pd *PD) removeMR(mr *MR) {
	pd.mrMu.Lock()
	for i := range pd.mrs {
		if pd.mrs[i].mr == mr {
			pd.mrs = append(pd.mrs[:i], pd.mrs[i+1:]...)
			break
		}
	}
	pd.mrMu.Unlock()
}

// inMRLocked reports whether [addr, addr+n) lies inside an open MR of the
// PD. The caller holds pd.mrMu (read). It allocates nothing.
func (pd *PD) inMRLocked(addr, n uint64) bool {
	end := addr + n
	if end < addr {
		return false
	}
	for i := range pd.mrs {
		if addr >= pd.mrs[i].start && end <= pd.mrs[i].end {
			return true
		}
	}
	return false
}
