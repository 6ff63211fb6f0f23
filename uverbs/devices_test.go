package uverbs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeSysfs builds a sysfs tree like the one rxe creates
// (docs/abi.md §1.2) and points discovery at it.
func fakeSysfs(t *testing.T, globalABI string, devs ...string) string {
	t.Helper()
	root := t.TempDir()
	w := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("class/infiniband_verbs/abi_version", globalABI+"\n")
	for i, name := range devs {
		uv := "class/infiniband_verbs/uverbs" + string(rune('0'+i))
		w(uv+"/ibdev", name+"\n")
		w(uv+"/abi_version", "2\n")
		w(uv+"/dev", "231:192\n")
		ib := "class/infiniband/" + name
		w(ib+"/node_guid", "5054:00ff:fe12:3456\n")
		w(ib+"/sys_image_guid", "5054:00ff:fe12:3457\n")
		w(ib+"/node_type", "1: CA\n")
		w(ib+"/parent", "eth"+string(rune('0'+i))+"\n")
		w(ib+"/ports/1/state", "4: ACTIVE\n")
		w(ib+"/ports/1/phys_state", "5: LinkUp\n")
		w(ib+"/ports/1/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456\n")
		w(ib+"/ports/1/gids/1", "0000:0000:0000:0000:0000:ffff:0a00:0001\n")
		w(ib+"/ports/1/gids/2", "0000:0000:0000:0000:0000:0000:0000:0000\n")
		w(ib+"/ports/1/gid_attrs/types/0", "RoCE v2\n")
		w(ib+"/ports/1/gid_attrs/types/1", "RoCE v2\n")
		w(ib+"/ports/1/gid_attrs/ndevs/0", "eth"+string(rune('0'+i))+"\n")
		w(ib+"/ports/1/gid_attrs/ndevs/1", "eth"+string(rune('0'+i))+"\n")
		w("class/net/eth"+string(rune('0'+i))+"/ifindex", string(rune('2'+i))+"\n")
	}
	oldRoot, oldDev, oldNL := sysfsRoot, devfsRoot, useNetlink
	sysfsRoot, devfsRoot, useNetlink = root, "/dev/infiniband", false
	t.Cleanup(func() { sysfsRoot, devfsRoot, useNetlink = oldRoot, oldDev, oldNL })
	return root
}

func TestSysfsDiscovery(t *testing.T) {
	fakeSysfs(t, "6", "rxe0", "rxe1")
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 {
		t.Fatalf("found %d devices, want 2", len(devs))
	}
	d := devs[0]
	if d.Name != "rxe0" || d.Uverbs != "uverbs0" || d.Path != "/dev/infiniband/uverbs0" {
		t.Errorf("device = %s %s %s", d.Name, d.Uverbs, d.Path)
	}
	if d.NodeGUID != 0x505400fffe123456 || d.SysImageGUID != 0x505400fffe123457 {
		t.Errorf("GUIDs = %v %v", d.NodeGUID, d.SysImageGUID)
	}
	if d.NodeType != NodeCA || d.Transport() != TransportIB {
		t.Errorf("node type %v transport %v", d.NodeType, d.Transport())
	}
	if d.DriverID != DriverRXE || d.Driver != "rxe" || d.ABIVersion != 2 || d.Source != "sysfs" {
		t.Errorf("driver %q/%d ABI %d source %s", d.Driver, d.DriverID, d.ABIVersion, d.Source)
	}
	if len(d.Ports) != 1 {
		t.Fatalf("ports = %+v", d.Ports)
	}
	p := d.Ports[0]
	if p.Number != 1 || p.State != PortActive || p.PhysState != PhysLinkUp || p.Netdev != "eth0" || p.NetdevIndex != 2 {
		t.Errorf("port = %+v", p)
	}
	if devs[1].Ports[0].Netdev != "eth1" {
		t.Errorf("second device netdev = %q", devs[1].Ports[0].Netdev)
	}
}

func TestSysfsGIDs(t *testing.T) {
	root := fakeSysfs(t, "6", "rxe0")
	dir := filepath.Join(root, "class/infiniband/rxe0/ports/1")
	c := &Device{dev: DeviceInfo{Name: "rxe0"}}
	gids, err := c.gidsSysfs(1, 3, LinkLayerEthernet)
	if err != nil {
		t.Fatal(err)
	}
	if len(gids) != 2 {
		t.Fatalf("got %d GIDs, want 2 (the empty entry omitted): %+v", len(gids), gids)
	}
	if gids[0].GID.String() != "fe80::5054:ff:fe12:3456" || gids[0].Type != GIDTypeRoCEv2 || gids[0].Netdev != "eth0" || gids[0].NetdevIndex != 2 {
		t.Errorf("gid 0 = %+v (%s)", gids[0], gids[0].GID)
	}
	if gids[1].Index != 1 || gids[1].GID.String() != "::ffff:10.0.0.1" || gids[1].Addr().Unmap().String() != "10.0.0.1" {
		t.Errorf("gid 1 = %+v (%s)", gids[1], gids[1].GID)
	}
	if _, err := c.queryGIDSysfs(1, 2, LinkLayerEthernet); !errors.Is(err, unix.ENODATA) {
		t.Errorf("empty entry: err = %v, want ENODATA", err)
	}
	if _, err := c.queryGIDSysfs(1, 7, LinkLayerEthernet); err == nil {
		t.Error("index past the table: no error")
	}
	// A v1 type name is RoCE v1 on Ethernet, IB on InfiniBand.
	if err := os.WriteFile(filepath.Join(dir, "gid_attrs/types/0"), []byte("IB/RoCE v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if e, _ := c.queryGIDSysfs(1, 0, LinkLayerEthernet); e.Type != GIDTypeRoCEv1 {
		t.Errorf("type = %v, want RoCE v1", e.Type)
	}
	if e, _ := c.queryGIDSysfs(1, 0, LinkLayerInfiniBand); e.Type != GIDTypeIB {
		t.Errorf("type = %v, want IB", e.Type)
	}
}

func TestNoDevice(t *testing.T) {
	fakeSysfs(t, "6")
	_, err := Devices()
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("err = %v, want ErrNoDevice", err)
	}
	if !strings.Contains(err.Error(), "rdma-link add rxe0 netdev eth0") {
		t.Errorf("the error does not say how to create a device: %v", err)
	}
	if _, err := Open("rxe0"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open: err = %v, want ErrNoDevice", err)
	}
}

func TestWrongDeviceNameListsDevices(t *testing.T) {
	fakeSysfs(t, "6", "rxe0", "rxe1")
	_, err := Open("mlx5_0")
	var nf *DeviceNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want *DeviceNotFoundError", err)
	}
	if nf.Name != "mlx5_0" || strings.Join(nf.Available, ",") != "rxe0,rxe1" {
		t.Errorf("err = %+v", nf)
	}
	if !strings.Contains(err.Error(), "available: rxe0, rxe1") {
		t.Errorf("message does not list the devices: %v", err)
	}
	if errors.Is(err, ErrNoDevice) {
		t.Error("a wrong name with devices present matched ErrNoDevice")
	}
}

func TestGlobalABIMismatch(t *testing.T) {
	fakeSysfs(t, "5", "rxe0")
	if _, err := Devices(); err == nil || !strings.Contains(err.Error(), "uverbs ABI version 5") {
		t.Errorf("err = %v, want an ABI version error", err)
	}
}

func TestDriverABIMismatch(t *testing.T) {
	d := DeviceInfo{Name: "rxe0", DriverID: DriverRXE, ABIVersion: 1, Path: "/nonexistent"}
	_, err := OpenDevice(d)
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "rxe driver ABI 1") {
		t.Errorf("err = %v, want a not-supported driver ABI error", err)
	}
}
