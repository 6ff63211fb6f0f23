package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/goverbs/rdma/uverbs"
)

// report is everything printed about one device.
type report struct {
	Dev            uverbs.DeviceInfo
	Attr           uverbs.DeviceAttr
	BoardID        string // sysfs board_id, printed when present
	NumCompVectors int
	Ports          []portReport
}

type portReport struct {
	Num  int
	Attr uverbs.PortAttr
	GIDs []uverbs.GIDEntry
}

// The layout below is ibv_devinfo's (rdma-core v44
// libibverbs/examples/devinfo.c): a tab after each label, more tabs to line
// the values up, C printf number formats.

// cint prints a u32 count the way printf("%d") prints the int it is stored
// in.
func cint(v int) string { return strconv.Itoa(int(int32(v))) }

func writeReport(w io.Writer, r *report, verbose bool, onlyPort int) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	a := &r.Attr
	tr := r.Dev.Transport()
	p("hca_id:\t%s\n", r.Dev.Name)
	p("\ttransport:\t\t\t%s (%d)\n", tr, int(tr))
	if fw := fwVersion(r); fw != "" {
		p("\tfw_ver:\t\t\t\t%s\n", fw)
	}
	p("\tnode_guid:\t\t\t%s\n", a.NodeGUID)
	p("\tsys_image_guid:\t\t\t%s\n", a.SysImageGUID)
	p("\tvendor_id:\t\t\t0x%04x\n", a.VendorID)
	p("\tvendor_part_id:\t\t\t%s\n", cint(int(a.VendorPartID)))
	p("\thw_ver:\t\t\t\t0x%X\n", a.HWVer)
	if r.BoardID != "" {
		p("\tboard_id:\t\t\t%s\n", r.BoardID)
	}
	p("\tphys_port_cnt:\t\t\t%d\n", a.PhysPortCnt)

	if verbose {
		writeDeviceVerbose(w, r)
	}

	for _, pr := range r.Ports {
		if onlyPort != 0 && pr.Num != onlyPort {
			continue
		}
		writePort(w, r, &pr, verbose)
	}
}

// fwVersion is the provider's rendering of the raw firmware version. The
// rxe and siw providers print "major.minor.sub_minor"; for other drivers the
// sysfs/netlink string is the closest thing without their provider.
func fwVersion(r *report) string {
	switch r.Dev.DriverID {
	case uverbs.DriverRXE, uverbs.DriverSIW:
		return r.Attr.FWVersion()
	}
	return r.Dev.FWVersion
}

func writeDeviceVerbose(w io.Writer, r *report) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	a := &r.Attr
	p("\tmax_mr_size:\t\t\t0x%x\n", a.MaxMRSize)
	p("\tpage_size_cap:\t\t\t0x%x\n", a.PageSizeCap)
	p("\tmax_qp:\t\t\t\t%s\n", cint(a.MaxQP))
	p("\tmax_qp_wr:\t\t\t%s\n", cint(a.MaxQPWR))
	p("\tdevice_cap_flags:\t\t0x%08x\n", uint32(a.DeviceCapFlags))
	writeCapFlags(w, a.DeviceCapFlags&0xffffffff)
	p("\tmax_sge:\t\t\t%s\n", cint(a.MaxSGE))
	p("\tmax_sge_rd:\t\t\t%s\n", cint(a.MaxSGERD))
	p("\tmax_cq:\t\t\t\t%s\n", cint(a.MaxCQ))
	p("\tmax_cqe:\t\t\t%s\n", cint(a.MaxCQE))
	p("\tmax_mr:\t\t\t\t%s\n", cint(a.MaxMR))
	p("\tmax_pd:\t\t\t\t%s\n", cint(a.MaxPD))
	p("\tmax_qp_rd_atom:\t\t\t%s\n", cint(a.MaxQPRDAtom))
	p("\tmax_ee_rd_atom:\t\t\t%s\n", cint(a.MaxEERDAtom))
	p("\tmax_res_rd_atom:\t\t%s\n", cint(a.MaxResRDAtom))
	p("\tmax_qp_init_rd_atom:\t\t%s\n", cint(a.MaxQPInitRDAtom))
	p("\tmax_ee_init_rd_atom:\t\t%s\n", cint(a.MaxEEInitRDAtom))
	p("\tatomic_cap:\t\t\t%s (%d)\n", a.AtomicCap, a.AtomicCap)
	p("\tmax_ee:\t\t\t\t%s\n", cint(a.MaxEE))
	p("\tmax_rdd:\t\t\t%s\n", cint(a.MaxRDD))
	p("\tmax_mw:\t\t\t\t%s\n", cint(a.MaxMW))
	p("\tmax_raw_ipv6_qp:\t\t%s\n", cint(a.MaxRawIPv6QP))
	p("\tmax_raw_ethy_qp:\t\t%s\n", cint(a.MaxRawEthyQP))
	p("\tmax_mcast_grp:\t\t\t%s\n", cint(a.MaxMcastGrp))
	p("\tmax_mcast_qp_attach:\t\t%s\n", cint(a.MaxMcastQPAttach))
	p("\tmax_total_mcast_qp_attach:\t%s\n", cint(a.MaxTotalMcastQPAttach))
	p("\tmax_ah:\t\t\t\t%s\n", cint(a.MaxAH))
	p("\tmax_fmr:\t\t\t%s\n", cint(a.MaxFMR))
	if a.MaxFMR != 0 {
		p("\tmax_map_per_fmr:\t\t%s\n", cint(a.MaxMapPerFMR))
	}
	p("\tmax_srq:\t\t\t%s\n", cint(a.MaxSRQ))
	if a.MaxSRQ != 0 {
		p("\tmax_srq_wr:\t\t\t%s\n", cint(a.MaxSRQWR))
		p("\tmax_srq_sge:\t\t\t%s\n", cint(a.MaxSRQSGE))
	}
	p("\tmax_pkeys:\t\t\t%d\n", a.MaxPKeys)
	p("\tlocal_ca_ack_delay:\t\t%d\n", a.LocalCAAckDelay)

	writeODPCaps(w, &a.ODPCaps)
	if a.TimestampMask != 0 {
		p("\tcompletion timestamp_mask:\t\t\t0x%016x\n", a.TimestampMask)
	} else {
		p("\tcompletion_timestamp_mask not supported\n")
	}
	if a.HCACoreClock != 0 {
		p("\thca_core_clock:\t\t\t%dkHZ\n", a.HCACoreClock)
	} else {
		p("\tcore clock not supported\n")
	}
	if a.RawPacketCaps != 0 {
		p("\traw packet caps:\n")
		for _, f := range []struct {
			bit  uint32
			name string
		}{{1 << 0, "C-VLAN stripping offload"}, {1 << 1, "Scatter FCS offload"}, {1 << 2, "IP csum offload"}, {1 << 3, "Delay drop"}} {
			if a.RawPacketCaps&f.bit != 0 {
				p("\t\t\t\t\t%s\n", f.name)
			}
		}
	}
	p("\tdevice_cap_flags_ex:\t\t0x%X\n", uint64(a.DeviceCapFlags))
	writeCapFlags(w, a.DeviceCapFlags&^0xffffffff)

	// TSO, the RSS hash function/fields and packet pacing are not part of
	// the kernel's EX_QUERY_DEVICE response; only provider extensions (mlx5
	// driver data) report them. The rxe provider has none, so rdma-core
	// reports zeros for rxe, and so does this tool. For other drivers they
	// are unknown and left out.
	noProviderCaps := r.Dev.DriverID == uverbs.DriverRXE
	if noProviderCaps {
		p("\ttso_caps:\n")
		p("\t\tmax_tso:\t\t\t0\n")
	}
	p("\trss_caps:\n")
	p("\t\tmax_rwq_indirection_tables:\t\t\t%d\n", a.RSSCaps.MaxRWQIndirectionTables)
	p("\t\tmax_rwq_indirection_table_size:\t\t\t%d\n", a.RSSCaps.MaxRWQIndirectionTableSize)
	if noProviderCaps {
		p("\t\trx_hash_function:\t\t\t\t0x0\n")
		p("\t\trx_hash_fields_mask:\t\t\t\t0x0\n")
	}
	if a.RSSCaps.SupportedQPTypes != 0 {
		writeQPTypes(w, "\t\tsupported_qp:\n", a.RSSCaps.SupportedQPTypes)
	}
	p("\tmax_wq_type_rq:\t\t\t%d\n", a.MaxWQTypeRQ)
	if noProviderCaps {
		p("\tpacket_pacing_caps:\n")
		p("\t\tqp_rate_limit_min:\t0kbps\n")
		p("\t\tqp_rate_limit_max:\t0kbps\n")
	}
	if a.TMCaps.MaxNumTags != 0 {
		p("\tmax_rndv_hdr_size:\t\t%d\n", a.TMCaps.MaxRndvHdrSize)
		p("\tmax_num_tags:\t\t\t%d\n", a.TMCaps.MaxNumTags)
		p("\tmax_ops:\t\t\t%d\n", a.TMCaps.MaxOps)
		p("\tmax_sge:\t\t\t%d\n", a.TMCaps.MaxSGE)
		p("\tflags:\n")
		if a.TMCaps.Flags&1 != 0 {
			p("\t\t\t\t\tIBV_TM_CAP_RC\n")
		}
	} else {
		p("\ttag matching not supported\n")
	}
	if c := a.CQModerationCaps; c.MaxCount != 0 && c.MaxPeriod != 0 {
		p("\n\tcq moderation caps:\n")
		p("\t\tmax_cq_count:\t%d\n", c.MaxCount)
		p("\t\tmax_cq_period:\t%d us\n\n", c.MaxPeriod)
	}
	if a.MaxDMSize != 0 {
		p("\tmaximum available device memory:\t%dBytes\n\n", a.MaxDMSize)
	}
	p("\tnum_comp_vectors:\t\t%d\n", r.NumCompVectors)
}

// writeCapFlags prints the names of the set bits of f, one per line, and
// then the bits ibv_devinfo has no name for. ibv_devinfo v44 names the bits
// up to MANAGED_FLOW_STEERING in the low word and RAW_SCATTER_FCS and
// PCI_WRITE_END_PADDING in the high word; newer ones (FLUSH_*, ATOMIC_WRITE
// of kernel 6.2+) are "Unknown flags".
func writeCapFlags(w io.Writer, f uverbs.DeviceCapFlags) {
	var unknown uint64
	for b := 0; b < 64; b++ {
		bit := uverbs.DeviceCapFlags(1) << b
		if f&bit == 0 {
			continue
		}
		if names, _ := bit.Names(); len(names) == 1 && devinfoKnown[names[0]] {
			fmt.Fprintf(w, "\t\t\t\t\t%s\n", names[0])
		} else {
			unknown |= uint64(bit)
		}
	}
	if unknown != 0 {
		fmt.Fprintf(w, "\t\t\t\t\tUnknown flags: 0x%X\n", unknown)
	}
}

var devinfoKnown = map[string]bool{
	"RESIZE_MAX_WR": true, "BAD_PKEY_CNTR": true, "BAD_QKEY_CNTR": true, "RAW_MULTI": true,
	"AUTO_PATH_MIG": true, "CHANGE_PHY_PORT": true, "UD_AV_PORT_ENFORCE": true,
	"CURR_QP_STATE_MOD": true, "SHUTDOWN_PORT": true, "INIT_TYPE": true,
	"PORT_ACTIVE_EVENT": true, "SYS_IMAGE_GUID": true, "RC_RNR_NAK_GEN": true,
	"SRQ_RESIZE": true, "N_NOTIFY_CQ": true, "MEM_WINDOW": true, "UD_IP_CSUM": true,
	"XRC": true, "MEM_MGT_EXTENSIONS": true, "MEM_WINDOW_TYPE_2A": true,
	"MEM_WINDOW_TYPE_2B": true, "RC_IP_CSUM": true, "RAW_IP_CSUM": true,
	"MANAGED_FLOW_STEERING": true, "RAW_SCATTER_FCS": true, "PCI_WRITE_END_PADDING": true,
}

func writeODPCaps(w io.Writer, c *uverbs.ODPCaps) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\tgeneral_odp_caps:\n")
	if c.General&1 != 0 {
		p("\t\t\t\t\tODP_SUPPORT\n")
	}
	if c.General&2 != 0 {
		p("\t\t\t\t\tODP_SUPPORT_IMPLICIT\n")
	}
	if rest := c.General &^ 3; rest != 0 {
		p("\t\t\t\t\tUnknown flags: 0x%X\n", rest)
	}
	for _, t := range []struct {
		name string
		caps uint32
	}{{"rc_odp_caps", c.RC}, {"uc_odp_caps", c.UC}, {"ud_odp_caps", c.UD}, {"xrc_odp_caps", c.XRC}} {
		p("\t%s:\n", t.name)
		writeODPTransport(w, t.caps)
	}
}

func writeODPTransport(w io.Writer, caps uint32) {
	if caps == 0 {
		fmt.Fprintf(w, "\t\t\t\t\tNO SUPPORT\n")
		return
	}
	names := []string{"SUPPORT_SEND", "SUPPORT_RECV", "SUPPORT_WRITE", "SUPPORT_READ", "SUPPORT_ATOMIC", "SUPPORT_SRQ"}
	for i, n := range names {
		if caps&(1<<i) != 0 {
			fmt.Fprintf(w, "\t\t\t\t\t%s\n", n)
		}
	}
	if rest := caps &^ (1<<len(names) - 1); rest != 0 {
		fmt.Fprintf(w, "\t\t\t\t\tUnknown flags: 0x%X\n", rest)
	}
}

// writeQPTypes prints the supported_qp list of RSS caps (bit 1<<qp_type:
// UD = 4, RAW_PACKET = 8).
func writeQPTypes(w io.Writer, header string, qpts uint32) {
	fmt.Fprint(w, header)
	if qpts&(1<<8) != 0 {
		fmt.Fprintf(w, "\t\t\t\t\tSUPPORT_RAW_PACKET\n")
	}
	if qpts&(1<<4) != 0 {
		fmt.Fprintf(w, "\t\t\t\t\tSUPPORT_UD\n")
	}
	if rest := qpts &^ (1<<8 | 1<<4); rest != 0 {
		fmt.Fprintf(w, "\t\t\t\t\tUnknown flags: 0x%X\n", rest)
	}
}

func writePort(w io.Writer, r *report, pr *portReport, verbose bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	a := &pr.Attr
	p("\t\tport:\t%d\n", pr.Num)
	p("\t\t\tstate:\t\t\t%s (%d)\n", portString(a.State), a.State)
	p("\t\t\tmax_mtu:\t\t%s (%d)\n", a.MaxMTU, a.MaxMTU)
	p("\t\t\tactive_mtu:\t\t%s (%d)\n", a.ActiveMTU, a.ActiveMTU)
	p("\t\t\tsm_lid:\t\t\t%d\n", a.SMLID)
	p("\t\t\tport_lid:\t\t%d\n", a.LID)
	p("\t\t\tport_lmc:\t\t0x%02x\n", a.LMC)
	p("\t\t\tlink_layer:\t\t%s\n", a.LinkLayer)
	if verbose {
		p("\t\t\tmax_msg_sz:\t\t0x%x\n", a.MaxMsgSize)
		p("\t\t\tport_cap_flags:\t\t0x%08x\n", uint32(a.PortCapFlags))
		p("\t\t\tport_cap_flags2:\t0x%04x\n", a.PortCapFlags2)
		p("\t\t\tmax_vl_num:\t\t%s (%d)\n", vlString(a.MaxVLNum), a.MaxVLNum)
		p("\t\t\tbad_pkey_cntr:\t\t0x%x\n", a.BadPKeyCntr)
		p("\t\t\tqkey_viol_cntr:\t\t0x%x\n", a.QKeyViolCntr)
		p("\t\t\tsm_sl:\t\t\t%d\n", a.SMSL)
		p("\t\t\tpkey_tbl_len:\t\t%d\n", a.PKeyTableLen)
		p("\t\t\tgid_tbl_len:\t\t%d\n", a.GIDTableLen)
		p("\t\t\tsubnet_timeout:\t\t%d\n", a.SubnetTimeout)
		p("\t\t\tinit_type_reply:\t%d\n", a.InitTypeReply)
		p("\t\t\tactive_width:\t\t%s (%d)\n", a.ActiveWidth, a.ActiveWidth)
		p("\t\t\tactive_speed:\t\t%s (%d)\n", a.ActiveSpeed, a.ActiveSpeed)
		if r.Dev.Transport() == uverbs.TransportIB {
			p("\t\t\tphys_state:\t\t%s (%d)\n", physString(a.PhysState), a.PhysState)
		}
		for _, g := range pr.GIDs {
			if line, ok := gidLine(g, a.LinkLayer); ok {
				p("\t\t\tGID[%3d]:\t\t%s\n", g.Index, line)
			}
		}
	}
	p("\n")
}

// gidLine renders a GID as ibv_devinfo does: RoCE v2 GIDs as IPv6 text
// (inet_ntop), others as eight hex groups; on Ethernet followed by the type.
// ibv_devinfo skips entries whose interface ID (last 8 bytes) is zero.
func gidLine(g uverbs.GIDEntry, ll uverbs.LinkLayer) (string, bool) {
	var zero [8]byte
	if [8]byte(g.GID[8:]) == zero {
		return "", false
	}
	var s string
	if g.Type == uverbs.GIDTypeRoCEv2 {
		s = g.GID.String()
	} else {
		s = g.GID.Hex()
	}
	if ll == uverbs.LinkLayerEthernet {
		switch g.Type {
		case uverbs.GIDTypeRoCEv2:
			s += ", RoCE v2"
		default:
			s += ", RoCE v1"
		}
	}
	return s, true
}

func vlString(v uint8) string {
	switch v {
	case 1:
		return "1"
	case 2:
		return "2"
	case 3:
		return "4"
	case 4:
		return "8"
	case 5:
		return "15"
	}
	return "invalid value"
}

// portString uses ibv_port_state_str's spellings: the kernel's names with
// PORT_ before them, "invalid state" for others.
func portString(s uverbs.PortState) string {
	if s > uverbs.PortActiveDefer {
		return "invalid state"
	}
	return "PORT_" + s.String()
}

// physNames are ibv_devinfo's spellings where they differ from the
// kernel's (the library's).
var physNames = map[uverbs.PhysState]string{
	uverbs.PhysTraining:          "PORT_CONFIGURATION TRAINNING",
	uverbs.PhysLinkErrorRecovery: "LINK_ERROR_RECOVERY",
	uverbs.PhysPhyTest:           "PHY TEST",
}

func physString(s uverbs.PhysState) string {
	if n, ok := physNames[s]; ok {
		return n
	}
	return s.String()
}
