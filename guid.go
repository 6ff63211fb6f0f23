package rdma

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// GUID is an InfiniBand/RoCE 64-bit globally unique identifier (node GUID,
// system image GUID), held as the number whose big-endian bytes are the GUID
// bytes on the wire. That is what RDMA netlink sends: the kernel stores GUIDs
// as __be64 and puts them with be64_to_cpu (core/nldev.c fill_dev_info).
//
// For rxe the node GUID is the EUI-64 of the netdev MAC: 52:54:00:12:34:56
// gives 0x505400fffe123456, printed "5054:00ff:fe12:3456".
// The verbs' query responses carry the same __be64 (ibv_devinfo prints it
// the same way).
//
// github.com/vishvananda/netlink's RdmaLinkAttrs.NodeGuid string writes the
// same value little-endian, which reverses the bytes on x86 and arm64; a GUID
// here compares equal to sysfs and to the interface ID of a GID instead.
type GUID uint64

// String formats g like sysfs node_guid and sys_image_guid: four
// 16-bit groups in hex, "5054:00ff:fe12:3456" (core/sysfs.c "%04x:%04x:%04x:%04x").
func (g GUID) String() string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x",
		uint16(g>>48), uint16(g>>32), uint16(g>>16), uint16(g))
}

// Bytes returns the GUID in wire (big-endian) order, as it appears in the
// low 8 bytes of a link-local GID.
func (g GUID) Bytes() [8]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(g))
	return b
}

// ParseGUID parses the sysfs form "5054:00ff:fe12:3456".
func ParseGUID(s string) (GUID, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 4 {
		return 0, fmt.Errorf("GUID %q: want four colon-separated 16-bit hex groups like 5054:00ff:fe12:3456", s)
	}
	var g uint64
	for _, p := range parts {
		if p == "" || len(p) > 4 {
			return 0, fmt.Errorf("GUID %q: group %q is not 1-4 hex digits", s, p)
		}
		v, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return 0, fmt.Errorf("GUID %q: group %q is not hex", s, p)
		}
		g = g<<16 | v
	}
	return GUID(g), nil
}
