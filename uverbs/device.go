package uverbs

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

// AtomicCap says how atomic operations are guaranteed (enum ib_atomic_cap).
type AtomicCap uint32

const (
	AtomicNone AtomicCap = 0 // no atomics
	AtomicHCA  AtomicCap = 1 // atomic between operations of this device
	AtomicGlob AtomicCap = 2 // atomic with the CPU and other devices too
)

// String returns rdma-core's name ("ATOMIC_HCA").
func (a AtomicCap) String() string {
	switch a {
	case AtomicNone:
		return "ATOMIC_NONE"
	case AtomicHCA:
		return "ATOMIC_HCA"
	case AtomicGlob:
		return "ATOMIC_GLOB"
	}
	return "invalid atomic capability"
}

// DeviceCapFlags are the device capability bits (UAPI: enum
// ib_uverbs_device_cap_flags; rdma-core: IBV_DEVICE_*). The low 32 bits are
// ibv_device_attr.device_cap_flags, the whole word device_cap_flags_ex.
type DeviceCapFlags uint64

// Device capability bits, <rdma/ib_user_verbs.h>.
const (
	DeviceResizeMaxWR         DeviceCapFlags = 0x1          // IB_UVERBS_DEVICE_RESIZE_MAX_WR
	DeviceBadPKeyCntr         DeviceCapFlags = 0x2          // IB_UVERBS_DEVICE_BAD_PKEY_CNTR
	DeviceBadQKeyCntr         DeviceCapFlags = 0x4          // IB_UVERBS_DEVICE_BAD_QKEY_CNTR
	DeviceRawMulti            DeviceCapFlags = 0x8          // IB_UVERBS_DEVICE_RAW_MULTI
	DeviceAutoPathMig         DeviceCapFlags = 0x10         // IB_UVERBS_DEVICE_AUTO_PATH_MIG
	DeviceChangePhyPort       DeviceCapFlags = 0x20         // IB_UVERBS_DEVICE_CHANGE_PHY_PORT
	DeviceUDAVPortEnforce     DeviceCapFlags = 0x40         // IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE
	DeviceCurrQPStateMod      DeviceCapFlags = 0x80         // IB_UVERBS_DEVICE_CURR_QP_STATE_MOD
	DeviceShutdownPort        DeviceCapFlags = 0x100        // IB_UVERBS_DEVICE_SHUTDOWN_PORT
	DeviceInitType            DeviceCapFlags = 1 << 9       // IB_UVERBS_DEVICE_INIT_TYPE, "not in use" in the UAPI header
	DevicePortActiveEvent     DeviceCapFlags = 0x400        // IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT
	DeviceSysImageGUID        DeviceCapFlags = 0x800        // IB_UVERBS_DEVICE_SYS_IMAGE_GUID
	DeviceRCRNRNAKGen         DeviceCapFlags = 0x1000       // IB_UVERBS_DEVICE_RC_RNR_NAK_GEN
	DeviceSRQResize           DeviceCapFlags = 0x2000       // IB_UVERBS_DEVICE_SRQ_RESIZE
	DeviceNNotifyCQ           DeviceCapFlags = 0x4000       // IB_UVERBS_DEVICE_N_NOTIFY_CQ
	DeviceMemWindow           DeviceCapFlags = 0x20000      // IB_UVERBS_DEVICE_MEM_WINDOW
	DeviceUDIPCsum            DeviceCapFlags = 0x40000      // IB_UVERBS_DEVICE_UD_IP_CSUM
	DeviceXRC                 DeviceCapFlags = 0x100000     // IB_UVERBS_DEVICE_XRC
	DeviceMemMgtExtensions    DeviceCapFlags = 0x200000     // IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS
	DeviceMemWindowType2A     DeviceCapFlags = 0x800000     // IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A
	DeviceMemWindowType2B     DeviceCapFlags = 0x1000000    // IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B
	DeviceRCIPCsum            DeviceCapFlags = 0x2000000    // IB_UVERBS_DEVICE_RC_IP_CSUM
	DeviceRawIPCsum           DeviceCapFlags = 0x4000000    // IB_UVERBS_DEVICE_RAW_IP_CSUM
	DeviceManagedFlowSteering DeviceCapFlags = 0x20000000   // IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING
	DeviceRawScatterFCS       DeviceCapFlags = 0x400000000  // IB_UVERBS_DEVICE_RAW_SCATTER_FCS
	DevicePCIWriteEndPadding  DeviceCapFlags = 0x1000000000 // IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING
	DeviceFlushGlobal         DeviceCapFlags = 1 << 38      // IB_UVERBS_DEVICE_FLUSH_GLOBAL, kernel 6.2+ headers
	DeviceFlushPersistent     DeviceCapFlags = 1 << 39      // IB_UVERBS_DEVICE_FLUSH_PERSISTENT, kernel 6.2+ headers
	DeviceAtomicWrite         DeviceCapFlags = 1 << 40      // IB_UVERBS_DEVICE_ATOMIC_WRITE, kernel 6.2+ headers
)

// deviceCapNames are rdma-core's names (as ibv_devinfo prints them), in bit
// order.
var deviceCapNames = []struct {
	bit  DeviceCapFlags
	name string
}{
	{DeviceResizeMaxWR, "RESIZE_MAX_WR"},
	{DeviceBadPKeyCntr, "BAD_PKEY_CNTR"},
	{DeviceBadQKeyCntr, "BAD_QKEY_CNTR"},
	{DeviceRawMulti, "RAW_MULTI"},
	{DeviceAutoPathMig, "AUTO_PATH_MIG"},
	{DeviceChangePhyPort, "CHANGE_PHY_PORT"},
	{DeviceUDAVPortEnforce, "UD_AV_PORT_ENFORCE"},
	{DeviceCurrQPStateMod, "CURR_QP_STATE_MOD"},
	{DeviceShutdownPort, "SHUTDOWN_PORT"},
	{DeviceInitType, "INIT_TYPE"},
	{DevicePortActiveEvent, "PORT_ACTIVE_EVENT"},
	{DeviceSysImageGUID, "SYS_IMAGE_GUID"},
	{DeviceRCRNRNAKGen, "RC_RNR_NAK_GEN"},
	{DeviceSRQResize, "SRQ_RESIZE"},
	{DeviceNNotifyCQ, "N_NOTIFY_CQ"},
	{DeviceMemWindow, "MEM_WINDOW"},
	{DeviceUDIPCsum, "UD_IP_CSUM"},
	{DeviceXRC, "XRC"},
	{DeviceMemMgtExtensions, "MEM_MGT_EXTENSIONS"},
	{DeviceMemWindowType2A, "MEM_WINDOW_TYPE_2A"},
	{DeviceMemWindowType2B, "MEM_WINDOW_TYPE_2B"},
	{DeviceRCIPCsum, "RC_IP_CSUM"},
	{DeviceRawIPCsum, "RAW_IP_CSUM"},
	{DeviceManagedFlowSteering, "MANAGED_FLOW_STEERING"},
	{DeviceRawScatterFCS, "RAW_SCATTER_FCS"},
	{DevicePCIWriteEndPadding, "PCI_WRITE_END_PADDING"},
	{DeviceFlushGlobal, "FLUSH_GLOBAL"},
	{DeviceFlushPersistent, "FLUSH_PERSISTENT"},
	{DeviceAtomicWrite, "ATOMIC_WRITE"},
}

// Names returns the names of the set bits and the bits without a name.
func (f DeviceCapFlags) Names() (names []string, unknown DeviceCapFlags) {
	rest := f
	for _, n := range deviceCapNames {
		if f&n.bit != 0 {
			names = append(names, n.name)
			rest &^= n.bit
		}
	}
	return names, rest
}

// String returns f's name.
func (f DeviceCapFlags) String() string {
	names, rest := f.Names()
	if rest != 0 {
		names = append(names, fmt.Sprintf("0x%x", uint64(rest)))
	}
	if len(names) == 0 {
		return "0"
	}
	return strings.Join(names, "|")
}

// ODPCaps are the on-demand-paging capabilities (struct ib_uverbs_odp_caps).
type ODPCaps struct {
	General uint64 // IBV_ODP_SUPPORT (1), IBV_ODP_SUPPORT_IMPLICIT (2)
	RC      uint32 // per transport: SEND 1, RECV 2, WRITE 4, READ 8, ATOMIC 16, SRQ_RECV 32
	UC      uint32
	UD      uint32
	XRC     uint32
}

// RSSCaps are receive-side-scaling limits (struct ib_uverbs_rss_caps).
type RSSCaps struct {
	SupportedQPTypes           uint32 // bit 1<<qp_type
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
}

// TMCaps are tag-matching limits (struct ib_uverbs_tm_caps).
type TMCaps struct {
	MaxRndvHdrSize uint32
	MaxNumTags     uint32
	Flags          uint32
	MaxOps         uint32
	MaxSGE         uint32
}

// CQModerationCaps are the CQ moderation limits.
type CQModerationCaps struct {
	MaxCount  uint16
	MaxPeriod uint16 // microseconds
}

// DeviceAttr are a device's attributes and limits (rdma-core: struct
// ibv_device_attr_ex). Counts are as the kernel reports them.
type DeviceAttr struct {
	FWVer                 uint64 // raw firmware version; see FWVersion
	NodeGUID              GUID
	SysImageGUID          GUID
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HWVer                 uint32
	MaxQP                 int
	MaxQPWR               int
	DeviceCapFlags        DeviceCapFlags // all 64 bits (device_cap_flags_ex)
	MaxSGE                int
	MaxSGERD              int
	MaxCQ                 int
	MaxCQE                int
	MaxMR                 int
	MaxPD                 int
	MaxQPRDAtom           int
	MaxEERDAtom           int
	MaxResRDAtom          int
	MaxQPInitRDAtom       int
	MaxEEInitRDAtom       int
	AtomicCap             AtomicCap
	MaxEE                 int
	MaxRDD                int
	MaxMW                 int
	MaxRawIPv6QP          int
	MaxRawEthyQP          int
	MaxMcastGrp           int
	MaxMcastQPAttach      int
	MaxTotalMcastQPAttach int
	MaxAH                 int
	MaxFMR                int
	MaxMapPerFMR          int
	MaxSRQ                int
	MaxSRQWR              int
	MaxSRQSGE             int
	MaxPKeys              int
	LocalCAAckDelay       uint8
	PhysPortCnt           int

	// Extended attributes (EX_QUERY_DEVICE).
	ODPCaps          ODPCaps
	TimestampMask    uint64
	HCACoreClock     uint64 // kHz
	RSSCaps          RSSCaps
	MaxWQTypeRQ      uint32
	RawPacketCaps    uint32
	TMCaps           TMCaps
	CQModerationCaps CQModerationCaps
	MaxDMSize        uint64
}

// FWVersion formats FWVer as "major.minor.sub_minor" from its 16-bit fields
// 47..32, 31..16 and 15..0, the format of the rxe and siw providers
// (rdma-core: rxe_query_device in providers/rxe). rxe reports "0.0.0".
func (a *DeviceAttr) FWVersion() string {
	return fmt.Sprintf("%d.%d.%d", uint16(a.FWVer>>32), uint16(a.FWVer>>16), uint16(a.FWVer))
}

// Query returns the device's attributes. It uses the extended write()
// command EX_QUERY_DEVICE with no driver data, which rxe requires
// (kernel: sw/rxe/rxe_verbs.c rxe_query_device refuses udata), and which
// carries the 64-bit capability flags the legacy QUERY_DEVICE truncates.
//
// rdma-core: ibv_query_device_ex.
func (c *Device) Query() (DeviceAttr, error) {
	const op = "query_device"
	var req abi.UverbsExQueryDevice
	var resp abi.UverbsExQueryDeviceResp
	if err := c.writeEx(op, abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE, bytesOf(&req), nil, bytesOf(&resp), nil); err != nil {
		return DeviceAttr{}, err
	}
	return decodeDeviceAttr(&resp), nil
}

// beGUID converts a __be64 field read as a native integer back to its value.
func beGUID(v uint64) GUID {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return GUID(binary.BigEndian.Uint64(b[:]))
}

func decodeDeviceAttr(r *abi.UverbsExQueryDeviceResp) DeviceAttr {
	b := &r.Base
	a := DeviceAttr{
		FWVer:                 b.FWVer,
		NodeGUID:              beGUID(b.NodeGUID),
		SysImageGUID:          beGUID(b.SysImageGUID),
		MaxMRSize:             b.MaxMRSize,
		PageSizeCap:           b.PageSizeCap,
		VendorID:              b.VendorID,
		VendorPartID:          b.VendorPartID,
		HWVer:                 b.HWVer,
		MaxQP:                 int(b.MaxQP),
		MaxQPWR:               int(b.MaxQPWR),
		DeviceCapFlags:        DeviceCapFlags(b.DeviceCapFlags),
		MaxSGE:                int(b.MaxSGE),
		MaxSGERD:              int(b.MaxSGERD),
		MaxCQ:                 int(b.MaxCQ),
		MaxCQE:                int(b.MaxCQE),
		MaxMR:                 int(b.MaxMR),
		MaxPD:                 int(b.MaxPD),
		MaxQPRDAtom:           int(b.MaxQPRDAtom),
		MaxEERDAtom:           int(b.MaxEERDAtom),
		MaxResRDAtom:          int(b.MaxResRDAtom),
		MaxQPInitRDAtom:       int(b.MaxQPInitRDAtom),
		MaxEEInitRDAtom:       int(b.MaxEEInitRDAtom),
		AtomicCap:             AtomicCap(b.AtomicCap),
		MaxEE:                 int(b.MaxEE),
		MaxRDD:                int(b.MaxRDD),
		MaxMW:                 int(b.MaxMW),
		MaxRawIPv6QP:          int(b.MaxRawIPv6QP),
		MaxRawEthyQP:          int(b.MaxRawEthyQP),
		MaxMcastGrp:           int(b.MaxMcastGrp),
		MaxMcastQPAttach:      int(b.MaxMcastQPAttach),
		MaxTotalMcastQPAttach: int(b.MaxTotalMcastQPAttach),
		MaxAH:                 int(b.MaxAH),
		MaxFMR:                int(b.MaxFMR),
		MaxMapPerFMR:          int(b.MaxMapPerFMR),
		MaxSRQ:                int(b.MaxSRQ),
		MaxSRQWR:              int(b.MaxSRQWR),
		MaxSRQSGE:             int(b.MaxSRQSGE),
		MaxPKeys:              int(b.MaxPKeys),
		LocalCAAckDelay:       b.LocalCAAckDelay,
		PhysPortCnt:           int(b.PhysPortCnt),

		ODPCaps: ODPCaps{
			General: r.ODPCaps.GeneralCaps,
			RC:      r.ODPCaps.PerTransportCaps.RCODPCaps,
			UC:      r.ODPCaps.PerTransportCaps.UCODPCaps,
			UD:      r.ODPCaps.PerTransportCaps.UDODPCaps,
			XRC:     r.XRCODPCaps,
		},
		TimestampMask: r.TimestampMask,
		HCACoreClock:  r.HCACoreClock,
		RSSCaps: RSSCaps{
			SupportedQPTypes:           r.RSSCaps.SupportedQpts,
			MaxRWQIndirectionTables:    r.RSSCaps.MaxRWQIndirectionTables,
			MaxRWQIndirectionTableSize: r.RSSCaps.MaxRWQIndirectionTableSize,
		},
		MaxWQTypeRQ:   r.MaxWQTypeRQ,
		RawPacketCaps: r.RawPacketCaps,
		TMCaps: TMCaps{
			MaxRndvHdrSize: r.TMCaps.MaxRndvHdrSize,
			MaxNumTags:     r.TMCaps.MaxNumTags,
			Flags:          r.TMCaps.Flags,
			MaxOps:         r.TMCaps.MaxOps,
			MaxSGE:         r.TMCaps.MaxSGE,
		},
		CQModerationCaps: CQModerationCaps{
			MaxCount:  r.CQModerationCaps.MaxCQModerationCount,
			MaxPeriod: r.CQModerationCaps.MaxCQModerationPeriod,
		},
		MaxDMSize: r.MaxDMSize,
	}
	// The kernel fills response_length with the bytes it wrote; a kernel
	// that predates device_cap_flags_ex leaves it zero and the 32-bit base
	// flags are all there is (rdma-core: libibverbs/cmd_device.c
	// ibv_cmd_query_device_any).
	if uintptr(r.ResponseLength) >= unsafe.Offsetof(r.DeviceCapFlagsEx)+unsafe.Sizeof(r.DeviceCapFlagsEx) {
		a.DeviceCapFlags = DeviceCapFlags(r.DeviceCapFlagsEx)
	}
	return a
}
