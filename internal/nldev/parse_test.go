package nldev

import (
	"github.com/goverbs/rdma"

	"encoding/binary"
	"testing"

	"github.com/goverbs/rdma/internal/abi"

	"golang.org/x/sys/unix"
)

// rxe0 on a netdev with MAC 52:54:00:12:34:56: node rdma.GUID EUI-64
// 50:54:00:ff:fe:12:34:56, which the kernel sends as be64_to_cpu() of it.
const rxeGUID = 0x505400fffe123456

func deviceReply(index uint32, name string, withPads bool) []byte {
	as := []tattr{
		tU32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, index),
		tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, name),
		tU32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1),
		tU64(4 /* CAP_FLAGS */, 0x1234),
		tStr(abi.RDMA_NLDEV_ATTR_FW_VERSION, "0.0.0"),
		tU64(abi.RDMA_NLDEV_ATTR_NODE_GUID, rxeGUID),
		tU64(abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, rxeGUID),
		tU8(abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1),
		tU8(84 /* DEV_DIM */, 0),
		tStr(abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce"),
	}
	if withPads {
		return encodeKernel(as...)
	}
	return encodeAttrs(as...)
}

func TestParseDevice(t *testing.T) {
	for _, pads := range []bool{false, true} {
		b := deviceReply(3, "rxe0", pads)
		if pads && len(b) == len(deviceReply(3, "rxe0", false)) {
			t.Fatal("test encoder put no pad attribute")
		}
		d, err := parseDevice(b)
		if err != nil {
			t.Fatalf("pads=%v: %v", pads, err)
		}
		want := Device{Index: 3, Name: "rxe0", NodeGUID: rxeGUID, SysImageGUID: rxeGUID,
			FirmwareVersion: "0.0.0", NodeType: 1, Protocol: "roce"}
		if d.Index != want.Index || d.Name != want.Name || d.NodeGUID != want.NodeGUID ||
			d.SysImageGUID != want.SysImageGUID || d.FirmwareVersion != want.FirmwareVersion ||
			d.NodeType != want.NodeType || d.Protocol != want.Protocol {
			t.Errorf("pads=%v: got %+v, want %+v", pads, d, want)
		}
		if got := d.NodeGUID.String(); got != "5054:00ff:fe12:3456" {
			t.Errorf("NodeGUID.String() = %q, want sysfs form 5054:00ff:fe12:3456", got)
		}
	}
}

func TestParseDeviceMissingAttrs(t *testing.T) {
	// Only the index and name are required; the rest defaults to zero
	// (FW_VERSION is absent when the driver has none).
	d, err := parseDevice(encodeAttrs(tU32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 9), tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, "x")))
	if err != nil || d.Index != 9 || d.Name != "x" || d.FirmwareVersion != "" || d.NodeGUID != 0 {
		t.Errorf("minimal reply: %+v, %v", d, err)
	}
	if _, err := parseDevice(encodeAttrs(tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, "x"))); err == nil {
		t.Error("reply without DEV_INDEX accepted")
	}
	if _, err := parseDevice(encodeAttrs(tU32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 1))); err == nil {
		t.Error("reply without DEV_NAME accepted")
	}
}

func TestParseMalformed(t *testing.T) {
	good := encodeAttrs(tU32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 1), tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0"))
	// An attribute whose length runs past the end of the message.
	bad := append([]byte{}, good...)
	binary.NativeEndian.PutUint16(bad[8:], 200)
	if _, err := parseDevice(bad); err == nil {
		t.Error("attribute longer than the message accepted")
	}
	// A length below the 4-byte header.
	bad = append([]byte{}, good...)
	binary.NativeEndian.PutUint16(bad[0:], 2)
	if _, err := parseDevice(bad); err == nil {
		t.Error("attribute length 2 accepted")
	}
	// A u32 attribute carrying 2 bytes.
	short := encodeAttrs(tattr{abi.RDMA_NLDEV_ATTR_DEV_INDEX, []byte{1, 0}}, tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0"))
	if _, err := parseDevice(short); err == nil {
		t.Error("2-byte DEV_INDEX accepted")
	}
	// A u64 rdma.GUID carrying 4 bytes.
	short = encodeAttrs(tU32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 1), tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0"),
		tU32(abi.RDMA_NLDEV_ATTR_NODE_GUID, 5))
	if _, err := parseDevice(short); err == nil {
		t.Error("4-byte NODE_GUID accepted")
	}
	// Trailing bytes shorter than an attribute header are ignored, as the
	// kernel's nla_for_each_attr does.
	if _, err := parseDevice(append(good, 0, 0)); err != nil {
		t.Errorf("2 trailing bytes: %v", err)
	}
}

func TestParseAttrsFlagsAndPad(t *testing.T) {
	const nested = 1 << 15 // NLA_F_NESTED
	b := encodeAttrs(
		tPad(),
		tattr{abi.RDMA_NLDEV_ATTR_DEV_INDEX | nested, binary.NativeEndian.AppendUint32(nil, 5)},
		tattr{16 | nested /* RES_SUMMARY_ENTRY, a nested table */, encodeAttrs(tStr(17, "qp"), tU64(18, 3))},
		tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, "siw0"),
	)
	a, err := parseAttrs(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.has(abi.RDMA_NLDEV_ATTR_PAD) {
		t.Error("pad attribute (type 0) kept")
	}
	if v, _ := a.u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX); v != 5 {
		t.Errorf("DEV_INDEX with NLA_F_NESTED set: got %d, want 5", v)
	}
	inner, err := parseAttrs(a[16])
	if err != nil || inner.str(17) != "qp" {
		t.Errorf("nested attribute: %v %q", err, inner.str(17))
	}
	if v, _ := inner.u64(18); v != 3 {
		t.Errorf("nested u64 = %d, want 3", v)
	}
	if a.str(abi.RDMA_NLDEV_ATTR_DEV_NAME) != "siw0" {
		t.Errorf("attribute after a nested one: %q", a.str(abi.RDMA_NLDEV_ATTR_DEV_NAME))
	}
	// A string without its NUL is taken whole.
	a, _ = parseAttrs(encodeAttrs(tattr{abi.RDMA_NLDEV_ATTR_DEV_NAME, []byte("abc")}))
	if a.str(abi.RDMA_NLDEV_ATTR_DEV_NAME) != "abc" {
		t.Errorf("unterminated string: %q", a.str(abi.RDMA_NLDEV_ATTR_DEV_NAME))
	}
}

func portReply(dev, port uint32, state rdma.PortState, phys rdma.PhysState, netdev string, ifindex uint32) []byte {
	as := []tattr{
		tU32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, dev),
		tStr(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0"),
		tU32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, port),
		tU8(abi.RDMA_NLDEV_ATTR_PORT_STATE, uint8(state)),
		tU8(abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE, uint8(phys)),
	}
	if netdev != "" {
		as = append(as, tU32(abi.RDMA_NLDEV_ATTR_NDEV_INDEX, ifindex), tStr(abi.RDMA_NLDEV_ATTR_NDEV_NAME, netdev))
	}
	return encodeKernel(as...)
}

func TestParsePort(t *testing.T) {
	p, dev, err := parsePort(portReply(3, 1, rdma.PortActive, rdma.PhysLinkUp, "veth0", 12))
	if err != nil {
		t.Fatal(err)
	}
	want := Port{Index: 1, State: rdma.PortActive, PhysState: rdma.PhysLinkUp, Netdev: "veth0", NetdevIndex: 12}
	if dev != 3 || p != want {
		t.Errorf("got dev %d %+v, want dev 3 %+v", dev, p, want)
	}
	// The kernel omits the netdev when it lives in another namespace.
	p, _, err = parsePort(portReply(3, 1, rdma.PortDown, rdma.PhysDisabled, "", 0))
	if err != nil || p.Netdev != "" || p.NetdevIndex != 0 || p.State != rdma.PortDown {
		t.Errorf("port without netdev: %+v %v", p, err)
	}
	if _, _, err := parsePort(encodeAttrs(tU32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 3))); err == nil {
		t.Error("port reply without PORT_INDEX accepted")
	}
}

func TestParseChardev(t *testing.T) {
	// uverbs0 = 231:192 (IB_UVERBS_MAJOR, IB_UVERBS_BASE_MINOR); a dynamic
	// major with a minor above 255 checks the huge_encode_dev layout:
	// (minor & 0xff) | major<<8 | (minor & ~0xff)<<12.
	huge := func(major, minor uint64) uint64 { return minor&0xff | major<<8 | (minor&^0xff)<<12 }
	for _, c := range []struct {
		major, minor uint32
		pads         bool
		driverID     tattr
	}{
		{231, 192, false, tU32(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 14)},
		{511, 0x12345, true, tU32(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 14)},
		// The header comments the driver id as u64; accept that width too.
		{231, 193, true, tU64(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 14)},
	} {
		as := []tattr{
			tU64(abi.RDMA_NLDEV_ATTR_CHARDEV, huge(uint64(c.major), uint64(c.minor))),
			tU64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, 2),
			tStr(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs0"),
			c.driverID,
		}
		var b []byte
		if c.pads {
			b = encodeKernel(as...)
		} else {
			b = encodeAttrs(as...)
		}
		cd, err := parseChardev(b)
		if err != nil {
			t.Fatal(err)
		}
		want := Chardev{Name: "uverbs0", Major: c.major, Minor: c.minor, ABI: 2, DriverID: 14}
		if cd != want {
			t.Errorf("got %+v, want %+v", cd, want)
		}
		if cd.Dev() != unix.Mkdev(c.major, c.minor) || unix.Major(cd.Dev()) != c.major || unix.Minor(cd.Dev()) != c.minor {
			t.Errorf("Dev() = %#x does not round-trip %d:%d", cd.Dev(), c.major, c.minor)
		}
	}
	// rdma_cm: no driver id.
	cd, err := parseChardev(encodeAttrs(tU64(abi.RDMA_NLDEV_ATTR_CHARDEV, 10<<8|58),
		tU64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, 4), tStr(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "rdma_cm")))
	if err != nil || cd != (Chardev{Name: "rdma_cm", Major: 10, Minor: 58, ABI: 4}) || cd.Path() != "/dev/infiniband/rdma_cm" {
		t.Errorf("rdma_cm: %+v %v", cd, err)
	}
	if _, err := parseChardev(encodeAttrs(tU64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, 4))); err == nil {
		t.Error("char device reply without name accepted")
	}
}
