package uverbs

import (
	"fmt"
	"math/rand/v2"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/mlx5"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// createMLX5 builds the AH's address vector as libmlx5 does (verbs.c
// mlx5_create_ah; docs/mlx5.md §9): the port's link layer and GRH
// requirement, on Ethernet the source GID's type and the destination MAC
// the kernel resolves in CREATE_AH (struct mlx5_ib_create_ah_resp).
// libmlx5 makes no kernel AH on InfiniBand; this package always does, so
// that every AH has a handle.
func (ah *AH) createMLX5(op string, c *Device, req *abi.UverbsCreateAH) error {
	port := int(ah.attr.Port)
	pa, err := c.QueryPort(port)
	if err != nil {
		return err
	}
	link := mlx5.PortLink{Ethernet: pa.LinkLayer == LinkLayerEthernet, GRHRequired: pa.GRHRequired()}
	if link.Ethernet && ah.attr.global() {
		g, err := c.QueryGID(port, int(ah.attr.SGIDIndex))
		if err != nil {
			return err
		}
		link.RoCEv2 = g.Type == GIDTypeRoCEv2
	}
	a := mlx5AHAttr(&ah.attr)
	random := rand.Uint32()
	// The checks first, as libmlx5 makes them before the command.
	if _, err := mlx5.BuildAV(&a, link, [6]byte{}, random); err != nil {
		return &OpError{Op: op, Err: err}
	}
	var resp struct {
		core abi.UverbsCreateAHResp
		drv  abi.Mlx5CreateAHResp
	}
	if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_AH, bytesOf(req), bytesOf(&resp)); err != nil {
		return err
	}
	ah.handle = resp.core.AHHandle
	if link.Ethernet && resp.drv.ResponseLength == 0 {
		ah.destroy()
		return &OpError{Op: op, Err: fmt.Errorf("the kernel did not return the destination MAC address in CREATE_AH (older mlx5 kernels leave it to the library, which this package does not do): %w", ErrNotSupported)}
	}
	av, err := mlx5.BuildAV(&a, link, resp.drv.DMAC, random)
	if err != nil {
		ah.destroy()
		return &OpError{Op: op, Err: err}
	}
	ah.drv = provider.AH{Data: av, Num: mlx5AHNum}
	return nil
}

// mlx5AHNum is the AH number every mlx5 AH shows the shared send
// validation, which refuses a UD send whose AH number is 0.
const mlx5AHNum = ^uint32(0)

func mlx5AHAttr(a *AHAttr) mlx5.AHAttr {
	return mlx5.AHAttr{
		DLID:         a.DLID,
		SL:           a.SL,
		SrcPathBits:  a.SrcPathBits,
		StaticRate:   a.StaticRate,
		IsGlobal:     a.global(),
		DGID:         a.DGID,
		FlowLabel:    a.FlowLabel,
		SGIDIndex:    a.SGIDIndex,
		HopLimit:     a.HopLimit,
		TrafficClass: a.TrafficClass,
	}
}
