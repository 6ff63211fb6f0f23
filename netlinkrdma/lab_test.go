package netlinkrdma

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/goverbs/rdma/internal/abi"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/nldev"
	"github.com/goverbs/rdma/internal/testutil"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The device listing checked here against sysfs is internal/nldev's, on
// which uverbs.Devices builds.

// Device tests: they need root and a kernel with rdma_rxe, and run in the
// rxe lab (`make test`). Outside it they skip; inside it they must pass.

func requireLab(t *testing.T) {
	t.Helper()
	testutil.RequireRDMA(t)
	testutil.RequireRoot(t)
}

func readSys(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// eui64 is the rdma.GUID rxe derives from a MAC (addrconf_addr_eui48): flip the
// universal/local bit and put ff:fe in the middle.
func eui64(mac net.HardwareAddr) rdma.GUID {
	b := [8]byte{mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]}
	var g rdma.GUID
	for _, c := range b {
		g = g<<8 | rdma.GUID(c)
	}
	return g
}

// checkAgainstSysfs compares a device from Devices with sysfs.
func checkAgainstSysfs(t *testing.T, d nldev.Device) {
	t.Helper()
	dir := "/sys/class/infiniband/" + d.Name
	if got := readSys(t, dir+"/node_guid"); got != d.NodeGUID.String() {
		t.Errorf("%s: sysfs node_guid %s, netlink %s", d.Name, got, d.NodeGUID)
	}
	if got := readSys(t, dir+"/sys_image_guid"); got != d.SysImageGUID.String() {
		t.Errorf("%s: sysfs sys_image_guid %s, netlink %s", d.Name, got, d.SysImageGUID)
	}
	// Only rxe has the parent attribute (kernel: sw/rxe/rxe_verbs.c
	// parent_show); siw's netdev shows in netlink alone.
	if d.Driver == "rxe" {
		if got := readSys(t, dir+"/parent"); len(d.Ports) != 1 || got != d.Ports[0].Netdev {
			t.Errorf("%s: sysfs parent %q, netlink ports %+v", d.Name, got, d.Ports)
		}
	}
	for _, p := range d.Ports {
		// "4: ACTIVE", "5: LinkUp"
		pdir := fmt.Sprintf("%s/ports/%d/", dir, p.Index)
		if got := readSys(t, pdir+"state"); !strings.HasPrefix(got, strconv.Itoa(int(p.State))+":") {
			t.Errorf("%s/%d: sysfs state %q, netlink %d (%s)", d.Name, p.Index, got, p.State, p.State)
		}
		if got := readSys(t, pdir+"phys_state"); !strings.HasPrefix(got, strconv.Itoa(int(p.PhysState))+":") {
			t.Errorf("%s/%d: sysfs phys_state %q, netlink %d (%s)", d.Name, p.Index, got, p.PhysState, p.PhysState)
		}
	}
	// siw is iWARP: protocol "iw" (kernel: drivers/infiniband/core/nldev.c
	// fill_dev_info) and node type RDMA_NODE_RNIC (4).
	switch {
	case d.Driver == "rxe" && d.DriverID == abi.RDMA_DRIVER_RXE && d.Protocol == "roce" && d.NodeType == 1:
	case d.Driver == "siw" && d.DriverID == abi.RDMA_DRIVER_SIW && d.Protocol == "iw" && d.NodeType == 4:
	default:
		t.Errorf("%s: driver %q (%d) protocol %q node type %d, want rxe (14) roce 1 or siw (%d) iw 4",
			d.Name, d.Driver, d.DriverID, d.Protocol, d.NodeType, abi.RDMA_DRIVER_SIW)
	}
	if len(d.Ports) == 1 {
		l, err := netlink.LinkByName(d.Ports[0].Netdev)
		if err != nil {
			t.Fatal(err)
		}
		if int(d.Ports[0].NetdevIndex) != l.Attrs().Index {
			t.Errorf("%s: netdev %s ifindex %d, netlink says %d", d.Name, l.Attrs().Name, l.Attrs().Index, d.Ports[0].NetdevIndex)
		}
		if mac := l.Attrs().HardwareAddr; len(mac) == 6 && d.NodeGUID != eui64(mac) {
			t.Errorf("%s: node rdma.GUID %s, want EUI-64 of %s = %s", d.Name, d.NodeGUID, mac, eui64(mac))
		}
	}
}

func TestLabDevices(t *testing.T) {
	requireLab(t)
	lo := testutil.LoopbackDevice(t)
	veth := testutil.VethPair(t)
	// siw1/siw2 where the lab has them (amd64 guests); the lab's own
	// tests (test/rxelab TestSiw) require them there.
	siw, haveSiw := testutil.LabSiw()
	devs, err := nldev.Devices()
	if err != nil {
		t.Fatal(err)
	}
	type dev struct{ netdev, driver string }
	want := map[string]dev{lo: {"lo", "rxe"}}
	for _, e := range veth {
		want[e.Device] = dev{e.Netdev, "rxe"}
	}
	if haveSiw {
		for _, e := range siw {
			want[e.Device] = dev{e.Netdev, "siw"}
		}
	}
	for _, d := range devs {
		t.Logf("%s index %d guid %s driver %s ports %+v", d.Name, d.Index, d.NodeGUID, d.Driver, d.Ports)
		w, ok := want[d.Name]
		if !ok {
			continue
		}
		delete(want, d.Name)
		if d.Driver != w.driver {
			t.Errorf("%s: driver %q, want %q", d.Name, d.Driver, w.driver)
		}
		if len(d.Ports) != 1 || d.Ports[0].Index != 1 || d.Ports[0].Netdev != w.netdev {
			t.Errorf("%s: ports %+v, want port 1 on %s", d.Name, d.Ports, w.netdev)
		}
		if d.Ports[0].State != rdma.PortActive || d.Ports[0].PhysState != rdma.PhysLinkUp {
			t.Errorf("%s: port %s/%s, want ACTIVE/LINK_UP", d.Name, d.Ports[0].State, d.Ports[0].PhysState)
		}
		checkAgainstSysfs(t, d)
		one, err := nldev.DeviceByName(d.Name)
		if err != nil || one.Index != d.Index || one.NodeGUID != d.NodeGUID {
			t.Errorf("nldev.DeviceByName(%s) = %+v, %v", d.Name, one, err)
		}
	}
	if len(want) != 0 {
		t.Errorf("lab devices missing from nldev.Devices(): %v", want)
	}
	_, err = nldev.DeviceByName("gvnosuch0")
	if !errors.Is(err, nldev.ErrDeviceNotFound) {
		t.Errorf("nldev.DeviceByName(gvnosuch0): %v, want ErrDeviceNotFound", err)
	}
}

func TestLabChardev(t *testing.T) {
	requireLab(t)
	d, err := nldev.DeviceByName(testutil.LoopbackDevice(t))
	if err != nil {
		t.Fatal(err)
	}
	cd, err := DeviceChardev(d.Index, "uverbs")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %+v", d.Name, cd)
	if !strings.HasPrefix(cd.Name, "uverbs") || cd.ABI != 2 || cd.DriverID != abi.RDMA_DRIVER_RXE {
		t.Errorf("uverbs char device %+v, want uverbsN, ABI 2, driver id 14", cd)
	}
	checkNode(t, cd)
	if got := readSys(t, "/sys/class/infiniband_verbs/"+cd.Name+"/ibdev"); got != d.Name {
		t.Errorf("sysfs %s/ibdev = %q, want %q", cd.Name, got, d.Name)
	}
	if got := readSys(t, "/sys/class/infiniband_verbs/"+cd.Name+"/abi_version"); got != strconv.FormatUint(cd.ABI, 10) {
		t.Errorf("sysfs %s/abi_version = %q, netlink ABI %d", cd.Name, got, cd.ABI)
	}

	cm, err := GlobalChardev("rdma_cm")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rdma_cm: %+v", cm)
	if cm.Name != "rdma_cm" || cm.ABI != 4 {
		t.Errorf("rdma_cm char device %+v, want rdma_cm ABI 4", cm)
	}
	checkNode(t, cm)

	var last uint32
	devs, err := nldev.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		last = max(last, d.Index)
	}
	_, err = DeviceChardev(last+100, "uverbs")
	if !errors.Is(err, ErrDeviceNotFound) {
		t.Errorf("DeviceChardev(unknown index): %v, want ErrDeviceNotFound", err)
	}
}

// checkNode checks that /dev/infiniband/<name> is the char device netlink named.
func checkNode(t *testing.T, cd Chardev) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(cd.Path(), &st); err != nil {
		t.Fatalf("%s: %v", cd.Path(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != cd.Dev() {
		t.Errorf("%s: mode %o rdev %d:%d, netlink says %d:%d", cd.Path(), st.Mode,
			unix.Major(st.Rdev), unix.Minor(st.Rdev), cd.Major, cd.Minor)
	}
}

func TestLabSystem(t *testing.T) {
	requireLab(t)
	// Kernels from 5.13 on copy on fork; 5.10 sends no attribute
	// (docs/kernel-behaviour.md §5).
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	want := major > 5 || (major == 5 && minor >= 13)
	cow, err := CopyOnFork()
	if err != nil || cow != want {
		t.Errorf("CopyOnFork() = %v, %v on %d.%d; want %v: kernels from 5.13 on copy on fork", cow, err, major, minor, want)
	}
	mode, err := NetnsMode()
	if err != nil || mode != "shared" {
		t.Errorf("NetnsMode() = %q, %v; want the default, shared", mode, err)
	}
}

// addVeth creates a veth pair for the test and removes it at cleanup.
func addVeth(t *testing.T, a, b string) {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("ip link add %s type veth peer name %s: %v", a, b, err)
	}
	t.Cleanup(func() {
		if err := netlink.LinkDel(veth); err != nil {
			t.Errorf("ip link del %s: %v", a, err)
		}
	})
	for _, n := range []string{a, b} {
		l, err := netlink.LinkByName(n)
		if err == nil {
			err = netlink.LinkSetUp(l)
		}
		if err != nil {
			t.Fatalf("ip link set %s up: %v", n, err)
		}
	}
}

// delOnCleanup removes an RDMA link at the end of the test if it still exists.
func delOnCleanup(t *testing.T, name string) {
	t.Cleanup(func() {
		if err := LinkDel(name); err != nil && !errors.Is(err, ErrDeviceNotFound) {
			t.Errorf("cleanup: %v", err)
		}
	})
}

func TestLabLinkAddDel(t *testing.T) {
	requireLab(t)
	addVeth(t, "gvnl0a", "gvnl0b")

	// Ours, seen by iproute2 and rdma-core.
	delOnCleanup(t, "gvrxe0")
	if err := LinkAdd("gvrxe0", "gvnl0a"); err != nil {
		t.Fatal(err)
	}
	d, err := nldev.DeviceByName("gvrxe0")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Ports) != 1 || d.Ports[0].Netdev != "gvnl0a" || d.Driver != "rxe" {
		t.Errorf("gvrxe0: %+v, want one port on gvnl0a, driver rxe", d)
	}
	checkAgainstSysfs(t, d)
	if out := testutil.RunTool(t, "rdma", "link", "show"); !strings.Contains(out, "link gvrxe0/1 ") || !strings.Contains(out, "netdev gvnl0a") {
		t.Errorf("`rdma link show` does not list gvrxe0 on gvnl0a:\n%s", out)
	}
	if out := testutil.RunTool(t, "ibv_devices"); !strings.Contains(out, "gvrxe0") {
		t.Errorf("ibv_devices does not list gvrxe0:\n%s", out)
	}

	// Errors the user can act on.
	err = LinkAdd("gvrxe1", "gvnl0a")
	if !errors.Is(err, ErrExists) || !errors.Is(err, unix.EEXIST) || !strings.Contains(err.Error(), "gvrxe0") {
		t.Errorf("second rxe on gvnl0a: %v, want ErrExists naming gvrxe0", err)
	}
	err = LinkAdd("gvrxe0", "gvnl0b")
	if !errors.Is(err, ErrExists) {
		t.Errorf("rxe named like an existing one: %v, want ErrExists", err)
	}
	err = LinkAdd("gvrxe1", "gvnosuch0")
	if !errors.Is(err, ErrNoNetdev) || !errors.Is(err, unix.ENODEV) {
		t.Errorf("rxe on a missing netdev: %v, want ErrNoNetdev", err)
	}
	if _, err := nldev.DeviceByName("gvrxe1"); !errors.Is(err, nldev.ErrDeviceNotFound) {
		t.Errorf("a failed LinkAdd left gvrxe1 behind: %v", err)
	}

	// iproute2's, seen by us.
	delOnCleanup(t, "gvrxe2")
	testutil.RunTool(t, "rdma", "link", "add", "gvrxe2", "type", "rxe", "netdev", "gvnl0b")
	d2, err := nldev.DeviceByName("gvrxe2")
	if err != nil {
		t.Fatal(err)
	}
	if len(d2.Ports) != 1 || d2.Ports[0].Netdev != "gvnl0b" || d2.Driver != "rxe" {
		t.Errorf("gvrxe2: %+v, want one port on gvnl0b, driver rxe", d2)
	}

	for _, name := range []string{"gvrxe0", "gvrxe2"} {
		if err := LinkDel(name); err != nil {
			t.Fatalf("LinkDel(%s): %v", name, err)
		}
		if _, err := nldev.DeviceByName(name); !errors.Is(err, nldev.ErrDeviceNotFound) {
			t.Errorf("%s still listed after LinkDel: %v", name, err)
		}
	}
	if out := testutil.RunTool(t, "rdma", "link", "show"); strings.Contains(out, "gvrxe") {
		t.Errorf("`rdma link show` still lists deleted links:\n%s", out)
	}
	if err := LinkDel("gvrxe0"); !errors.Is(err, ErrDeviceNotFound) {
		t.Errorf("LinkDel of a deleted device: %v, want ErrDeviceNotFound", err)
	}
}
