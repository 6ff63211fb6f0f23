package uverbs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
)

// DeviceInfo describes one RDMA device and its uverbs character device, as
// found by Devices. It needs no open device.
type DeviceInfo struct {
	Name         string   // ib device name, e.g. "rxe0"
	Index        uint32   // kernel device index (netlink RDMA_NLDEV_ATTR_DEV_INDEX); 0 when found through sysfs
	NodeGUID     GUID     // node GUID; for rxe the EUI-64 of the netdev's MAC
	SysImageGUID GUID     // system image GUID
	NodeType     NodeType // NodeCA for RoCE and rxe
	FWVersion    string   // firmware version, may be empty
	Driver       string   // provider name derived from DriverID ("rxe"), empty if unknown
	DriverID     DriverID // kernel driver id (RDMA_DRIVER_RXE = 14); DriverUnknown if it could not be found
	Uverbs       string   // uverbs char device name, e.g. "uverbs0"
	Path         string   // char device node, e.g. "/dev/infiniband/uverbs0"
	ABIVersion   int      // driver ABI of the uverbs device (2 for rxe)
	Ports        []PortInfo
	Source       string // where the facts came from: "netlink" or "sysfs"
}

// Transport returns the device's transport (InfiniBand for RoCE and rxe).
//
// rdma-core: the transport_type of struct ibv_device.
func (d *DeviceInfo) Transport() Transport { return d.NodeType.Transport() }

// PortInfo is what discovery knows about a port without opening the device.
type PortInfo struct {
	Number      uint8     // 1-based port number
	State       PortState // logical state
	PhysState   PhysState // physical state
	Netdev      string    // the Ethernet device under a RoCE/rxe port ("eth0"), empty for InfiniBand
	NetdevIndex int       // its interface index, 0 if none
}

// ABI versions this package speaks.
const (
	// uverbsABIVersion is IB_USER_VERBS_ABI_VERSION, the global uverbs ABI
	// in /sys/class/infiniband_verbs/abi_version. rdma-core accepts 3..6; the
	// extended commands used here need 6.
	uverbsABIVersion = abi.IB_USER_VERBS_ABI_VERSION
)

// Where discovery looks. Tests point these at fake trees.
var (
	sysfsRoot  = "/sys"
	devfsRoot  = "/dev/infiniband"
	useNetlink = true
)

// Devices lists the RDMA devices of the machine with their uverbs character
// devices. It asks the kernel over NETLINK_RDMA first (as rdma-core does;
// the query also loads ib_uverbs on demand) and reads sysfs when netlink is
// not available. With no device it returns ErrNoDevice, which says how to
// create one.
//
// Equivalent to: `ibv_devices`, `rdma dev show`.
func Devices() ([]DeviceInfo, error) {
	if err := unix.RequireLinux(); err != nil {
		return nil, err // sysfs would say "no device"
	}
	var devs []DeviceInfo
	var nlErr error
	if useNetlink {
		devs, nlErr = netlinkDevices()
	}
	if !useNetlink || nlErr != nil {
		var err error
		devs, err = sysfsDevices()
		if err != nil {
			if nlErr != nil {
				return nil, fmt.Errorf("listing RDMA devices: netlink: %v; sysfs: %w", nlErr, err)
			}
			return nil, err
		}
	}
	// After netlink, which loads ib_uverbs on demand.
	if err := checkGlobalABI(); err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, ErrNoDevice
	}
	return devs, nil
}

// LookupDevice returns the device called name. An empty name selects the
// first device. A name that does not exist gives a *DeviceNotFoundError that
// lists the devices that do.
//
// rdma-core: ibv_get_device_list and ibv_get_device_name.
func LookupDevice(name string) (DeviceInfo, error) {
	devs, err := Devices()
	if err != nil {
		if name != "" && errors.Is(err, ErrNoDevice) {
			return DeviceInfo{}, &DeviceNotFoundError{Name: name}
		}
		return DeviceInfo{}, err
	}
	if name == "" {
		return devs[0], nil
	}
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return DeviceInfo{}, &DeviceNotFoundError{Name: name, Available: names}
}

// checkGlobalABI reads the uverbs class ABI (rdma-core: libibverbs/init.c
// check_abi_version). A missing file means ib_uverbs is not loaded yet, which
// netlink discovery may fix; only a wrong number is an error here.
func checkGlobalABI() error {
	v, err := readInt(filepath.Join(sysfsRoot, "class/infiniband_verbs/abi_version"))
	if err != nil {
		return nil
	}
	if v != uverbsABIVersion {
		return fmt.Errorf("uverbs ABI version %d in %s/class/infiniband_verbs/abi_version is not supported (want %d): the kernel is too old or too new for this library",
			v, sysfsRoot, uverbsABIVersion)
	}
	return nil
}

// checkDriverABI refuses a device whose driver ABI differs from the one its
// provider's layouts follow (providers, provider.go).
func checkDriverABI(d *DeviceInfo) error {
	if p, ok := providers[d.DriverID]; ok && d.ABIVersion != p.ABI {
		return fmt.Errorf("device %s: %v driver ABI %d is not supported (want %d)", d.Name, d.DriverID, d.ABIVersion, p.ABI)
	}
	return nil
}

// sysfsDevices is the fallback discovery (rdma-core: libibverbs/init.c
// find_sysfs_devs): one entry per /sys/class/infiniband_verbs/uverbsN.
func sysfsDevices() ([]DeviceInfo, error) {
	dir := filepath.Join(sysfsRoot, "class/infiniband_verbs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing RDMA devices: %w", err)
	}
	var devs []DeviceInfo
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "uverbs") {
			continue
		}
		d, err := sysfsDevice(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs, nil
}

func sysfsDevice(uverbsDir string) (DeviceInfo, error) {
	d := DeviceInfo{Uverbs: filepath.Base(uverbsDir), Source: "sysfs"}
	d.Path = filepath.Join(devfsRoot, d.Uverbs)
	var err error
	if d.Name, err = readString(filepath.Join(uverbsDir, "ibdev")); err != nil {
		return d, err
	}
	if d.ABIVersion, err = readInt(filepath.Join(uverbsDir, "abi_version")); err != nil {
		return d, err
	}
	ib := filepath.Join(sysfsRoot, "class/infiniband", d.Name)
	if err := fillFromIBSysfs(&d, ib); err != nil {
		return d, err
	}
	// sysfs has no driver id. The "parent" attribute exists only for rxe
	// (kernel: sw/rxe/rxe_verbs.c parent_show); rdma-core matches rxe by name
	// in this case (VERBS_NAME_MATCH("rxe")).
	if _, err := os.Stat(filepath.Join(ib, "parent")); err == nil {
		d.DriverID = DriverRXE
		d.Driver = DriverRXE.String()
	}
	return d, nil
}

// fillFromIBSysfs reads /sys/class/infiniband/<dev>: GUIDs, node type,
// firmware and ports.
func fillFromIBSysfs(d *DeviceInfo, ib string) error {
	var err error
	s, err := readString(filepath.Join(ib, "node_guid"))
	if err != nil {
		return err
	}
	if d.NodeGUID, err = ParseGUID(s); err != nil {
		return fmt.Errorf("%s/node_guid: %w", ib, err)
	}
	if s, err = readString(filepath.Join(ib, "sys_image_guid")); err == nil {
		if d.SysImageGUID, err = ParseGUID(s); err != nil {
			return fmt.Errorf("%s/sys_image_guid: %w", ib, err)
		}
	}
	// node_type reads "1: CA".
	if n, err := readLeadingInt(filepath.Join(ib, "node_type")); err == nil {
		d.NodeType = NodeType(n)
	}
	d.FWVersion, _ = readString(filepath.Join(ib, "fw_ver"))
	ports, err := os.ReadDir(filepath.Join(ib, "ports"))
	if err != nil {
		return fmt.Errorf("reading ports of %s: %w", d.Name, err)
	}
	parent, _ := readString(filepath.Join(ib, "parent"))
	for _, p := range ports {
		num, err := strconv.ParseUint(p.Name(), 10, 8)
		if err != nil {
			continue
		}
		pd := filepath.Join(ib, "ports", p.Name())
		pi := PortInfo{Number: uint8(num)}
		if v, err := readLeadingInt(filepath.Join(pd, "state")); err == nil {
			pi.State = PortState(v)
		}
		if v, err := readLeadingInt(filepath.Join(pd, "phys_state")); err == nil {
			pi.PhysState = PhysState(v)
		}
		// The netdev of the default GID (index 0), else rxe's parent.
		if nd, err := readString(filepath.Join(pd, "gid_attrs/ndevs/0")); err == nil && nd != "" {
			pi.Netdev = nd
		} else {
			pi.Netdev = parent
		}
		if pi.Netdev != "" {
			pi.NetdevIndex, _ = readInt(filepath.Join(sysfsRoot, "class/net", pi.Netdev, "ifindex"))
		}
		d.Ports = append(d.Ports, pi)
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Number < d.Ports[j].Number })
	return nil
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n\x00"), nil
}

func readInt(path string) (int, error) {
	s, err := readString(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// readLeadingInt parses files like "4: ACTIVE".
func readLeadingInt(path string) (int, error) {
	s, err := readString(path)
	if err != nil {
		return 0, err
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
