package uverbs

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/abi"
)

// transportChoice remembers, per Device and per command, whether the ioctl
// method is available. It starts untried; the first ErrNotSupported switches
// the command to its fallback for the life of the Device.
type transportChoice struct{ v atomic.Int32 }

const (
	choiceUntried int32 = iota
	choiceIoctl
	choiceFallback
)

func (t *transportChoice) useIoctl() bool { return t.v.Load() != choiceFallback }

// note records the outcome of an ioctl attempt and reports whether the
// caller should fall back.
func (t *transportChoice) note(err error) (fallback bool) {
	switch {
	case err == nil:
		t.v.CompareAndSwap(choiceUntried, choiceIoctl)
	case errors.Is(err, ErrNotSupported):
		t.v.Store(choiceFallback)
		return true
	}
	return false
}

// QueryPort returns the attributes of port (1-based).
//
// Transport: the ioctl method UVERBS_METHOD_QUERY_PORT, which also reports
// port_cap_flags2 (rdma-core issues it too); the write() command QUERY_PORT
// when the kernel has no ioctl method. Both run the same kernel code
// (kernel: core/uverbs_std_types_device.c, uverbs_cmd.c ib_uverbs_query_port).
//
// rdma-core: ibv_query_port.
func (c *Device) QueryPort(port uint8) (PortAttr, error) {
	if port < 1 {
		return PortAttr{}, &OpError{Op: "query_port", Err: fmt.Errorf("port %d out of range: ports are numbered from 1", port)}
	}
	if c.portPath.useIoctl() {
		a, err := c.queryPortIoctl(port)
		if !c.portPath.note(err) {
			return a, err
		}
	}
	return c.queryPortWrite(port)
}

func (c *Device) queryPortIoctl(port uint8) (PortAttr, error) {
	var resp abi.UverbsQueryPortRespEx
	err := c.ioctl("query_port", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT,
		attrConst(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, uint64(port)),
		attrOut(abi.UVERBS_ATTR_QUERY_PORT_RESP, bytesOf(&resp)))
	if err != nil {
		return PortAttr{}, err
	}
	a := decodePortAttr(&resp.LegacyResp)
	a.PortCapFlags2 = resp.PortCapFlags2
	a.HaveCapFlags2 = true
	return a, nil
}

func (c *Device) queryPortWrite(port uint8) (PortAttr, error) {
	var req abi.UverbsQueryPort
	var resp abi.UverbsQueryPortResp
	req.PortNum = uint8(port)
	if err := c.write("query_port", abi.IB_USER_VERBS_CMD_QUERY_PORT, bytesOf(&req), bytesOf(&resp)); err != nil {
		return PortAttr{}, err
	}
	return decodePortAttr(&resp), nil
}

func decodePortAttr(r *abi.UverbsQueryPortResp) PortAttr {
	return PortAttr{
		State:         PortState(r.State),
		MaxMTU:        MTU(r.MaxMTU),
		ActiveMTU:     MTU(r.ActiveMTU),
		GIDTableLen:   int(r.GIDTblLen),
		PortCapFlags:  PortCapFlags(r.PortCapFlags),
		MaxMsgSize:    r.MaxMsgSz,
		BadPKeyCntr:   r.BadPKeyCntr,
		QKeyViolCntr:  r.QKeyViolCntr,
		PKeyTableLen:  int(r.PKeyTblLen),
		LID:           r.LID,
		SMLID:         r.SMLID,
		LMC:           r.LMC,
		MaxVLNum:      r.MaxVLNum,
		SMSL:          r.SMSL,
		SubnetTimeout: r.SubnetTimeout,
		InitTypeReply: r.InitTypeReply,
		ActiveWidth:   Width(r.ActiveWidth),
		ActiveSpeed:   Speed(r.ActiveSpeed),
		PhysState:     PhysState(r.PhysState),
		LinkLayer:     LinkLayer(r.LinkLayer),
		Flags:         PortFlags(r.Flags),
	}
}
