package rxe

import (
	"fmt"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// The rxe objects as uverbs makes them: the create commands (rxe takes no
// driver data in and returns mmap information, docs/abi.md §3.2-3.3),
// mapping the rings the kernel allocated, and the prebuilt POST_SEND
// doorbell (a slot of the device's provider.Doorbells), issued through the
// provider.Device. What ties them to uverbs' objects (their locks, the
// errors callers see) is in uverbs/provider.go.

func bytesOf[T any](p *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)) }

// MapRing maps one queue described by mmap info from a create or resize
// response: MAP_SHARED, on the device's descriptor, once (kernel:
// sw/rxe/rxe_mmap.c rxe_mmap; docs/abi.md §3.3).
func MapRing(dev provider.Device, op string, mi abi.RxeMminfo, what string) (*sys.Mapping, error) {
	if mi.Size == 0 {
		return nil, fmt.Errorf("the kernel returned no mmap information for the %s", what)
	}
	return dev.Mmap(op, int64(mi.Offset), int(mi.Size), what+" "+dev.Name())
}

// MapCQ maps a CQ ring described by mmap info and checks its header
// (struct rxe_queue_buf with 128-byte slots, docs/abi.md §3.4).
func MapCQ(dev provider.Device, op string, mi abi.RxeMminfo) (*sys.Mapping, *CQ, error) {
	m, err := MapRing(dev, op, mi, "cq ring")
	if err != nil {
		return nil, nil, err
	}
	q, err := NewCQ(m.Bytes())
	if err != nil {
		m.Unmap()
		return nil, nil, err
	}
	return m, q, nil
}

// MapRQ maps a receive ring (a QP's, or an SRQ's) described by mmap info.
func MapRQ(dev provider.Device, op string, mi abi.RxeMminfo, maxSGE int, what string) (*sys.Mapping, *RQ, error) {
	m, err := MapRing(dev, op, mi, what)
	if err != nil {
		return nil, nil, err
	}
	q, err := NewRQ(m.Bytes(), maxSGE)
	if err != nil {
		m.Unmap()
		return nil, nil, err
	}
	return m, q, nil
}

// CreateCQ issues CREATE_CQ (core is the core command) and maps the ring.
// It returns the kernel's handle. On an error nothing is left created.
func CreateCQ(dev provider.Device, op string, core abi.UverbsCreateCQ) (*sys.Mapping, *CQ, uint32, error) {
	var resp struct {
		core abi.UverbsCreateCQResp
		drv  abi.RxeCreateCQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_CQ, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, nil, 0, err
	}
	m, q, err := MapCQ(dev, op, resp.drv.MI)
	if err != nil {
		req := abi.UverbsDestroyCQ{CQHandle: resp.core.CQHandle}
		var dresp abi.UverbsDestroyCQResp
		dev.Write("destroy_cq", abi.IB_USER_VERBS_CMD_DESTROY_CQ, bytesOf(&req), bytesOf(&dresp))
		return nil, nil, 0, err
	}
	return m, q, resp.core.CQHandle, nil
}

// ResizeCQ issues RESIZE_CQ for the CQ handle to hold at least n
// completions and maps the new ring. The kernel copied the unread entries
// into it and frees the old one once unmapped (kernel:
// sw/rxe/rxe_queue.c rxe_queue_resize). switched reports that the kernel
// moved to the new ring, even if it could not be mapped.
func ResizeCQ(dev provider.Device, op string, handle uint32, n int) (m *sys.Mapping, q *CQ, switched bool, err error) {
	req := abi.UverbsResizeCQ{CQHandle: handle, CQE: uint32(n)}
	var resp struct {
		core abi.UverbsResizeCQResp
		drv  abi.RxeResizeCQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_RESIZE_CQ, bytesOf(&req), bytesOf(&resp)); err != nil {
		return nil, nil, false, err
	}
	m, q, err = MapCQ(dev, op, resp.drv.MI)
	return m, q, true, err
}

// QPRings are an rxe QP's rings, mapped from the kernel's, and its
// doorbell, a slot of the device's Doorbells.
type QPRings struct {
	SQ    *SQ
	SQMap *sys.Mapping
	DB    *provider.PostSend
	RQ    *RQ // nil with an SRQ
	RQMap *sys.Mapping
	Lim   SendLimits
}

// Release unmaps the rings r holds and frees its doorbell's slot in dbs.
func (r *QPRings) Release(dbs *provider.Doorbells) {
	for _, m := range []*sys.Mapping{r.SQMap, r.RQMap} {
		if m != nil {
			m.Unmap()
		}
	}
	dbs.Free(r.DB)
}

// CreateQP issues CREATE_QP (core is the core command; rxe takes no driver
// input for it and refuses any) and maps the rings of
// rxe_create_qp_resp: rq_mi then sq_mi, no receive ring with an SRQ
// (docs/abi.md §3.2-3.3). It returns the core response too, whose
// capabilities the QP reports. On an error nothing is left created.
func CreateQP(dev provider.Device, op string, core abi.UverbsCreateQP, typ QPType, hasSRQ bool) (*QPRings, abi.UverbsCreateQPResp, error) {
	var resp struct {
		core abi.UverbsCreateQPResp
		drv  abi.RxeCreateQPResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_QP, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, resp.core, err
	}
	r, err := mapQP(dev, op, typ, hasSRQ, &resp.core, &resp.drv)
	if err != nil {
		req := abi.UverbsDestroyQP{QPHandle: resp.core.QPHandle}
		var dresp abi.UverbsDestroyQPResp
		dev.Write("destroy_qp", abi.IB_USER_VERBS_CMD_DESTROY_QP, bytesOf(&req), bytesOf(&dresp))
		return nil, resp.core, err
	}
	return r, resp.core, nil
}

// mapQP maps the send ring and the receive ring (without an SRQ), takes a
// doorbell slot, and builds the ring views from their headers.
func mapQP(dev provider.Device, op string, typ QPType, hasSRQ bool, core *abi.UverbsCreateQPResp, drv *abi.RxeCreateQPResp) (*QPRings, error) {
	r := &QPRings{}
	var err error
	fail := func(err error) (*QPRings, error) {
		r.Release(dev.Doorbells())
		return nil, err
	}
	if !hasSRQ {
		if r.RQMap, r.RQ, err = MapRQ(dev, op, drv.RQMI, int(core.MaxRecvSGE), "rq ring"); err != nil {
			return fail(err)
		}
	}
	if r.SQMap, err = MapRing(dev, op, drv.SQMI, "sq ring"); err != nil {
		return fail(err)
	}
	r.Lim = SendLimits{QPType: typ, MaxSGE: int(core.MaxSendSGE), MaxInline: int(core.MaxInlineData)}
	if r.SQ, err = NewSQ(r.SQMap.Bytes(), r.Lim); err != nil {
		return fail(err)
	}
	if r.DB, err = dev.Doorbells().New(core.QPHandle, "doorbells "+dev.Name()); err != nil {
		return fail(err)
	}
	return r, nil
}

// CreateSRQ issues CREATE_SRQ (core is the core command) and maps the
// ring. It returns the kernel's handle and SRQN. On an error nothing is
// left created.
func CreateSRQ(dev provider.Device, op string, core abi.UverbsCreateSRQ) (*sys.Mapping, *RQ, uint32, uint32, error) {
	var resp struct {
		core abi.UverbsCreateSRQResp
		drv  abi.RxeCreateSRQResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_SRQ, bytesOf(&core), bytesOf(&resp)); err != nil {
		return nil, nil, 0, 0, err
	}
	m, q, err := MapRQ(dev, op, resp.drv.MI, int(resp.core.MaxSGE), "srq ring")
	if err != nil {
		req := abi.UverbsDestroySRQ{SRQHandle: resp.core.SRQHandle}
		var dresp abi.UverbsDestroySRQResp
		dev.Write("destroy_srq", abi.IB_USER_VERBS_CMD_DESTROY_SRQ, bytesOf(&req), bytesOf(&dresp))
		return nil, nil, 0, 0, err
	}
	return m, q, resp.core.SRQHandle, resp.core.SRQN, nil
}

// CreateAH issues CREATE_AH (core is the core command) and returns the
// kernel's handle and the AH number rxe returns after the core response
// when there is room for it (struct rxe_create_ah_resp; kernel:
// sw/rxe/rxe_verbs.c rxe_create_ah), which UD WQEs carry. On an error
// nothing is left created.
func CreateAH(dev provider.Device, op string, core abi.UverbsCreateAH) (num, handle uint32, err error) {
	var resp struct {
		core abi.UverbsCreateAHResp
		drv  abi.RxeCreateAHResp
	}
	if err := dev.Write(op, abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(&core), bytesOf(&resp)); err != nil {
		return 0, 0, err
	}
	if resp.drv.AHNum == 0 {
		req := abi.UverbsDestroyAH{AHHandle: resp.core.AHHandle}
		dev.Write("destroy_ah", abi.IB_USER_VERBS_CMD_DESTROY_AH, bytesOf(&req), nil)
		return 0, 0, fmt.Errorf("the kernel returned AH number 0; this kernel's rxe is too old (AH numbers exist from Linux 5.10): %w", provider.ErrNotSupported)
	}
	return resp.drv.AHNum, resp.core.AHHandle, nil
}
