package uverbs

import (
	"fmt"

	"github.com/goverbs/rdma/internal/unix"
)

// The kernel refuses queue sizes beyond the device's limits with a bare
// EINVAL (kernel: sw/rxe/rxe_cq.c rxe_cq_chk_attr, rxe_qp.c rxe_qp_chk_cap,
// rxe_srq.c rxe_srq_chk_init / rxe_srq_chk_attr compare with
// rxe->attr.max_cqe, max_qp_wr, max_send_sge, max_srq_wr, max_srq_sge).
// These checks give the same errno with the limit named.

// deviceLimits returns the device attributes, queried once per Device. It
// returns nil if the query fails: the kernel then checks on its own.
func (c *Device) deviceLimits() *DeviceAttr {
	if a := c.devAttr.Load(); a != nil {
		return a
	}
	a, err := c.Query()
	if err != nil {
		return nil
	}
	c.devAttr.Store(&a)
	return &a
}

func limitErr(what string, n int, limit string, max int, advice string) error {
	return fmt.Errorf("%s %d exceeds the device's %s %d: %s: %w", what, n, limit, max, advice, unix.EINVAL)
}

func (c *Device) checkCQDepth(depth int) error {
	a := c.deviceLimits()
	if a != nil && a.MaxCQE > 0 && depth > a.MaxCQE {
		return limitErr("CQ depth", depth, "max_cqe", a.MaxCQE, "ask for fewer entries")
	}
	return nil
}

func (c *Device) checkQPCap(cp *QPCap, srq bool) error {
	a := c.deviceLimits()
	if a == nil {
		return nil
	}
	if a.MaxQPWR > 0 {
		if cp.MaxSendWR > a.MaxQPWR {
			return limitErr("Cap.MaxSendWR", cp.MaxSendWR, "max_qp_wr", a.MaxQPWR, "ask for a smaller send queue")
		}
		if !srq && cp.MaxRecvWR > a.MaxQPWR {
			return limitErr("Cap.MaxRecvWR", cp.MaxRecvWR, "max_qp_wr", a.MaxQPWR, "ask for a smaller receive queue")
		}
	}
	if a.MaxSGE > 0 {
		if cp.MaxSendSGE > a.MaxSGE {
			return limitErr("Cap.MaxSendSGE", cp.MaxSendSGE, "max_sge", a.MaxSGE, "use fewer scatter/gather entries per work request")
		}
		if !srq && cp.MaxRecvSGE > a.MaxSGE {
			return limitErr("Cap.MaxRecvSGE", cp.MaxRecvSGE, "max_sge", a.MaxSGE, "use fewer scatter/gather entries per work request")
		}
	}
	return nil
}

func (c *Device) checkSRQSize(maxWR, maxSGE int) error {
	a := c.deviceLimits()
	if a == nil {
		return nil
	}
	if a.MaxSRQWR > 0 && maxWR > a.MaxSRQWR {
		return limitErr("SRQ max_wr", maxWR, "max_srq_wr", a.MaxSRQWR, "ask for fewer entries")
	}
	if a.MaxSRQSGE > 0 && maxSGE > a.MaxSRQSGE {
		return limitErr("SRQ max_sge", maxSGE, "max_srq_sge", a.MaxSRQSGE, "use fewer scatter/gather entries per work request")
	}
	return nil
}
