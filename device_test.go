package rdma

import (
	"testing"

	"github.com/goverbs/rdma/internal/abi"
)

func TestGUIDRoundTrip(t *testing.T) {
	g, err := ParseGUID("5054:00ff:fe12:3456")
	if err != nil {
		t.Fatal(err)
	}
	if g != 0x505400fffe123456 {
		t.Errorf("parsed %#x", uint64(g))
	}
	if g.String() != "5054:00ff:fe12:3456" {
		t.Errorf("String() = %q", g.String())
	}
	for _, bad := range []string{"", "5054:00ff:fe12", "5054:00ff:fe12:3456:0", "5054::fe12:3456", "x054:00ff:fe12:3456", "50540:00ff:fe12:3456"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
}

func FuzzParseGUID(f *testing.F) {
	f.Add("5054:00ff:fe12:3456")
	f.Add("0:0:0:0")
	f.Add("ffff:ffff:ffff:ffff:")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGUID(s)
		if err != nil {
			return
		}
		g2, err := ParseGUID(g.String())
		if err != nil || g2 != g {
			t.Fatalf("%q -> %v does not round-trip: %v %v", s, g, g2, err)
		}
	})
}

func TestGUID(t *testing.T) {
	g := GUID(0x505400fffe123456) // rxe on 52:54:00:12:34:56
	if g.String() != "5054:00ff:fe12:3456" {
		t.Errorf("String() = %q", g.String())
	}
	if b := g.Bytes(); b != [8]byte{0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56} {
		t.Errorf("Bytes() = % x", b)
	}
	if GUID(1).String() != "0000:0000:0000:0001" {
		t.Errorf("leading zeros: %q", GUID(1).String())
	}
	for _, s := range []string{"5054:00ff:fe12:3456", "5054:ff:fe12:3456\n"} {
		p, err := ParseGUID(s)
		if err != nil || p != g {
			t.Errorf("ParseGUID(%q) = %v, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "5054:00ff:fe12", "5054:00ff:fe12:3456:1", "5054:00ff:fe12:34567", "5054:00ff:fe12:xyz0", "50:54:00:ff:fe:12:34:56"} {
		if _, err := ParseGUID(s); err == nil {
			t.Errorf("ParseGUID(%q) accepted", s)
		}
	}
}

func TestStateStrings(t *testing.T) {
	for s, want := range map[PortState]string{PortDown: "DOWN", PortInit: "INIT", PortArmed: "ARMED",
		PortActive: "ACTIVE", PortActiveDefer: "ACTIVE_DEFER", 9: "UNKNOWN(9)"} {
		if s.String() != want {
			t.Errorf("PortState(%d) = %q, want %q", s, s.String(), want)
		}
	}
	for s, want := range map[PhysState]string{PhysSleep: "SLEEP", PhysPolling: "POLLING", PhysDisabled: "DISABLED",
		PhysLinkUp: "LINK_UP", PhysLinkErrorRecovery: "LINK_ERROR_RECOVER", PhysPhyTest: "PHY_TEST", 0: "UNKNOWN(0)"} {
		if s.String() != want {
			t.Errorf("PhysState(%d) = %q, want %q", s, s.String(), want)
		}
	}
}

func TestDriverName(t *testing.T) {
	for id, want := range map[DriverID]string{14: "rxe", 18: "siw", 1: "mlx5", 9: "irdma", 200: "driver-200", 0: "unknown"} {
		if got := id.String(); got != want {
			t.Errorf("DriverID(%d) = %q, want %q", id, got, want)
		}
	}
}

// The driver ids follow the UAPI header (enum rdma_driver_id).
func TestDriverIDs(t *testing.T) {
	for id, want := range map[DriverID]uint32{
		DriverUnknown: abi.RDMA_DRIVER_UNKNOWN, DriverMLX5: abi.RDMA_DRIVER_MLX5, DriverMLX4: abi.RDMA_DRIVER_MLX4,
		DriverCXGB3: abi.RDMA_DRIVER_CXGB3, DriverCXGB4: abi.RDMA_DRIVER_CXGB4, DriverMTHCA: abi.RDMA_DRIVER_MTHCA,
		DriverBNXTRE: abi.RDMA_DRIVER_BNXT_RE, DriverOCRDMA: abi.RDMA_DRIVER_OCRDMA, DriverNES: abi.RDMA_DRIVER_NES,
		DriverIRDMA: abi.RDMA_DRIVER_IRDMA, DriverVMWPVRDMA: abi.RDMA_DRIVER_VMW_PVRDMA, DriverQEDR: abi.RDMA_DRIVER_QEDR,
		DriverHNS: abi.RDMA_DRIVER_HNS, DriverUSNIC: abi.RDMA_DRIVER_USNIC, DriverRXE: abi.RDMA_DRIVER_RXE,
		DriverHFI1: abi.RDMA_DRIVER_HFI1, DriverQIB: abi.RDMA_DRIVER_QIB, DriverEFA: abi.RDMA_DRIVER_EFA,
		DriverSIW: abi.RDMA_DRIVER_SIW, DriverERDMA: abi.RDMA_DRIVER_ERDMA, DriverMANA: abi.RDMA_DRIVER_ERDMA + 1,
	} {
		if uint32(id) != want {
			t.Errorf("%v is %d, the header says %d", id, id, want)
		}
	}
}
