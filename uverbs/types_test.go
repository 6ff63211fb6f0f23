package uverbs

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

func TestGIDFormats(t *testing.T) {
	g := GIDFromIP(netip.MustParseAddr("127.0.0.1"))
	if g.String() != "::ffff:127.0.0.1" {
		t.Errorf("String() = %q, want inet_ntop's ::ffff:127.0.0.1", g.String())
	}
	if g.Hex() != "0000:0000:0000:0000:0000:ffff:7f00:0001" {
		t.Errorf("Hex() = %q", g.Hex())
	}
	if g.Addr().Unmap() != netip.MustParseAddr("127.0.0.1") || !g.Addr().Is4In6() {
		t.Errorf("Addr() = %v", g.Addr())
	}
	ll, err := ParseGID("fe80:0000:0000:0000:5054:00ff:fe12:3456")
	if err != nil {
		t.Fatal(err)
	}
	if ll.String() != "fe80::5054:ff:fe12:3456" {
		t.Errorf("String() = %q", ll.String())
	}
	if (GID{}).IsZero() != true || ll.IsZero() {
		t.Error("IsZero wrong")
	}
}

func FuzzParseGID(f *testing.F) {
	f.Add("fe80:0000:0000:0000:5054:00ff:fe12:3456")
	f.Add("::ffff:10.0.0.1")
	f.Add("10.0.0.1")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGID(s)
		if err != nil {
			return
		}
		for _, txt := range []string{g.String(), g.Hex()} {
			g2, err := ParseGID(txt)
			if err != nil || g2 != g {
				t.Fatalf("%q -> %q does not round-trip: %v %v", s, txt, g2, err)
			}
		}
	})
}

func TestMTU(t *testing.T) {
	for m, want := range map[MTU]int{MTU256: 256, MTU512: 512, MTU1024: 1024, MTU2048: 2048, MTU4096: 4096, 0: 0, 6: 0} {
		if m.Bytes() != want {
			t.Errorf("%d.Bytes() = %d, want %d", m, m.Bytes(), want)
		}
	}
	if MTUFromBytes(1500) != MTU1024 || MTUFromBytes(65536) != MTU4096 || MTUFromBytes(100) != 0 {
		t.Error("MTUFromBytes wrong")
	}
	if MTU4096.String() != "4096" || MTU(9).String() != "invalid MTU" {
		t.Error("MTU String wrong")
	}
}

func TestEnumStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{PortActive.String(), "ACTIVE"},
		{PortDown.String(), "DOWN"},
		{PhysLinkUp.String(), "LINK_UP"},
		{LinkLayerEthernet.String(), "Ethernet"},
		{Width(1).String(), "1X"},
		{Width(2).String(), "4X"},
		{Speed(1).String(), "2.5 Gbps"},
		{Speed(32).String(), "25.0 Gbps"},
		{AtomicHCA.String(), "ATOMIC_HCA"},
		{TransportIB.String(), "InfiniBand"},
		{NodeCA.String(), "CA"},
		{DriverRXE.String(), "rxe"},
		{DriverID(99).String(), "driver-99"},
		{GIDTypeRoCEv2.String(), "RoCE v2"},
		{EventCQErr.String(), "CQ error"},
		{EventPortActive.String(), "port active"},
		{EventPortErr.String(), "port error"},
		{EventSRQLimitReached.String(), "SRQ limit reached"},
		{EventQPLastWQEReached.String(), "last WQE reached"},
		{EventType(77).String(), "unknown event 77"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestDeviceCapFlagNames(t *testing.T) {
	f := DeviceBadPKeyCntr | DeviceSysImageGUID | DeviceFlushGlobal | 1<<50
	names, rest := f.Names()
	if strings.Join(names, ",") != "BAD_PKEY_CNTR,SYS_IMAGE_GUID,FLUSH_GLOBAL" || rest != 1<<50 {
		t.Errorf("names %v rest %#x", names, uint64(rest))
	}
	if f.String() != "BAD_PKEY_CNTR|SYS_IMAGE_GUID|FLUSH_GLOBAL|0x4000000000000" {
		t.Errorf("String() = %q", f.String())
	}
}

func TestDecodeAsyncEvent(t *testing.T) {
	var d abi.UverbsAsyncEventDesc
	if unsafe.Sizeof(d) != 16 {
		t.Fatalf("ib_uverbs_async_event_desc is %d bytes, want 16", unsafe.Sizeof(d))
	}
	b := make([]byte, 16)
	binary.NativeEndian.PutUint64(b, 1)
	binary.NativeEndian.PutUint32(b[8:], uint32(EventPortErr))
	e := decodeAsyncEvent(b)
	if e.Type != EventPortErr || e.Port != 1 || e.Element != 1 {
		t.Errorf("event = %+v", e)
	}
	if e.String() != "port error (port 1)" {
		t.Errorf("String() = %q", e.String())
	}
	binary.NativeEndian.PutUint64(b, 0xdeadbeef)
	binary.NativeEndian.PutUint32(b[8:], uint32(EventCQErr))
	e = decodeAsyncEvent(b)
	if e.Type != EventCQErr || e.Port != 0 || e.Element != 0xdeadbeef {
		t.Errorf("event = %+v", e)
	}
}

// The device attributes come out of the right fields: node GUIDs are
// big-endian in the response, the 64-bit capability flags come from
// device_cap_flags_ex when the kernel wrote it.
func TestDecodeDeviceAttr(t *testing.T) {
	var r abi.UverbsExQueryDeviceResp
	var be [8]byte
	binary.BigEndian.PutUint64(be[:], 0x505400fffe123456)
	r.Base.NodeGUID = binary.NativeEndian.Uint64(be[:])
	r.Base.FWVer = 1<<32 | 2<<16 | 3
	r.Base.MaxSGE = 32
	r.Base.MaxCQE = 32767
	r.Base.MaxPKeys = 64
	r.Base.LocalCAAckDelay = 15
	r.Base.PhysPortCnt = 1
	r.Base.AtomicCap = 1
	r.Base.DeviceCapFlags = uint32(DeviceSysImageGUID)
	r.DeviceCapFlagsEx = uint64(DeviceSysImageGUID | DeviceAtomicWrite)
	r.ResponseLength = uint32(unsafe.Sizeof(r))
	a := decodeDeviceAttr(&r)
	if a.NodeGUID.String() != "5054:00ff:fe12:3456" {
		t.Errorf("node GUID = %s", a.NodeGUID)
	}
	if a.FWVersion() != "1.2.3" {
		t.Errorf("FW version = %q", a.FWVersion())
	}
	if a.MaxSGE != 32 || a.MaxCQE != 32767 || a.MaxPKeys != 64 || a.LocalCAAckDelay != 15 || a.PhysPortCnt != 1 || a.AtomicCap != AtomicHCA {
		t.Errorf("attr = %+v", a)
	}
	if a.DeviceCapFlags != DeviceSysImageGUID|DeviceAtomicWrite {
		t.Errorf("flags = %v", a.DeviceCapFlags)
	}
	r.ResponseLength = 176 // a kernel that wrote only the base response
	r.DeviceCapFlagsEx = 0
	if a := decodeDeviceAttr(&r); a.DeviceCapFlags != DeviceSysImageGUID {
		t.Errorf("flags without ex = %v", a.DeviceCapFlags)
	}
}
