package uverbs

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The provider seam. The data path (posting work requests, polling
// completions) is driver specific: each driver shares its queues with user
// space in its own format. Two are implemented: soft-RoCE
// (uverbs/internal/rxe), whose rings the kernel allocates and the process
// maps, and mlx5 (uverbs/internal/mlx5), whose rings the process allocates
// and whose doorbells are device registers (docs/mlx5.md §1). Control
// commands (PD, MR, QP state changes) are driver-agnostic.
//
// What callers pass and get back is the providers' shared vocabulary,
// uverbs/internal/provider: SGE, RecvWR, WC and their values are aliases of
// its types, and SendWR has provider.SendWR's layout with a *AH in place of
// a *provider.AH (an AH starts with one), so this file converts a send list
// for the providers without a copy (sendWR, sendWRs; docs/architecture.md
// §3). The driver packages import provider and nothing of each other or of
// uverbs.
//
// Each CQ, QP and SRQ holds its provider's state, chosen once when it is
// created: an object on an mlx5 device carries a non-nil pointer to its
// mlx5 state (CQ.mx, QP.mx, SRQ.mx) and the rxe fields stay nil, and the
// other way round. Post and poll test that one pointer first, so the rxe
// path pays a predictable branch and nothing else. Other drivers are
// refused with ErrNotSupported when such an object is created.

// requireDataPath fails with ErrNotSupported unless the device's driver has
// a data path here (rxe, or mlx5 with its context mapped).
func (c *Device) requireDataPath(op string) error {
	if c == nil {
		return closedErr(op)
	}
	if c.dev.DriverID != DriverRXE && c.mlx == nil {
		return &OpError{Op: op, Err: fmt.Errorf("device %s uses driver %v, but only the rxe (soft-RoCE) and mlx5 data paths are implemented: %w", c.dev.Name, c.dev.DriverID, ErrNotSupported)}
	}
	return nil
}

// mmapRing maps one driver queue described by mmap info from a create or
// resize response: MAP_SHARED, on the same descriptor, once (kernel:
// sw/rxe/rxe_mmap.c rxe_mmap; docs/abi.md §3.3).
func (c *Device) mmapRing(op string, mi abi.RxeMminfo, what string) (*sys.Mapping, error) {
	if mi.Size == 0 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("the kernel returned no mmap information for the %s", what)}
	}
	if err := c.lockCmd(op); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	m, err := sys.MmapShared(c.fd, int64(mi.Offset), int(mi.Size), what+" "+c.dev.Name)
	if err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	return m, nil
}

// SendWR has provider.SendWR's layout, with a *AH where the provider's
// request has a *provider.AH: an AH starts with its provider.AH (AH.drv),
// so the providers read the caller's requests where they lie; a copy cost
// a post about 2.5 ns (BENCHMARKS.md, rxe item 31). Checked here at
// compile time: a negative array length does not compile.
var (
	_ [unsafe.Sizeof(SendWR{}) - unsafe.Sizeof(provider.SendWR{})]byte
	_ [unsafe.Sizeof(provider.SendWR{}) - unsafe.Sizeof(SendWR{})]byte
	_ [unsafe.Offsetof(SendWR{}.Op) - unsafe.Offsetof(provider.SendWR{}.Op)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Op) - unsafe.Offsetof(SendWR{}.Op)]byte
	_ [unsafe.Offsetof(SendWR{}.Flags) - unsafe.Offsetof(provider.SendWR{}.Flags)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Flags) - unsafe.Offsetof(SendWR{}.Flags)]byte
	_ [unsafe.Offsetof(SendWR{}.SGEs) - unsafe.Offsetof(provider.SendWR{}.SGEs)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.SGEs) - unsafe.Offsetof(SendWR{}.SGEs)]byte
	_ [unsafe.Offsetof(SendWR{}.Imm) - unsafe.Offsetof(provider.SendWR{}.Imm)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Imm) - unsafe.Offsetof(SendWR{}.Imm)]byte
	_ [unsafe.Offsetof(SendWR{}.RemoteAddr) - unsafe.Offsetof(provider.SendWR{}.RemoteAddr)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteAddr) - unsafe.Offsetof(SendWR{}.RemoteAddr)]byte
	_ [unsafe.Offsetof(SendWR{}.RKey) - unsafe.Offsetof(provider.SendWR{}.RKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RKey) - unsafe.Offsetof(SendWR{}.RKey)]byte
	_ [unsafe.Offsetof(SendWR{}.CompareAdd) - unsafe.Offsetof(provider.SendWR{}.CompareAdd)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.CompareAdd) - unsafe.Offsetof(SendWR{}.CompareAdd)]byte
	_ [unsafe.Offsetof(SendWR{}.Swap) - unsafe.Offsetof(provider.SendWR{}.Swap)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.Swap) - unsafe.Offsetof(SendWR{}.Swap)]byte
	_ [unsafe.Offsetof(SendWR{}.AH) - unsafe.Offsetof(provider.SendWR{}.AH)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.AH) - unsafe.Offsetof(SendWR{}.AH)]byte
	_ [unsafe.Offsetof(AH{}.drv)]byte // 0: an array of no bytes
	_ [unsafe.Offsetof(SendWR{}.RemoteQPN) - unsafe.Offsetof(provider.SendWR{}.RemoteQPN)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteQPN) - unsafe.Offsetof(SendWR{}.RemoteQPN)]byte
	_ [unsafe.Offsetof(SendWR{}.RemoteQKey) - unsafe.Offsetof(provider.SendWR{}.RemoteQKey)]byte
	_ [unsafe.Offsetof(provider.SendWR{}.RemoteQKey) - unsafe.Offsetof(SendWR{}.RemoteQKey)]byte
)

// sendWR is wr as the providers read it.
func sendWR(wr *SendWR) *provider.SendWR { return (*provider.SendWR)(unsafe.Pointer(wr)) }

// sendWRs is a send list as the providers read it.
func sendWRs(wrs []SendWR) []provider.SendWR {
	return unsafe.Slice((*provider.SendWR)(unsafe.Pointer(unsafe.SliceData(wrs))), len(wrs))
}
