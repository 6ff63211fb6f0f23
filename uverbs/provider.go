package uverbs

import (
	"fmt"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// The data path (posting work requests, polling completions) is driver
// specific: each driver shares its queues with user space in its own format.
// This package implements the soft-RoCE (rxe) format
// (uverbs/internal/rxe); the objects that own rings (CQ, QP, SRQ) refuse
// other drivers with ErrNotSupported. Control commands (PD, MR, AH, QP state
// changes) are driver-agnostic.

// requireRXE fails with ErrNotSupported unless the device is driven by rxe.
func (c *Device) requireRXE(op string) error {
	if c == nil {
		return closedErr(op)
	}
	if c.dev.DriverID != DriverRXE {
		return &OpError{Op: op, Err: fmt.Errorf("device %s uses driver %v, but only the rxe (soft-RoCE) data path is implemented: %w", c.dev.Name, c.dev.DriverID, ErrNotSupported)}
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
