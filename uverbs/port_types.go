package uverbs

import (
	"strconv"
)

// MTU is an IB path/port MTU enum (IB_MTU_256 = 1 ... IB_MTU_4096 = 5).
type MTU uint8

// Path MTUs (rdma-core: enum ibv_mtu).
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes, 0 for an invalid value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// MTUFromBytes returns the largest IB MTU that fits in n bytes (as rdma-core
// and the kernel's iboe_get_mtu pick a RoCE MTU from a netdev MTU), or 0 if n
// is below 256.
func MTUFromBytes(n int) MTU {
	for m := MTU4096; m >= MTU256; m-- {
		if m.Bytes() <= n {
			return m
		}
	}
	return 0
}

// String returns m's name.
func (m MTU) String() string {
	if b := m.Bytes(); b != 0 {
		return strconv.Itoa(b)
	}
	return "invalid MTU"
}

// LinkLayer of a port (IB_LINK_LAYER_*).
type LinkLayer uint8

// Link layers of a port (rdma-core: IBV_LINK_LAYER_UNSPECIFIED, _INFINIBAND, _ETHERNET).
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

// String returns l's name.
func (l LinkLayer) String() string {
	switch l {
	case LinkLayerUnspecified:
		return "Unspecified"
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unknown"
}

// Width is the active link width (IB_WIDTH_*: 1X=1, 4X=2, 8X=4, 12X=8, 2X=16).
type Width uint8

// Lanes returns the number of lanes, 0 for an invalid value.
func (w Width) Lanes() int {
	switch w {
	case 1:
		return 1
	case 2:
		return 4
	case 4:
		return 8
	case 8:
		return 12
	case 16:
		return 2
	}
	return 0
}

// String returns w's name.
func (w Width) String() string {
	if n := w.Lanes(); n != 0 {
		return strconv.Itoa(n) + "X"
	}
	return "invalid width"
}

// Speed is the active per-lane speed (IB_SPEED_*: SDR=1, DDR=2, QDR=4,
// FDR10=8, FDR=16, EDR=32, HDR=64, NDR=128, XDR=256).
type Speed uint16

// String returns the per-lane rate as ibv_devinfo prints it.
func (s Speed) String() string {
	switch s {
	case 1:
		return "2.5 Gbps"
	case 2:
		return "5.0 Gbps"
	case 4, 8:
		return "10.0 Gbps"
	case 16:
		return "14.0 Gbps"
	case 32:
		return "25.0 Gbps"
	case 64:
		return "50.0 Gbps"
	case 128:
		return "100.0 Gbps"
	case 256:
		return "200.0 Gbps"
	}
	return "invalid speed"
}

// PortCapFlags are the IBTA PortInfo:CapabilityMask bits the kernel reports
// (UAPI: enum ib_uverbs_port_cap_flags). Only the ones a verbs user tests are
// named here.
type PortCapFlags uint32

// Port capability flags (rdma-core: enum ibv_port_cap_flags).
const (
	PortCapSM           PortCapFlags = 0x2       // IB_UVERBS_PCF_SM
	PortCapSysImageGUID PortCapFlags = 0x800     // IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP
	PortCapCMSupported  PortCapFlags = 0x10000   // IB_UVERBS_PCF_CM_SUP
	PortCapIPBasedGIDs  PortCapFlags = 0x4000000 // IB_UVERBS_PCF_IP_BASED_GIDS
)

// PortFlags are the uverbs port flags (IB_UVERBS_QPF_GRH_REQUIRED).
type PortFlags uint8

// PortGRHRequired: every address handle and connected QP on this port needs a
// global route header. True for RoCE, hence for rxe.
const PortGRHRequired PortFlags = 0x1 // IB_UVERBS_QPF_GRH_REQUIRED

// PortAttr are a port's attributes (rdma-core: struct ibv_port_attr).
type PortAttr struct {
	State         PortState
	MaxMTU        MTU
	ActiveMTU     MTU
	GIDTableLen   int
	PortCapFlags  PortCapFlags
	MaxMsgSize    uint32
	BadPKeyCntr   uint32
	QKeyViolCntr  uint32
	PKeyTableLen  int
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8 // VL capability code: 1=VL0, 2=VL0-1, 3=VL0-3, 4=VL0-7, 5=VL0-14
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   Width
	ActiveSpeed   Speed
	PhysState     PhysState
	LinkLayer     LinkLayer
	Flags         PortFlags
	PortCapFlags2 uint16 // from the ioctl QUERY_PORT only; 0 through write()
	ActiveSpeedEx uint32 // kernel 6.7+ ioctl QUERY_PORT; 0 when not reported
	HaveCapFlags2 bool   // PortCapFlags2 was reported (ioctl path)
}

// GRHRequired reports whether traffic on the port needs a GRH (RoCE).
func (p *PortAttr) GRHRequired() bool { return p.Flags&PortGRHRequired != 0 }
