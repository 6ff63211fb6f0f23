package uverbs

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/testutil"
)

// openLoopback opens the lab's rxe device on lo and closes it at the end of
// the test.
func openLoopback(t testing.TB) *Device {
	t.Helper()
	name := testutil.LoopbackDevice(t)
	c, err := Open(name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	return c
}

// Netlink discovery finds the same devices, char devices and netdevs as the
// sysfs fallback, and the driver id and ABI of rxe.
func TestDevicesNetlinkMatchesSysfs(t *testing.T) {
	testutil.RequireRDMA(t)
	nl, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := sysfsDevices()
	if err != nil {
		t.Fatal(err)
	}
	if len(nl) != len(fs) {
		t.Fatalf("netlink found %d devices, sysfs %d", len(nl), len(fs))
	}
	byName := map[string]DeviceInfo{}
	for _, d := range fs {
		byName[d.Name] = d
	}
	for _, d := range nl {
		if d.Source != "netlink" {
			t.Errorf("%s: source %q, want netlink", d.Name, d.Source)
		}
		s, ok := byName[d.Name]
		if !ok {
			t.Errorf("%s: found by netlink only", d.Name)
			continue
		}
		// sysfs names rxe's driver and netdev only (the parent attribute,
		// the RoCE GID's netdev): for the lab's siw devices (iWARP: no
		// parent, no GID netdevs) it has neither.
		noDriver := d.DriverID == DriverSIW && s.DriverID == DriverUnknown
		if d.Uverbs != s.Uverbs || d.Path != s.Path || d.NodeGUID != s.NodeGUID || d.SysImageGUID != s.SysImageGUID ||
			d.NodeType != s.NodeType || d.ABIVersion != s.ABIVersion || (d.DriverID != s.DriverID && !noDriver) {
			t.Errorf("%s: netlink %+v\nsysfs %+v", d.Name, d, s)
		}
		if len(d.Ports) != len(s.Ports) {
			t.Errorf("%s: %d ports by netlink, %d by sysfs", d.Name, len(d.Ports), len(s.Ports))
			continue
		}
		for i := range d.Ports {
			sp := s.Ports[i]
			if noDriver && sp.Netdev == "" && sp.NetdevIndex == 0 {
				sp.Netdev, sp.NetdevIndex = d.Ports[i].Netdev, d.Ports[i].NetdevIndex
			}
			if d.Ports[i] != sp {
				t.Errorf("%s port: netlink %+v, sysfs %+v", d.Name, d.Ports[i], s.Ports[i])
			}
		}
		if _, err := os.Stat(d.Path); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}
	lo := byName[testutil.LoopbackDevice(t)]
	if lo.DriverID != DriverRXE || lo.Driver != "rxe" || lo.ABIVersion != 2 {
		t.Errorf("loopback device driver %q (%d), ABI %d; want rxe (14), 2", lo.Driver, lo.DriverID, lo.ABIVersion)
	}
	if len(lo.Ports) != 1 || lo.Ports[0].Netdev != "lo" || lo.Ports[0].NetdevIndex != 1 {
		t.Errorf("loopback device ports = %+v, want port 1 on lo", lo.Ports)
	}
}

func TestOpenClose(t *testing.T) { eachLabDeviceName(t, testOpenClose) }

func testOpenClose(t *testing.T, name string) {
	c, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != name || c.NumCompVectors() < 1 {
		t.Errorf("name %q, %d completion vectors", c.Name(), c.NumCompVectors())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Query(); !errors.Is(err, ErrClosed) {
		t.Errorf("QueryDevice after Close: %v, want ErrClosed", err)
	}
	if _, err := c.QueryPort(1); !errors.Is(err, ErrClosed) {
		t.Errorf("QueryPort after Close: %v, want ErrClosed", err)
	}
	if _, err := c.NextEvent(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("NextEvent after Close: %v, want ErrClosed", err)
	}
}

func TestOpenUnknownName(t *testing.T) {
	testutil.RequireRDMA(t)
	_, err := Open("no_such_dev0")
	var nf *DeviceNotFoundError
	if !errors.As(err, &nf) || len(nf.Available) == 0 {
		t.Fatalf("err = %v, want a DeviceNotFoundError listing the devices", err)
	}
	if !strings.Contains(err.Error(), testutil.LoopbackDevice(t)) {
		t.Errorf("message does not list the lab device: %v", err)
	}
}

// The rxe limits of docs/abi.md §3.16 and the identity discovery found.
func TestQueryDevice(t *testing.T) {
	c := openLoopback(t)
	a, err := c.Query()
	if err != nil {
		t.Fatal(err)
	}
	dev := c.Info()
	if a.NodeGUID != dev.NodeGUID || a.SysImageGUID != dev.SysImageGUID {
		t.Errorf("GUIDs %v/%v, discovery %v/%v", a.NodeGUID, a.SysImageGUID, dev.NodeGUID, dev.SysImageGUID)
	}
	s, err := readString(filepath.Join("/sys/class/infiniband", dev.Name, "node_guid"))
	if err != nil || a.NodeGUID.String() != s {
		t.Errorf("node GUID %s, sysfs %q (%v)", a.NodeGUID, s, err)
	}
	// rxe's limits (kernel: sw/rxe/rxe_param.h) were raised after 5.10:
	// 5.10 has 16384 WRs, CQs and SRQ WRs, 100 AHs and 1 P_Key, 6.1 and
	// later 1 << 20, 32767 and 64 (docs/kernel-behaviour.md §5; nothing
	// between was tried).
	maxWR, maxAH, maxPKeys := 1<<20, 32767, 64
	if !kernelAtLeast(t, 6, 1) {
		maxWR, maxAH, maxPKeys = 16384, 100, 1
	}
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"phys_port_cnt", a.PhysPortCnt, 1},
		{"max_qp_wr", a.MaxQPWR, maxWR},
		{"max_sge", a.MaxSGE, 32},
		{"max_sge_rd", a.MaxSGERD, 32},
		{"max_cq", a.MaxCQ, maxWR},
		{"max_cqe", a.MaxCQE, 32767},
		{"max_qp_rd_atom", a.MaxQPRDAtom, 128},
		{"max_qp_init_rd_atom", a.MaxQPInitRDAtom, 128},
		{"max_srq_wr", a.MaxSRQWR, maxWR},
		{"max_srq_sge", a.MaxSRQSGE, 27},
		{"max_ah", a.MaxAH, maxAH},
		{"max_pkeys", a.MaxPKeys, maxPKeys},
		{"local_ca_ack_delay", int(a.LocalCAAckDelay), 15},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if a.AtomicCap != AtomicHCA || a.MaxMRSize != ^uint64(0) || a.PageSizeCap != 0xfffff000 {
		t.Errorf("atomic %v, max_mr_size %#x, page_size_cap %#x", a.AtomicCap, a.MaxMRSize, a.PageSizeCap)
	}
	if a.DeviceCapFlags&DeviceSysImageGUID == 0 || a.DeviceCapFlags&DeviceMemMgtExtensions == 0 {
		t.Errorf("capability flags %v lack SYS_IMAGE_GUID or MEM_MGT_EXTENSIONS", a.DeviceCapFlags)
	}
	// Kernel 6.2+ rxe reports FLUSH and ATOMIC_WRITE above bit 31, which
	// only the extended query carries (docs/abi.md §3.16).
	var uts unix.Utsname
	unix.Uname(&uts)
	release := unix.ByteSliceToString(uts.Release[:])
	if strings.HasPrefix(release, "6.12") && a.DeviceCapFlags&DeviceAtomicWrite == 0 {
		t.Errorf("kernel %s: capability flags %v lack ATOMIC_WRITE", release, a.DeviceCapFlags)
	}
	if strings.HasPrefix(release, "6.1.") && a.DeviceCapFlags>>32 != 0 {
		t.Errorf("kernel %s: unexpected high capability bits in %v", release, a.DeviceCapFlags)
	}
}

// Both transports of QUERY_PORT agree; the ioctl one adds port_cap_flags2.
func TestQueryPortTransports(t *testing.T) {
	c := openLoopback(t)
	viaIoctl, err := c.queryPortIoctl(1)
	if err != nil {
		t.Fatalf("ioctl QUERY_PORT: %v", err)
	}
	viaWrite, err := c.queryPortWrite(1)
	if err != nil {
		t.Fatalf("write QUERY_PORT: %v", err)
	}
	if !viaIoctl.HaveCapFlags2 || viaWrite.HaveCapFlags2 {
		t.Error("HaveCapFlags2 wrong")
	}
	viaIoctl.HaveCapFlags2, viaIoctl.PortCapFlags2 = false, 0
	if viaIoctl != viaWrite {
		t.Errorf("ioctl %+v\nwrite %+v", viaIoctl, viaWrite)
	}
	a, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	if a.State != PortActive || a.PhysState != PhysLinkUp || a.LinkLayer != LinkLayerEthernet || a.MaxMTU != MTU4096 ||
		a.GIDTableLen != 1024 || a.PKeyTableLen != 1 || a.LID != 0 || !a.GRHRequired() || a.PortCapFlags&PortCapCMSupported == 0 {
		t.Errorf("port = %+v", a)
	}
	if _, err := c.QueryPort(2); !errors.Is(err, unix.EINVAL) {
		t.Errorf("port 2: err = %v, want EINVAL", err)
	}
	if _, err := c.QueryPort(0); err == nil {
		t.Error("port 0 accepted")
	}
}

// The GID table through the ioctl ABI equals the sysfs view; on the lab's
// lo device index 1 is ::ffff:127.0.0.1 (docs/testing.md §3).
func TestGIDs(t *testing.T) {
	c := openLoopback(t)
	gids, err := c.GIDs(1)
	if err != nil {
		t.Fatal(err)
	}
	if c.gidPath.v.Load() != choiceIoctl {
		t.Errorf("GID table was not read through the ioctl ABI")
	}
	fromSysfs, err := c.gidsSysfs(1, 1024, LinkLayerEthernet)
	if err != nil {
		t.Fatal(err)
	}
	if len(gids) == 0 || len(gids) != len(fromSysfs) {
		t.Fatalf("ioctl: %d GIDs, sysfs: %d", len(gids), len(fromSysfs))
	}
	for i := range gids {
		if gids[i] != fromSysfs[i] {
			t.Errorf("ioctl %+v\nsysfs %+v", gids[i], fromSysfs[i])
		}
	}
	for _, g := range gids {
		if g.Type != GIDTypeRoCEv2 || g.Port != 1 || g.Netdev != "lo" || g.NetdevIndex != 1 || g.GID.IsZero() {
			t.Errorf("entry %+v", g)
		}
	}

	e, err := c.QueryGID(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if e.GID.String() != "::ffff:127.0.0.1" || e.Type != GIDTypeRoCEv2 || e.Index != 1 {
		t.Errorf("GID 1 = %+v (%s)", e, e.GID)
	}
	idx, err := c.GIDIndexForIP(1, netip.MustParseAddr("127.0.0.1"))
	if err != nil || idx != 1 {
		t.Errorf("GIDIndexForIP(127.0.0.1) = %d, %v; want 1", idx, err)
	}
	if _, err := c.GIDIndexForIP(1, netip.MustParseAddr("192.0.2.99")); err == nil || !strings.Contains(err.Error(), "(lo)") {
		t.Errorf("GIDIndexForIP of an absent address: %v", err)
	}
	if _, err := c.QueryGID(1, 1023); !errors.Is(err, unix.ENODATA) {
		t.Errorf("empty entry: err = %v, want ENODATA", err)
	}
	if _, err := c.queryGIDSysfs(1, 1023, LinkLayerEthernet); !errors.Is(err, unix.ENODATA) {
		t.Errorf("empty entry through sysfs: err = %v, want ENODATA", err)
	}
}

// The kernel checks the driver id in every ioctl header
// (kernel: core/uverbs_ioctl.c): a wrong one is refused with EINVAL, so
// the id discovery found is really the one sent.
func TestIoctlDriverIDChecked(t *testing.T) {
	c := openLoopback(t)
	var resp [48]byte
	attrs := []ioctlAttr{attrConst(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1), attrOut(abi.UVERBS_ATTR_QUERY_PORT_RESP, resp[:])}
	err := c.ioctl("query_port", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT, attrs...)
	if err != nil {
		t.Fatalf("with the discovered driver id: %v", err)
	}
	if !attrs[1].valid {
		t.Error("the kernel did not mark the response VALID_OUTPUT")
	}
	c.mu.RLock()
	err = ioctlCmd(c.fd, "query_port", uint32(DriverMLX5), abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT, attrs)
	c.mu.RUnlock()
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("with a wrong driver id: err = %v, want EINVAL", err)
	}
	// An unknown method is "not supported".
	if err := c.ioctl("bogus", abi.UVERBS_OBJECT_DEVICE, 200); !errors.Is(err, ErrNotSupported) {
		t.Errorf("unknown method: err = %v, want ErrNotSupported", err)
	}
}

// A write command disabled for rxe (POLL_CQ: rxe polls in user space,
// docs/abi.md §2.5) is reported as not supported. 5.10's rxe still enables
// it (kernel 5.10: sw/rxe/rxe_verbs.c uverbs_cmd_mask), and answers EINVAL
// for the CQ handle that names no CQ (docs/kernel-behaviour.md §5).
func TestWriteDisabledCommand(t *testing.T) {
	c := openLoopback(t)
	req := make([]byte, 16) // response, cq_handle, ne
	resp := make([]byte, 8)
	err := c.write("poll_cq", abi.IB_USER_VERBS_CMD_POLL_CQ, req, resp)
	if !kernelAtLeast(t, 6, 1) {
		if !errors.Is(err, unix.EINVAL) || errors.Is(err, ErrNotSupported) {
			t.Errorf("err = %v, want EINVAL: this kernel's rxe enables POLL_CQ, and no CQ has handle 0", err)
		}
		return
	}
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("err = %v, want ErrNotSupported wrapping EOPNOTSUPP", err)
	}
}

// Commands from many goroutines while another closes the context either
// succeed or fail with ErrClosed; nothing else.
func TestConcurrentCommandsAndClose(t *testing.T) {
	eachLabDeviceName(t, testConcurrentCommandsAndClose)
}

func testConcurrentCommandsAndClose(t *testing.T, name string) {
	c, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 8)
	for range 8 {
		go func() {
			for range 50 {
				if _, err := c.QueryPort(1); err != nil {
					if !errors.Is(err, ErrClosed) {
						done <- err
						return
					}
					break
				}
			}
			done <- nil
		}()
	}
	c.Close()
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// The sysfs fallback finds the device as rxe, and a device whose driver
// sysfs cannot name is driven through write() and sysfs only, with the same
// answers.
func TestSysfsFallbackPaths(t *testing.T) {
	name := testutil.LoopbackDevice(t)
	old := useNetlink
	useNetlink = false
	defer func() { useNetlink = old }()
	d, err := LookupDevice(name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != "sysfs" || d.DriverID != DriverRXE {
		t.Fatalf("sysfs discovery: %+v", d)
	}
	ref := openLoopback(t)
	wantPort, err := ref.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	wantGIDs, err := ref.GIDs(1)
	if err != nil {
		t.Fatal(err)
	}

	d.DriverID, d.Driver = DriverUnknown, ""
	c, err := OpenDevice(d)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	wantPort.PortCapFlags2, wantPort.HaveCapFlags2 = 0, false
	if p != wantPort {
		t.Errorf("write() QUERY_PORT %+v\nwant %+v", p, wantPort)
	}
	gids, err := c.GIDs(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(gids) != len(wantGIDs) {
		t.Fatalf("sysfs: %d GIDs, ioctl: %d", len(gids), len(wantGIDs))
	}
	for i := range gids {
		if gids[i] != wantGIDs[i] {
			t.Errorf("sysfs %+v, ioctl %+v", gids[i], wantGIDs[i])
		}
	}
	e, err := c.QueryGID(1, 1)
	if err != nil || e != wantGIDs[1] {
		t.Errorf("QueryGID through sysfs = %+v, %v; want %+v", e, err, wantGIDs[1])
	}
}
