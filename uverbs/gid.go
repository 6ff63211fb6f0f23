package uverbs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
)

// GID is a 128-bit global identifier. On RoCE it is an IPv6 address, or an
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) for an IPv4 address.
type GID [16]byte

// Addr returns the GID as a netip.Addr. An IPv4-mapped GID stays mapped
// (::ffff:a.b.c.d); Unmap gives the IPv4 address.
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g) }

// String formats the GID as an IPv6 address, like inet_ntop:
// "fe80::5054:ff:fe12:3456", "::ffff:10.0.0.1".
func (g GID) String() string { return netip.AddrFrom16(g).String() }

// Hex formats the GID as eight groups of four hex digits, the sysfs form
// ("fe80:0000:0000:0000:5054:00ff:fe12:3456").
func (g GID) Hex() string {
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02x%02x", g[i], g[i+1])
	}
	return sb.String()
}

// IsZero reports whether the GID is all zeros (an empty table entry).
func (g GID) IsZero() bool { return g == GID{} }

// ParseGID parses any IPv6 text form, including the sysfs one, or an IPv4
// address (which gives its IPv4-mapped GID).
func ParseGID(s string) (GID, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return GID{}, fmt.Errorf("bad GID %q: %w", s, err)
	}
	return GID(a.As16()), nil
}

// GIDFromIP returns the RoCE v2 GID of an IP address: the address itself for
// IPv6, the IPv4-mapped address for IPv4 (kernel: core/roce_gid_mgmt.c
// update_gid_ip uses ipv6_addr_set_v4mapped).
// The zero netip.Addr gives the zero GID.
func GIDFromIP(ip netip.Addr) GID {
	if !ip.IsValid() {
		return GID{}
	}
	return GID(ip.As16())
}

// GIDType is the kind of a GID table entry (UAPI: enum ib_uverbs_gid_type).
type GIDType uint32

const (
	GIDTypeIB     GIDType = 0x0 // IB_UVERBS_GID_TYPE_IB; InfiniBand
	GIDTypeRoCEv1 GIDType = 0x1 // IB_UVERBS_GID_TYPE_ROCE_V1; RoCE v1: Ethernet, ethertype 0x8915
	GIDTypeRoCEv2 GIDType = 0x2 // IB_UVERBS_GID_TYPE_ROCE_V2; RoCE v2: UDP/IP, port 4791; the only type rxe has
)

// String returns t's name.
func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return "GID type " + strconv.Itoa(int(t))
}

// GIDEntry is one valid entry of a port's GID table.
type GIDEntry struct {
	Port        uint8
	Index       int // the GID index to use in address vectors (sgid_index)
	GID         GID
	Type        GIDType
	NetdevIndex int    // interface index of the entry's network device, 0 if none
	Netdev      string // its name, empty if none or not visible here
}

// Addr returns the entry's GID as an IP address (see GID.Addr).
func (e GIDEntry) Addr() netip.Addr { return e.GID.Addr() }

// QueryGID returns entry index of port's GID table. An empty entry gives an
// error matching unix.ENODATA (the kernel's answer,
// kernel: core/cache.c rdma_get_gid_attr).
//
// Transport: the ioctl method UVERBS_METHOD_QUERY_GID_ENTRY; sysfs
// (ports/N/gids/I, gid_attrs/types/I, gid_attrs/ndevs/I) when the kernel has
// no such method, as rdma-core falls back (libibverbs/cmd_device.c
// query_sysfs_gid_entry).
//
// rdma-core: ibv_query_gid_ex.
func (c *Device) QueryGID(port uint8, index int) (GIDEntry, error) {
	if index < 0 {
		return GIDEntry{}, &OpError{Op: "query_gid_entry", Err: fmt.Errorf("GID index %d is negative", index)}
	}
	if c.gidPath.useIoctl() {
		e, err := c.queryGIDIoctl(port, index)
		if !c.gidPath.note(err) {
			return e, err
		}
	}
	pa, err := c.QueryPort(port)
	if err != nil {
		return GIDEntry{}, err
	}
	return c.queryGIDSysfs(port, index, pa.LinkLayer)
}

// GIDs returns the valid entries of port's GID table, by index. Empty entries
// are left out.
//
// Transport: the ioctl method UVERBS_METHOD_QUERY_GID_TABLE (one call for
// the whole device); sysfs when the kernel has no such method.
//
// rdma-core: ibv_query_gid_table.
func (c *Device) GIDs(port uint8) ([]GIDEntry, error) {
	pa, err := c.QueryPort(port)
	if err != nil {
		return nil, err
	}
	if c.gidPath.useIoctl() {
		all, err := c.gidTableIoctl()
		if !c.gidPath.note(err) {
			if err != nil {
				return nil, err
			}
			var out []GIDEntry
			for _, e := range all {
				if e.Port == port {
					out = append(out, e)
				}
			}
			return out, nil
		}
	}
	return c.gidsSysfs(port, pa.GIDTableLen, pa.LinkLayer)
}

// GIDIndexForIP returns the index of the RoCE v2 GID of ip on port: the
// sgid_index a QP or address handle must use to send from that address.
func (c *Device) GIDIndexForIP(port uint8, ip netip.Addr) (int, error) {
	if !ip.IsValid() {
		return -1, fmt.Errorf("GID index: no IP address given (the zero netip.Addr): pass the local address to send from")
	}
	want := GIDFromIP(ip)
	entries, err := c.GIDs(port)
	if err != nil {
		return -1, err
	}
	for _, e := range entries {
		if e.Type == GIDTypeRoCEv2 && e.GID == want {
			return e.Index, nil
		}
	}
	netdev := ""
	for _, p := range c.dev.Ports {
		if p.Number == port && p.Netdev != "" {
			netdev = " (" + p.Netdev + ")"
		}
	}
	return -1, fmt.Errorf("%s port %d has no RoCE v2 GID for %s: assign the address to the port's network device%s", c.dev.Name, port, ip, netdev)
}

func (c *Device) queryGIDIoctl(port uint8, index int) (GIDEntry, error) {
	var ent abi.UverbsGIDEntry
	err := c.ioctl("query_gid_entry", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_ENTRY,
		attrConst(abi.UVERBS_ATTR_QUERY_GID_ENTRY_PORT, uint64(port)),
		attrConst(abi.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, uint64(index)),
		attrConst(abi.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0),
		attrOut(abi.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, bytesOf(&ent)))
	if err != nil {
		return GIDEntry{}, err
	}
	return decodeGIDEntry(&ent, nil), nil
}

func (c *Device) gidTableIoctl() ([]GIDEntry, error) {
	// The kernel answers EINVAL when the buffer is smaller than the number
	// of valid entries (kernel: core/cache.c rdma_query_gid_table), so size
	// it for every entry of every port.
	total := 0
	for _, p := range c.dev.Ports {
		pa, err := c.QueryPort(p.Number)
		if err != nil {
			return nil, err
		}
		total += pa.GIDTableLen
	}
	if total == 0 {
		return nil, nil
	}
	ents := make([]abi.UverbsGIDEntry, total)
	entSize := unsafe.Sizeof(ents[0])
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ents))), uintptr(total)*entSize)
	var num uint64
	err := c.ioctl("query_gid_table", abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE,
		attrConst(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, uint64(entSize)),
		attrConst(abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0),
		attrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, raw),
		attrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, bytesOf(&num)))
	if err != nil {
		return nil, err
	}
	if num > uint64(total) {
		return nil, &OpError{Op: "query_gid_table", Err: fmt.Errorf("kernel reported %d entries for a %d-entry buffer", num, total)}
	}
	names := map[int]string{}
	out := make([]GIDEntry, 0, num)
	for i := range ents[:num] {
		out = append(out, decodeGIDEntry(&ents[i], names))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Index < out[j].Index
	})
	return out, nil
}

// decodeGIDEntry converts a kernel entry; names caches ifindex lookups.
func decodeGIDEntry(e *abi.UverbsGIDEntry, names map[int]string) GIDEntry {
	var g GID
	copy(g[:], bytesOf(&e.GID))
	out := GIDEntry{
		Port:        uint8(e.PortNum),
		Index:       int(e.GIDIndex),
		GID:         g,
		Type:        GIDType(e.GIDType),
		NetdevIndex: int(e.NetdevIfindex),
	}
	if out.NetdevIndex != 0 {
		if n, ok := names[out.NetdevIndex]; ok {
			out.Netdev = n
		} else if ifc, err := net.InterfaceByIndex(out.NetdevIndex); err == nil {
			out.Netdev = ifc.Name
			if names != nil {
				names[out.NetdevIndex] = ifc.Name
			}
		}
	}
	return out
}

func (c *Device) gidSysfsDir(port uint8) string {
	return filepath.Join(sysfsRoot, "class/infiniband", c.dev.Name, "ports", strconv.Itoa(int(port)))
}

func (c *Device) queryGIDSysfs(port uint8, index int, ll LinkLayer) (GIDEntry, error) {
	e, ok, err := readSysfsGID(c.gidSysfsDir(port), port, index, ll)
	if err != nil {
		return GIDEntry{}, &OpError{Op: "query_gid_entry", Err: err}
	}
	if !ok {
		return GIDEntry{}, &OpError{Op: "query_gid_entry", Err: unix.ENODATA}
	}
	return e, nil
}

func (c *Device) gidsSysfs(port uint8, tblLen int, ll LinkLayer) ([]GIDEntry, error) {
	dir := c.gidSysfsDir(port)
	var out []GIDEntry
	for i := 0; i < tblLen; i++ {
		e, ok, err := readSysfsGID(dir, port, i, ll)
		if err != nil {
			return nil, &OpError{Op: "query_gid_table", Err: err}
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// readSysfsGID reads one GID table entry from sysfs (kernel: core/sysfs.c
// show_port_gid, show_port_gid_attr_gid_type, show_port_gid_attr_ndev). An
// empty entry reads as all zeros and its type file fails with EINVAL; ok is
// false for it.
func readSysfsGID(dir string, port uint8, index int, ll LinkLayer) (GIDEntry, bool, error) {
	idx := strconv.Itoa(index)
	s, err := readString(filepath.Join(dir, "gids", idx))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.EINVAL) {
			return GIDEntry{}, false, fmt.Errorf("port %d has no GID index %d: %w", port, index, err)
		}
		return GIDEntry{}, false, err
	}
	g, err := ParseGID(s)
	if err != nil {
		return GIDEntry{}, false, err
	}
	if g.IsZero() {
		return GIDEntry{}, false, nil
	}
	e := GIDEntry{Port: port, Index: index, GID: g}
	t, err := readString(filepath.Join(dir, "gid_attrs/types", idx))
	switch {
	case err != nil && errors.Is(err, unix.EINVAL):
		return GIDEntry{}, false, nil // deleted between the two reads
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return GIDEntry{}, false, err
	case err == nil:
		e.Type = parseSysfsGIDType(t, ll)
	default:
		// No gid_attrs: InfiniBand.
		e.Type = GIDTypeIB
	}
	if nd, err := readString(filepath.Join(dir, "gid_attrs/ndevs", idx)); err == nil && nd != "" {
		e.Netdev = nd
		e.NetdevIndex, _ = readInt(filepath.Join(sysfsRoot, "class/net", nd, "ifindex"))
	}
	return e, true, nil
}

// parseSysfsGIDType maps the sysfs type names. The kernel prints
// "IB/RoCE v1" for both IB and RoCE v1 (kernel: core/cache.c gid_type_str);
// the link layer tells them apart, as in rdma-core's query_sysfs_gid_entry.
func parseSysfsGIDType(s string, ll LinkLayer) GIDType {
	switch strings.TrimSpace(s) {
	case "RoCE v2":
		return GIDTypeRoCEv2
	default:
		if ll == LinkLayerEthernet {
			return GIDTypeRoCEv1
		}
		return GIDTypeIB
	}
}
