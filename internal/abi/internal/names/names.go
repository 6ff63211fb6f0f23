package names

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// words maps lower-case C name parts to their Go spelling. Parts not listed
// are capitalised (remote -> Remote).
var words = map[string]string{
	// Go initialisms and RDMA abbreviations.
	"abi": "ABI", "ah": "AH", "av": "AV", "ca": "CA", "cpu": "CPU", "cq": "CQ", "cqe": "CQE",
	"dgid": "DGID", "dlid": "DLID", "dm": "DM", "dma": "DMA", "dmac": "DMAC",
	"ece": "ECE", "ee": "EE", "esp": "ESP", "fd": "FD", "fmr": "FMR", "fw": "FW",
	"gid": "GID", "gre": "GRE", "grh": "GRH", "guid": "GUID", "hca": "HCA", "hw": "HW",
	"ib": "IB", "ibdev": "IBDev", "id": "ID", "iova": "IOVA", "ip": "IP", "ipv4": "IPv4",
	"ipv6": "IPv6", "lid": "LID", "lkey": "LKey", "lmc": "LMC", "mac": "MAC", "mi": "MI",
	"mlid": "MLID", "mpls": "MPLS", "mr": "MR", "mtu": "MTU", "mw": "MW", "odp": "ODP",
	"pd": "PD", "pkey": "PKey", "pkeys": "PKeys", "ps": "PS", "psn": "PSN", "qkey": "QKey", "qp": "QP",
	"qpn": "QPN", "rc": "RC", "rd": "RD", "rdd": "RDD", "rdma": "RDMA", "rkey": "RKey",
	"rnr": "RNR", "rq": "RQ", "rss": "RSS", "rwq": "RWQ", "sge": "SGE", "sgid": "SGID",
	"sl": "SL", "sqe": "SQE", "rqe": "RQE", "stag": "STag", "slid": "SLID", "sm": "SM", "sq": "SQ", "sqd": "SQD", "srq": "SRQ",
	"srqn": "SRQN", "ssn": "SSN", "tcp": "TCP", "tm": "TM", "uc": "UC", "ud": "UD",
	"udp": "UDP", "uid": "UID", "va": "VA", "vl": "VL", "vlan": "VLAN", "wc": "WC",
	"wq": "WQ", "wqe": "WQE", "wr": "WR", "xrc": "XRC", "xrcd": "XRCD", "xsrq": "XSRQ",
	// Abbreviations that stay words.
	"cmd": "Cmd", "ex": "Ex", "imm": "Imm", "resp": "Resp",
}

// Type returns the Go name of the C struct, union or typedef name c (without
// the "struct " keyword): ib_uverbs_X -> UverbsX, rdma_ucm_X -> UcmX,
// rxe_X -> RxeX, mlx5_ib_X -> Mlx5X, siw_X -> SiwX, mminfo -> RxeMminfo, anything else
// CamelCased (ib_user_path_rec -> IBUserPathRec, __kernel_sockaddr_storage ->
// KernelSockaddrStorage).
func Type(c string) string {
	c = strings.TrimLeft(c, "_")
	switch {
	case c == "mminfo":
		return "RxeMminfo"
	case strings.HasPrefix(c, "ib_uverbs_"):
		return "Uverbs" + Camel(strings.TrimPrefix(c, "ib_uverbs_"))
	case strings.HasPrefix(c, "rdma_ucm_"):
		return "Ucm" + Camel(strings.TrimPrefix(c, "rdma_ucm_"))
	case strings.HasPrefix(c, "rxe_"):
		return "Rxe" + Camel(strings.TrimPrefix(c, "rxe_"))
	case strings.HasPrefix(c, "siw_"):
		return "Siw" + Camel(strings.TrimPrefix(c, "siw_"))
	case strings.HasPrefix(c, "mlx5_ib_"):
		return "Mlx5" + Camel(strings.TrimPrefix(c, "mlx5_ib_"))
	}
	return Camel(c)
}

// Field returns the Go name of the C struct member c. Members whose C name
// starts with an underscore are private padding and become "_".
func Field(c string) string {
	if c == "" || strings.HasPrefix(c, "_") {
		return "_"
	}
	return Camel(c)
}

// Offset returns the name of the generated constant that holds the byte
// offset of the member at the dotted C path (as written in offsetof) inside
// the C type cType, for members that have no Go field of their own: members
// of unions (which are byte arrays in Go) and flexible array members.
// Example: Offset("rxe_send_wr", "wr.rdma.remote_addr") ==
// "RxeSendWROffWRRDMARemoteAddr".
func Offset(cType, path string) string {
	var b strings.Builder
	b.WriteString(Type(cType))
	b.WriteString("Off")
	for _, p := range strings.Split(path, ".") {
		b.WriteString(Camel(p))
	}
	return b.String()
}

// Camel joins the underscore-separated parts of c, each spelled as in words
// or capitalised.
func Camel(c string) string {
	var b strings.Builder
	for _, w := range strings.Split(c, "_") {
		if w == "" {
			continue
		}
		if s, ok := words[strings.ToLower(w)]; ok {
			b.WriteString(s)
			continue
		}
		r, n := utf8.DecodeRuneInString(w)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(w[n:])
	}
	return b.String()
}
