package mlx5

import (
	"fmt"
	"math/bits"
)

// DeviceLimits are the limits ALLOC_UCONTEXT returns
// (struct mlx5_ib_alloc_ucontext_resp), which queue sizing obeys.
type DeviceLimits struct {
	MaxSQDescSize int // max_sq_desc_sz
	MaxRQDescSize int // max_rq_desc_sz
	MaxSendWQEBB  int // max_send_wqebb
	MaxRecvWR     int // max_recv_wr
	MaxSRQRecvWR  int // max_srq_recv_wr
}

func roundupPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// ilog32 is rdma-core's ilog32: the number of significant bits.
func ilog32(n int) int { return bits.Len32(uint32(n)) }

// sqOverhead is the largest fixed part of a send WQE for the QP type with
// the default operations (verbs.c sq_overhead, _sq_overhead): RC and UC
// reserve room for a memory-window bind, UD for the datagram segment.
func sqOverhead(t QPType) int {
	switch t {
	case QPTypeRC, QPTypeUC:
		return umrOverhead
	case QPTypeUD:
		return ctrlSegSize + DatagramSize
	}
	return -1
}

// SQSize computes a send queue the way libmlx5 does for the requested
// capabilities (verbs.c mlx5_calc_send_wqe, mlx5_calc_sq_size). It returns
// the configuration (without QPN and flags) and the ring's size in bytes;
// cfg.MaxInline is what the QP really holds, reported back to the caller as
// cap.max_inline_data.
func SQSize(lim *DeviceLimits, t QPType, maxSendWR, maxSendSGE, maxInline int) (cfg SQConfig, ringBytes int, err error) {
	if maxSendWR == 0 {
		return SQConfig{QPType: t}, 0, nil
	}
	size := sqOverhead(t)
	if size < 0 {
		return cfg, 0, fmt.Errorf("mlx5: QP type %v has no send queue format", t)
	}
	if maxSendWR < 0 || maxSendSGE < 0 || maxInline < 0 {
		return cfg, 0, fmt.Errorf("mlx5: negative send queue capability")
	}
	inlSize := 0
	if maxInline > 0 {
		inlSize = size + (inlSegHdr+maxInline+15)&^15
	}
	maxGather := (lim.MaxSQDescSize - size) / dataSegSize
	if maxSendSGE > maxGather {
		return cfg, 0, fmt.Errorf("mlx5: max_send_sge %d exceeds the %d a send WQE of at most %d bytes holds", maxSendSGE, maxGather, lim.MaxSQDescSize)
	}
	size += maxSendSGE * dataSegSize
	tot := max(size, inlSize)
	if tot > lim.MaxSQDescSize {
		return cfg, 0, fmt.Errorf("mlx5: max_inline_data %d needs a %d-byte send WQE; the device allows %d", maxInline, tot, lim.MaxSQDescSize)
	}
	wqeSize := (tot + SendWQEBB - 1) &^ (SendWQEBB - 1)
	if wqeSize > lim.MaxSQDescSize {
		return cfg, 0, fmt.Errorf("mlx5: a %d-byte send WQE exceeds the device's %d", wqeSize, lim.MaxSQDescSize)
	}
	if maxSendWR > 0x7fffffff/lim.MaxSQDescSize {
		return cfg, 0, fmt.Errorf("mlx5: max_send_wr %d is too large", maxSendWR)
	}
	wqSize := roundupPow2(maxSendWR * wqeSize)
	cfg = SQConfig{
		QPType:    t,
		WQECount:  wqSize / SendWQEBB,
		MaxPost:   wqSize / wqeSize,
		MaxSGE:    maxSendSGE,
		MaxInline: wqeSize - sqOverhead(t) - inlSegHdr,
	}
	if cfg.WQECount > lim.MaxSendWQEBB {
		return SQConfig{}, 0, fmt.Errorf("mlx5: %d send WQEBBs exceed the device's %d; ask for fewer work requests, SGEs or inline bytes", cfg.WQECount, lim.MaxSendWQEBB)
	}
	return cfg, wqSize, nil
}

// RQSize computes a QP's receive queue the way libmlx5 does (verbs.c
// mlx5_calc_rcv_wqe, mlx5_calc_rq_size); a QP with an SRQ has none. The
// ring must be at least one WQEBB.
func RQSize(lim *DeviceLimits, maxRecvWR, maxRecvSGE int) (cfg RQConfig, ringBytes int, err error) {
	if maxRecvWR == 0 {
		return RQConfig{}, 0, nil
	}
	if maxRecvWR < 0 || maxRecvSGE < 0 {
		return cfg, 0, fmt.Errorf("mlx5: negative receive queue capability")
	}
	if maxRecvWR > lim.MaxRecvWR {
		return cfg, 0, fmt.Errorf("mlx5: max_recv_wr %d exceeds the device's %d", maxRecvWR, lim.MaxRecvWR)
	}
	wqeSize := dataSegSize * max(maxRecvSGE, 1)
	if wqeSize > lim.MaxRQDescSize {
		return cfg, 0, fmt.Errorf("mlx5: max_recv_sge %d needs a %d-byte receive WQE; the device allows %d", maxRecvSGE, wqeSize, lim.MaxRQDescSize)
	}
	wqeSize = roundupPow2(wqeSize)
	if wqeSize > lim.MaxRQDescSize {
		return cfg, 0, fmt.Errorf("mlx5: a %d-byte receive WQE exceeds the device's %d", wqeSize, lim.MaxRQDescSize)
	}
	wqSize := max(roundupPow2(maxRecvWR)*wqeSize, SendWQEBB)
	cfg = RQConfig{
		WQECount: wqSize / wqeSize,
		WQEShift: ilog32(wqeSize - 1),
		MaxPost:  1 << ilog32(wqSize/wqeSize-1),
		MaxSGE:   wqeSize / dataSegSize,
	}
	return cfg, wqSize, nil
}

// SRQSize computes a shared receive queue the way libmlx5 does (srq.c
// mlx5_alloc_srq_buf): twice the requested entries plus one when the device
// allows (the spare half is libmlx5's wait queue for on-demand paging,
// unused here), else the requested plus one; the free list holds
// roundup_pow2(maxWR+1) entries.
func SRQSize(lim *DeviceLimits, maxWR, maxSGE int) (cfg SRQConfig, ringBytes int, err error) {
	if maxWR <= 0 || maxSGE < 0 {
		return cfg, 0, fmt.Errorf("mlx5: SRQ with max_wr %d, max_sge %d; both must be positive", maxWR, maxSGE)
	}
	n, waitQueue := maxWR*2+1, true
	if n > lim.MaxSRQRecvWR {
		n, waitQueue = maxWR+1, false
	}
	size := roundupPow2(max(32, srqNextSize+maxSGE*dataSegSize))
	// srq.c compares the entry size with max_recv_wr (sic).
	if size > lim.MaxRecvWR {
		return cfg, 0, fmt.Errorf("mlx5: max_sge %d needs %d-byte SRQ entries; the device allows %d", maxSGE, size, lim.MaxRecvWR)
	}
	cfg = SRQConfig{
		WQECount:  roundupPow2(n),
		WQEShift:  ilog32(size - 1),
		MaxSGE:    (size - srqNextSize) / dataSegSize,
		Tail:      roundupPow2(maxWR+1) - 1,
		WaitQueue: waitQueue,
	}
	return cfg, cfg.WQECount * size, nil
}
