package nldev

import (
	"github.com/goverbs/rdma"

	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/abi"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// fakeKernel answers NETLINK_RDMA requests the way core/nldev.c does, from a
// small model of devices, so that the request/reply logic is tested without
// an RDMA kernel. It decodes the serialized request bytes, so it also checks
// what the client puts on the wire.
type fakeKernel struct {
	t         *testing.T
	devs      []fakeDev
	netdevs   map[string]uint32 // netdev name -> ifindex
	linkTypes map[string]string // netdev name -> kind, default "veth"
	nextIndex uint32

	noUverbs        bool   // GET_CHARDEV "uverbs" -> EOPNOTSUPP
	interruptGets   int    // mark this many GET dumps NLM_F_DUMP_INTR
	hideNew         int    // GET dumps that omit a device after NEWLINK
	vanishOnPortGet string // drop this device when its ports are asked for
	newlinkErr      error  // forced NEWLINK result
	dellinkErr      error  // forced DELLINK result
	sysAttrs        []tattr
	noReply         bool // doit requests get no reply message

	log []string // one entry per request: command name
}

type fakeDev struct {
	index    uint32
	name     string
	netdev   string
	driverID uint32
	state    rdma.PortState
	phys     rdma.PhysState
	hidden   int // GET dumps that still omit this device
}

func newFakeKernel(t *testing.T) *fakeKernel {
	return &fakeKernel{
		t:         t,
		netdevs:   map[string]uint32{"lo": 1, "eth0": 2, "veth0": 5, "veth1": 6, "vlan7": 9},
		linkTypes: map[string]string{"lo": "device", "vlan7": "vlan"},
		nextIndex: 1,
		sysAttrs:  []tattr{tU8(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1), tU8(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)},
	}
}

func (k *fakeKernel) client() *client {
	return &client{
		exec:        k.exec,
		rdmaLinkAdd: k.newlink,
		netnsMode:   func() (string, error) { return "shared", nil },
		linkType: func(n string) (string, error) {
			if _, ok := k.netdevs[n]; !ok {
				return "", unix.ENODEV
			}
			if t, ok := k.linkTypes[n]; ok {
				return t, nil
			}
			return "veth", nil
		},
		appearTimeout: 300 * time.Millisecond,
		pollInterval:  time.Millisecond,
	}
}

func (k *fakeKernel) add(name, netdev string, driverID uint32) {
	k.devs = append(k.devs, fakeDev{index: k.nextIndex, name: name, netdev: netdev, driverID: driverID,
		state: rdma.PortActive, phys: rdma.PhysLinkUp})
	k.nextIndex++
}

func (k *fakeKernel) find(index uint32) int {
	return slices.IndexFunc(k.devs, func(d fakeDev) bool { return d.index == index })
}

func (k *fakeKernel) count(cmd string) int {
	n := 0
	for _, c := range k.log {
		if c == cmd {
			n++
		}
	}
	return n
}

// decodeRequest splits serialized request bytes into header fields and
// attributes, checking the framing.
func decodeRequest(t *testing.T, b []byte) (typ, flags uint16, as map[uint16][]byte) {
	t.Helper()
	if len(b) < unix.SizeofNlMsghdr || int(binary.NativeEndian.Uint32(b)) != len(b) {
		t.Fatalf("request length field %d for %d bytes", binary.NativeEndian.Uint32(b), len(b))
	}
	typ = binary.NativeEndian.Uint16(b[4:])
	flags = binary.NativeEndian.Uint16(b[6:])
	if flags&unix.NLM_F_REQUEST == 0 {
		t.Errorf("request %#x without NLM_F_REQUEST", typ)
	}
	as = map[uint16][]byte{}
	for p := b[unix.SizeofNlMsghdr:]; len(p) > 0; {
		if len(p) < 4 {
			t.Fatalf("request %#x: %d stray bytes", typ, len(p))
		}
		l := int(binary.NativeEndian.Uint16(p))
		if l < 4 || l > len(p) {
			t.Fatalf("request %#x: attribute length %d", typ, l)
		}
		as[binary.NativeEndian.Uint16(p[2:])] = p[4:l]
		p = p[min((l+3)&^3, len(p)):]
	}
	return typ, flags, as
}

func (k *fakeKernel) exec(req *nl.NetlinkRequest) ([][]byte, error) {
	typ, flags, as := decodeRequest(k.t, req.Serialize())
	u32 := func(t uint16) (uint32, bool) {
		v, ok := as[t]
		if !ok {
			return 0, false
		}
		if len(v) != 4 {
			k.t.Errorf("request %#x: attribute %d has %d bytes, want 4", typ, t, len(v))
		}
		return binary.NativeEndian.Uint32(v), true
	}
	str := func(t uint16) string { return strings.TrimSuffix(string(as[t]), "\x00") }
	dump := flags&unix.NLM_F_DUMP == unix.NLM_F_DUMP

	switch typ {
	case 0x1401: // GET
		k.log = append(k.log, "GET")
		if !dump {
			k.t.Error("GET without NLM_F_DUMP")
		}
		var msgs [][]byte
		for i := range k.devs {
			d := &k.devs[i]
			if d.hidden > 0 {
				d.hidden--
				continue
			}
			msgs = append(msgs, deviceReply(d.index, d.name, d.index%2 == 0))
		}
		if k.interruptGets > 0 {
			k.interruptGets--
			return msgs, nl.ErrDumpInterrupted
		}
		return msgs, nil

	case 0x1405: // PORT_GET
		k.log = append(k.log, "PORT_GET")
		idx, ok := u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX)
		if !ok || !dump {
			return nil, unix.EINVAL
		}
		i := k.find(idx)
		if i < 0 {
			return nil, unix.EINVAL
		}
		d := k.devs[i]
		if d.name == k.vanishOnPortGet {
			k.devs = slices.Delete(k.devs, i, i+1)
			return nil, unix.EINVAL
		}
		return [][]byte{portReply(d.index, 1, d.state, d.phys, d.netdev, k.netdevs[d.netdev])}, nil

	case 0x140f: // GET_CHARDEV
		k.log = append(k.log, "GET_CHARDEV")
		ct := str(abi.RDMA_NLDEV_ATTR_CHARDEV_TYPE)
		idx, perDevice := u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX)
		if perDevice {
			i := k.find(idx)
			if i < 0 {
				return nil, unix.EINVAL
			}
			if ct != "uverbs" || k.noUverbs {
				return nil, unix.EOPNOTSUPP
			}
			if k.noReply {
				return nil, nil
			}
			d := k.devs[i]
			return [][]byte{encodeKernel(
				tU64(abi.RDMA_NLDEV_ATTR_CHARDEV, uint64(192+d.index-1)|231<<8),
				tU64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, 2),
				tStr(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, fmt.Sprintf("uverbs%d", d.index-1)),
				tU32(abi.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, d.driverID),
			)}, nil
		}
		if ct != "rdma_cm" {
			return nil, unix.EOPNOTSUPP
		}
		return [][]byte{encodeKernel(
			tU64(abi.RDMA_NLDEV_ATTR_CHARDEV, 10<<8|58),
			tU64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, 4),
			tStr(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "rdma_cm"),
		)}, nil

	case 0x1406: // SYS_GET
		k.log = append(k.log, "SYS_GET")
		if k.noReply {
			return nil, nil
		}
		return [][]byte{encodeKernel(k.sysAttrs...)}, nil

	case 0x1404: // DELLINK
		k.log = append(k.log, "DELLINK")
		if flags&unix.NLM_F_ACK == 0 {
			k.t.Error("DELLINK without NLM_F_ACK would wait for a reply that never comes")
		}
		if k.dellinkErr != nil {
			return nil, k.dellinkErr
		}
		idx, _ := u32(abi.RDMA_NLDEV_ATTR_DEV_INDEX)
		i := k.find(idx)
		if i < 0 {
			return nil, unix.EINVAL
		}
		k.devs = slices.Delete(k.devs, i, i+1)
		return nil, nil
	}
	k.t.Errorf("unexpected request type %#x", typ)
	return nil, unix.EOPNOTSUPP
}

// newlink plays nldev_newlink + rxe_newlink.
func (k *fakeKernel) newlink(name, linkType, netdev string) error {
	k.log = append(k.log, "NEWLINK")
	if k.newlinkErr != nil {
		return k.newlinkErr
	}
	if linkType != "rxe" {
		return unix.EINVAL
	}
	if _, ok := k.netdevs[netdev]; !ok {
		return unix.ENODEV
	}
	for _, d := range k.devs {
		if d.netdev == netdev {
			return unix.EEXIST
		}
	}
	for _, d := range k.devs {
		if d.name == name {
			return unix.ENFILE
		}
	}
	k.add(name, netdev, abi.RDMA_DRIVER_RXE)
	k.devs[len(k.devs)-1].hidden = k.hideNew
	return nil
}

func TestDevices(t *testing.T) {
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	k.add("mlx5_0", "eth0", 1)
	k.add("odd0", "veth1", 77)
	k.devs[1].state, k.devs[1].phys = rdma.PortDown, rdma.PhysDisabled
	// List out of index order: the result is sorted.
	k.devs[0], k.devs[2] = k.devs[2], k.devs[0]

	devs, err := k.client().devices("")
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3 {
		t.Fatalf("got %d devices, want 3: %+v", len(devs), devs)
	}
	want := []struct {
		name, driver, netdev string
		id                   rdma.DriverID
		ifindex              uint32
		state                rdma.PortState
		phys                 rdma.PhysState
	}{
		{"rxe0", "rxe", "lo", 14, 1, rdma.PortActive, rdma.PhysLinkUp},
		{"mlx5_0", "mlx5", "eth0", 1, 2, rdma.PortDown, rdma.PhysDisabled},
		{"odd0", "driver-77", "veth1", 77, 6, rdma.PortActive, rdma.PhysLinkUp},
	}
	for i, w := range want {
		d := devs[i]
		if d.Index != uint32(i+1) || d.Name != w.name || d.Driver != w.driver || d.DriverID != w.id {
			t.Errorf("device %d: %+v, want %s driver %s (%d)", i, d, w.name, w.driver, w.id)
		}
		if d.NodeGUID.String() != "5054:00ff:fe12:3456" || d.Protocol != "roce" || d.NodeType != 1 {
			t.Errorf("device %d: rdma.GUID %s protocol %q node type %d", i, d.NodeGUID, d.Protocol, d.NodeType)
		}
		wp := Port{Index: 1, State: w.state, PhysState: w.phys, Netdev: w.netdev, NetdevIndex: w.ifindex}
		if len(d.Ports) != 1 || d.Ports[0] != wp {
			t.Errorf("device %s ports %+v, want [%+v]", d.Name, d.Ports, wp)
		}
	}
	if got := k.count("PORT_GET"); got != 3 {
		t.Errorf("%d PORT_GET requests, want one per device", got)
	}
}

func TestDevicesNoUverbs(t *testing.T) {
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	k.noUverbs = true
	devs, err := k.client().devices("")
	if err != nil {
		t.Fatal(err)
	}
	if devs[0].Driver != "" || devs[0].DriverID != 0 || len(devs[0].Ports) != 1 {
		t.Errorf("without ib_uverbs: %+v, want no driver but the port", devs[0])
	}
}

func TestDevicesEmpty(t *testing.T) {
	devs, err := newFakeKernel(t).client().devices("")
	if err != nil || len(devs) != 0 {
		t.Errorf("no devices: %v, %v", devs, err)
	}
}

func TestDevicesDumpInterrupted(t *testing.T) {
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	k.interruptGets = dumpAttempts - 1
	devs, err := k.client().devices("")
	if err != nil || len(devs) != 1 {
		t.Fatalf("after %d interrupted dumps: %v, %v", dumpAttempts-1, devs, err)
	}
	k.interruptGets = dumpAttempts
	_, err = k.client().devices("")
	if !errors.Is(err, nl.ErrDumpInterrupted) {
		t.Errorf("after %d interrupted dumps: %v, want ErrDumpInterrupted", dumpAttempts, err)
	}
}

func TestDevicesVanishing(t *testing.T) {
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	k.add("rxe1", "veth0", 14)
	k.vanishOnPortGet = "rxe0"
	devs, err := k.client().devices("")
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].Name != "rxe1" {
		t.Errorf("got %+v, want only rxe1 after rxe0 went away", devs)
	}
	if k.count("GET") != 2 {
		t.Errorf("%d GET dumps, want a second one after the race", k.count("GET"))
	}
}

func TestDeviceByName(t *testing.T) {
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	k.add("rxe1", "veth0", 14)
	c := k.client()
	d, err := c.deviceByName("rxe1")
	if err != nil || d.Name != "rxe1" || d.Ports[0].Netdev != "veth0" {
		t.Fatalf("rxe1: %+v, %v", d, err)
	}
	if k.count("PORT_GET") != 1 {
		t.Errorf("%d PORT_GET requests, want 1 (only for the device asked for)", k.count("PORT_GET"))
	}
	_, err = c.deviceByName("rxe9")
	if !errors.Is(err, ErrDeviceNotFound) {
		t.Fatalf("unknown device: %v, want ErrDeviceNotFound", err)
	}
	for _, s := range []string{`"rxe9"`, "rdma-link show", "rdma-link add"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q does not mention %s", err, s)
		}
	}
}

func TestLinkAdd(t *testing.T) {
	k := newFakeKernel(t)
	k.hideNew = 3
	c := k.client()
	if err := c.linkAdd("rxe5", "veth0"); err != nil {
		t.Fatal(err)
	}
	if n := k.count("GET"); n != 4 {
		t.Errorf("%d GET dumps, want 4: LinkAdd must wait until the device is listed", n)
	}
	devs, _ := c.devices("")
	if len(devs) != 1 || devs[0].Name != "rxe5" || devs[0].Ports[0].Netdev != "veth0" || devs[0].Driver != "rxe" {
		t.Errorf("after LinkAdd: %+v", devs)
	}

	// Never listed: a wait of at least appearTimeout, then an error.
	k.hideNew = 1 << 30
	start := time.Now()
	err := c.linkAdd("rxe6", "veth1")
	if !errors.Is(err, unix.ETIMEDOUT) || !strings.Contains(err.Error(), "rxe6") {
		t.Errorf("device never listed: %v, want ETIMEDOUT naming rxe6", err)
	}
	if el := time.Since(start); el < c.appearTimeout {
		t.Errorf("gave up after %v, before the %v timeout", el, c.appearTimeout)
	}
}

func TestLinkAddErrors(t *testing.T) {
	tests := []struct {
		name, dev, netdev string
		setup             func(k *fakeKernel)
		kind              error
		errno             unix.Errno
		mention           []string
		noRequest         bool
	}{
		{name: "netdev has rxe", dev: "rxe1", netdev: "lo",
			setup: func(k *fakeKernel) { k.add("rxe0", "lo", 14) },
			kind:  ErrExists, errno: unix.EEXIST, mention: []string{"lo already has an rxe device, rxe0", "rdma-link del rxe0"}},
		{name: "name taken", dev: "rxe0", netdev: "veth0",
			setup: func(k *fakeKernel) { k.add("rxe0", "lo", 14) },
			kind:  ErrExists, errno: unix.ENFILE, mention: []string{"named rxe0 already exists", "rdma-link del rxe0"}},
		{name: "no netdev", dev: "rxe0", netdev: "nosuch0",
			kind: ErrNoNetdev, errno: unix.ENODEV, mention: []string{`"nosuch0"`, "ip link"}},
		{name: "no rxe EINVAL", dev: "rxe0", netdev: "lo",
			setup: func(k *fakeKernel) { k.newlinkErr = unix.EINVAL },
			kind:  ErrNoRXE, errno: unix.EINVAL, mention: []string{"modprobe rdma_rxe", "CONFIG_RDMA_RXE"}},
		{name: "no rxe EOPNOTSUPP", dev: "rxe0", netdev: "lo",
			setup: func(k *fakeKernel) { k.newlinkErr = unix.EOPNOTSUPP },
			kind:  ErrNoRXE, errno: unix.EOPNOTSUPP, mention: []string{"modprobe rdma_rxe"}},
		{name: "no crc32", dev: "rxe0", netdev: "lo",
			setup: func(k *fakeKernel) { k.newlinkErr = unix.ENOENT },
			kind:  ErrNoRXE, errno: unix.ENOENT, mention: []string{"crc32_generic"}},
		{name: "not root", dev: "rxe0", netdev: "lo",
			setup: func(k *fakeKernel) { k.newlinkErr = unix.EPERM },
			kind:  ErrPermission, errno: unix.EPERM, mention: []string{"CAP_NET_ADMIN", "root"}},
		{name: "EACCES", dev: "rxe0", netdev: "lo",
			setup: func(k *fakeKernel) { k.newlinkErr = unix.EACCES },
			kind:  ErrPermission, errno: unix.EACCES},
		{name: "vlan", dev: "rxe0", netdev: "vlan7",
			setup: func(k *fakeKernel) { k.newlinkErr = unix.EPERM },
			errno: unix.EPERM, mention: []string{"VLAN", "parent"}},
		{name: "no RDMA in kernel", dev: "rxe0", netdev: "lo",
			setup: func(k *fakeKernel) { k.newlinkErr = unix.EPROTONOSUPPORT },
			kind:  ErrNoRDMA, errno: unix.EPROTONOSUPPORT, mention: []string{"ib_core"}},
		{name: "empty name", dev: "", netdev: "lo", errno: unix.EINVAL, noRequest: true},
		{name: "template name", dev: "rxe%d", netdev: "lo", errno: unix.EINVAL, noRequest: true, mention: []string{"'%'"}},
		{name: "long name", dev: strings.Repeat("r", 64), netdev: "lo", errno: unix.EINVAL, noRequest: true},
		{name: "empty netdev", dev: "rxe0", netdev: "", errno: unix.EINVAL, noRequest: true},
		{name: "long netdev", dev: "rxe0", netdev: "abcdefghijklmnop", errno: unix.EINVAL, noRequest: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newFakeKernel(t)
			if tt.setup != nil {
				tt.setup(k)
			}
			err := k.client().linkAdd(tt.dev, tt.netdev)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Errorf("not %v", tt.kind)
			}
			if tt.kind == nil {
				for _, s := range []error{ErrExists, ErrNoNetdev, ErrNoRXE, ErrPermission, ErrDeviceNotFound, ErrNoRDMA} {
					if errors.Is(err, s) {
						t.Errorf("unexpectedly %v", s)
					}
				}
			}
			if !errors.Is(err, tt.errno) {
				t.Errorf("does not unwrap to %v", unix.ErrnoName(tt.errno))
			}
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(e.Op, "rdma link add") {
				t.Errorf("not an *Error with the rdma link add op: %#v", err)
			}
			for _, s := range tt.mention {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message does not mention %q", s)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Error("message spans lines")
			}
			if tt.noRequest && k.count("NEWLINK") != 0 {
				t.Error("invalid arguments reached the kernel")
			}
		})
	}
}

func TestLinkDel(t *testing.T) {
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	k.add("rxe1", "veth0", 14)
	c := k.client()
	if err := c.linkDel("rxe1"); err != nil {
		t.Fatal(err)
	}
	if len(k.devs) != 1 || k.devs[0].name != "rxe0" {
		t.Errorf("after LinkDel(rxe1): %+v", k.devs)
	}

	err := c.linkDel("rxe1")
	if !errors.Is(err, ErrDeviceNotFound) || !strings.Contains(err.Error(), "rdma-link show") {
		t.Errorf("deleting a missing device: %v, want ErrDeviceNotFound", err)
	}
	if k.count("DELLINK") != 1 {
		t.Errorf("%d DELLINK requests, want 1: a missing device must not reach DELLINK", k.count("DELLINK"))
	}

	k.dellinkErr = unix.EINVAL // a hardware device: no IBK_ALLOW_USER_UNREG
	err = c.linkDel("rxe0")
	if errors.Is(err, ErrDeviceNotFound) || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "cannot be deleted") {
		t.Errorf("undeletable device: %v", err)
	}
	k.dellinkErr = unix.EPERM
	if err = c.linkDel("rxe0"); !errors.Is(err, ErrPermission) || !errors.Is(err, unix.EPERM) {
		t.Errorf("EPERM: %v, want ErrPermission", err)
	}
	if err = c.linkDel(""); !errors.Is(err, unix.EINVAL) {
		t.Errorf("empty name: %v", err)
	}
}

func TestLinkDelRace(t *testing.T) {
	// The device goes away between the lookup and DELLINK: the kernel
	// says EINVAL, the caller hears ErrDeviceNotFound.
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	c := k.client()
	exec := c.exec
	c.exec = func(req *nl.NetlinkRequest) ([][]byte, error) {
		if req.Type == uint16(nlType(abi.RDMA_NLDEV_CMD_DELLINK)) {
			k.devs = nil
		}
		return exec(req)
	}
	if err := c.linkDel("rxe0"); !errors.Is(err, ErrDeviceNotFound) {
		t.Errorf("device gone before DELLINK: %v, want ErrDeviceNotFound", err)
	}
}

func TestChardev(t *testing.T) {
	k := newFakeKernel(t)
	k.add("rxe0", "lo", 14)
	k.add("rxe1", "veth0", 14)
	c := k.client()
	cd, err := c.chardev(2, false, "uverbs")
	if err != nil {
		t.Fatal(err)
	}
	if cd != (Chardev{Name: "uverbs1", Major: 231, Minor: 193, ABI: 2, DriverID: 14}) || cd.Path() != "/dev/infiniband/uverbs1" {
		t.Errorf("uverbs of device 2: %+v", cd)
	}
	cm, err := c.chardev(0, true, "rdma_cm")
	if err != nil || cm.Name != "rdma_cm" || cm.ABI != 4 || cm.Major != 10 || cm.Minor != 58 {
		t.Errorf("rdma_cm: %+v %v", cm, err)
	}
	_, err = c.chardev(42, false, "uverbs")
	if !errors.Is(err, ErrDeviceNotFound) || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "index 42") {
		t.Errorf("unknown index: %v, want ErrDeviceNotFound", err)
	}
	for _, h := range []struct {
		index   uint32
		global  bool
		typ     string
		mention string
	}{
		{0, true, "nosuch", `"uverbs" (per device)`},
		{0, true, "uverbs", "DeviceChardev"},
		{1, false, "rdma_cm", "GlobalChardev"},
	} {
		_, err = c.chardev(h.index, h.global, h.typ)
		if !errors.Is(err, unix.EOPNOTSUPP) || !strings.Contains(err.Error(), h.mention) {
			t.Errorf("%+v: %v, want EOPNOTSUPP mentioning %s", h, err, h.mention)
		}
	}
	k.noUverbs = true
	if _, err = c.chardev(1, false, "uverbs"); !strings.Contains(err.Error(), "modprobe ib_uverbs") {
		t.Errorf("no ib_uverbs: %v", err)
	}
	k.noUverbs = false
	if _, err = c.chardev(1, false, ""); !errors.Is(err, unix.EINVAL) {
		t.Errorf("empty type: %v", err)
	}
	k.noReply = true
	if _, err = c.chardev(1, false, "uverbs"); err == nil {
		t.Error("no reply message accepted")
	}
}

func TestCopyOnFork(t *testing.T) {
	for _, c := range []struct {
		attrs []tattr
		want  bool
	}{
		{[]tattr{tU8(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1), tU8(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)}, true},
		{[]tattr{tU8(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 0)}, false},
		{[]tattr{tU8(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1)}, false}, // before 5.13
	} {
		k := newFakeKernel(t)
		k.sysAttrs = c.attrs
		got, err := k.client().copyOnFork()
		if err != nil || got != c.want {
			t.Errorf("%v: got %v, %v, want %v", c.attrs, got, err, c.want)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	err := wrap("rdma dev show", unix.EPERM)
	if !errors.Is(err, ErrPermission) || !errors.Is(err, unix.EPERM) {
		t.Errorf("%v: not ErrPermission and EPERM", err)
	}
	want := "rdma dev show: " + rootHint + " (EPERM: operation not permitted)"
	if err.Error() != want {
		t.Errorf("got  %q\nwant %q", err.Error(), want)
	}
	if wrap("x", err) != err {
		t.Error("wrapping an *Error again")
	}
	if wrap("x", nil) != nil {
		t.Error("wrap(nil) != nil")
	}
	plain := wrap("rdma dev show", errors.New("boom"))
	if plain.Error() != "rdma dev show: boom" {
		t.Errorf("plain error: %q", plain.Error())
	}
	kindOnly := &Error{Op: "op", Kind: ErrDeviceNotFound}
	if kindOnly.Error() != "op: no such RDMA device" {
		t.Errorf("kind only: %q", kindOnly.Error())
	}
}
