package main

import (
	"fmt"
	"io"

	"github.com/goverbs/rdma/nvmeof"
)

// printDiscovery prints a discovery log page with nvme-cli's labels
// (`nvme discover`, nvme-cli 2.x).
func printDiscovery(w io.Writer, dl *nvmeof.DiscoveryLog) {
	fmt.Fprintf(w, "\nDiscovery Log Number of Records %d, Generation counter %d\n", len(dl.Entries), dl.Generation)
	for i, e := range dl.Entries {
		fmt.Fprintf(w, "=====Discovery Log Entry %d======\n", i)
		fmt.Fprintf(w, "trtype:  %s\n", e.Transport())
		fmt.Fprintf(w, "adrfam:  %s\n", e.Family())
		fmt.Fprintf(w, "subtype: %s\n", e.Subtype())
		fmt.Fprintf(w, "treq:    %s\n", treq(e.Requirements))
		fmt.Fprintf(w, "portid:  %d\n", e.PortID)
		fmt.Fprintf(w, "trsvcid: %s\n", e.ServiceID)
		fmt.Fprintf(w, "subnqn:  %s\n", e.SubsystemNQN)
		fmt.Fprintf(w, "traddr:  %s\n", e.Address)
		if e.TransportType == 1 {
			fmt.Fprintf(w, "rdma_prtype: %s\n", e.RDMAProvider())
			fmt.Fprintf(w, "rdma_qptype: %s\n", e.RDMAQP())
			fmt.Fprintf(w, "rdma_cms:    %s\n", e.RDMACM())
			fmt.Fprintf(w, "rdma_pkey: 0x%04x\n", e.RDMAPKey)
		}
	}
}

// treq is the transport requirements field: secure channel in bits 1:0,
// and bit 2 for "SQ flow control disable supported".
func treq(t uint8) string {
	s := []string{"not specified", "required", "not required", "reserved"}[t&3]
	if t&4 != 0 {
		s += ", sq flow control disable supported"
	}
	return s
}

// printController prints Identify Controller's first fields with
// nvme-cli's labels (`nvme id-ctrl`).
func printController(w io.Writer, ci nvmeof.ControllerInfo) {
	fmt.Fprintln(w, "NVME Identify Controller:")
	fmt.Fprintf(w, "vid       : %s\n", hexC(ci.VendorID))
	fmt.Fprintf(w, "sn        : %-20s\n", ci.SerialNumber)
	fmt.Fprintf(w, "mn        : %-40s\n", ci.ModelNumber)
	fmt.Fprintf(w, "fr        : %-8s\n", ci.Firmware)
	fmt.Fprintf(w, "mdts      : %d\n", ci.MDTS)
	fmt.Fprintf(w, "cntlid    : %s\n", hexC(ci.ControllerID))
	fmt.Fprintf(w, "ver       : %s\n", hexC(ci.Version))
	fmt.Fprintf(w, "kas       : %d\n", ci.KeepAliveUnit)
	fmt.Fprintf(w, "maxcmd    : %d\n", ci.MaxCommands)
	fmt.Fprintf(w, "nn        : %d\n", ci.Namespaces)
	fmt.Fprintf(w, "oncs      : %s\n", hexC(ci.ONCS))
	fmt.Fprintf(w, "vwc       : %s\n", hexC(ci.VWC))
	fmt.Fprintf(w, "sgls      : %s\n", hexC(ci.SGLSupport))
	fmt.Fprintf(w, "subnqn    : %s\n", ci.SubsystemNQN)
	fmt.Fprintf(w, "ioccsz    : %d\n", ci.IOCommandCapsuleSize/16)
	fmt.Fprintf(w, "icdoff    : %d\n", ci.InCapsuleDataOffset/16)
}

// hexC formats v as C's printf("%#x") does, which nvme-cli uses: 0 is "0".
func hexC[T uint8 | uint16 | uint32](v T) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
