package mlx5

import (
	"fmt"
	"syscall"
)

// AHAttr is what an address handle says about the destination (struct
// ibv_ah_attr with its global route).
type AHAttr struct {
	DLID         uint16
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8 // enum ibv_rate
	IsGlobal     bool
	DGID         [16]byte
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
}

// PortLink is what BuildAV needs to know of the source port and GID.
type PortLink struct {
	Ethernet    bool // link layer Ethernet (RoCE), else InfiniBand
	GRHRequired bool // IBV_QPF_GRH_REQUIRED in the port's flags
	RoCEv2      bool // the source GID is a RoCE v2 GID
}

// ErrAHNeedsGRH refuses an AH without a global route on a RoCE port or a
// port that requires one.
var ErrAHNeedsGRH = error(&wrError{"mlx5: this port needs a global route (GRH) in every address handle: set the AH's destination GID", syscall.EINVAL, nil})

// rateTable maps enum ibv_rate to the device's static rate code
// (verbs.c ib_to_mlx5_rate_table); rates past its end are unlimited (0).
var rateTable = [...]uint8{0, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 11, 13, 15, 0, 9, 15, 0, 0, 9, 13, 0, 0}

// BuildAV builds the address vector a UD send copies into its datagram
// segment, as libmlx5 builds it when it creates an AH (verbs.c
// mlx5_create_ah). dmac is the destination MAC on Ethernet (from the
// CREATE_AH response, or resolved from the GID). random picks the UDP
// source port of a RoCE v2 AH without a flow label, which libmlx5 draws
// with get_random().
func BuildAV(a *AHAttr, port PortLink, dmac [6]byte, random uint32) (AddressVector, error) {
	var av AddressVector
	if !a.IsGlobal && (port.Ethernet || port.GRHRequired) {
		return av, ErrAHNeedsGRH
	}
	var rate uint8
	if int(a.StaticRate) < len(rateTable) {
		rate = rateTable[a.StaticRate]
	}
	var grh uint32
	if port.Ethernet {
		if port.RoCEv2 {
			// rlid carries the UDP source port (verbs.c
			// mlx5_ah_set_udp_sport, verbs.h ibv_flow_label_to_udp_sport).
			fl := a.FlowLabel & 0xfffff
			var sport uint16
			if fl != 0 {
				sport = uint16((fl&0x3fff)^(fl&0xfc000)>>14) | 0xc000
			} else {
				sport = uint16(random%(0xffff+1-0xc000) + 0xc000)
			}
			be.PutUint16(av[avRLID:], sport)
		}
		av[avStatRateSL] = rate<<4 | (a.SL&7)<<1
	} else {
		av[avFlMLID] = a.SrcPathBits & 0x7f
		be.PutUint16(av[avRLID:], a.DLID)
		grh = 1
		av[avStatRateSL] = rate<<4 | a.SL&0xf
	}
	if a.IsGlobal {
		av[avTClass] = a.TrafficClass
		av[avHopLimit] = a.HopLimit
		be.PutUint32(av[avGRHGIDFL:], grh<<30|uint32(a.SGIDIndex)<<20|a.FlowLabel&0xfffff)
		copy(av[avRGID:], a.DGID[:])
	}
	if port.Ethernet {
		copy(av[avRMAC:], dmac[:])
	}
	return av, nil
}

// struct mlx5_wqe_av offsets (mlx5dv.h).
const (
	avStatRateSL = 12
	avFlMLID     = 13
	avRLID       = 14
	avRMAC       = 20
	avTClass     = 26
	avHopLimit   = 27
	avGRHGIDFL   = 28
	avRGID       = 32
)

func (a AddressVector) String() string { return fmt.Sprintf("%x", a[:]) }
