package nldev

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"

	"github.com/goverbs/rdma/internal/abi"
)

// nlaTypeMask strips NLA_F_NESTED (1<<15) and NLA_F_NET_BYTEORDER (1<<14)
// from nla_type (<linux/netlink.h> NLA_TYPE_MASK).
const nlaTypeMask = 0x3fff

// attrs holds the attributes of one NETLINK_RDMA reply, by type. The kernel
// sends each attribute of an nldev reply at most once.
type attrs map[uint16][]byte

// parseAttrs decodes the attribute stream of one reply payload. NETLINK_RDMA
// replies have no family header: the nlattrs start right after nlmsghdr,
// which nl.NetlinkRequest.Execute has already removed. Each is struct nlattr
// {u16 nla_len, header included; u16 nla_type} and its value, padded to 4
// bytes (<linux/netlink.h>). A length that does not fit the payload is an
// error: the reply is not trusted. (nl.ParseRouteAttr panics on some such
// payloads.) Pad attributes (RDMA_NLDEV_ATTR_PAD, type 0) that the kernel
// puts before u64 values for alignment (nla_put_u64_64bit) are dropped.
func parseAttrs(payload []byte) (attrs, error) {
	const hdr = 4
	a := make(attrs)
	// Fewer bytes than a header at the end are ignored, as the kernel's
	// nla_for_each_attr ignores them.
	for b := payload; len(b) >= hdr; {
		n := int(binary.NativeEndian.Uint16(b))
		if n < hdr || n > len(b) {
			return nil, fmt.Errorf("malformed RDMA netlink reply (%d bytes): an attribute of %d bytes where %d are left", len(payload), n, len(b))
		}
		if t := binary.NativeEndian.Uint16(b[2:]) & nlaTypeMask; t != abi.RDMA_NLDEV_ATTR_PAD {
			a[t] = b[hdr:n:n]
		}
		b = b[min((n+3)&^3, len(b)):]
	}
	return a, nil
}

func (a attrs) has(t uint16) bool {
	_, ok := a[t]
	return ok
}

// str returns a string attribute (NLA_NUL_STRING: the kernel includes the NUL).
func (a attrs) str(t uint16) string {
	v := a[t]
	for i, c := range v {
		if c == 0 {
			return string(v[:i])
		}
	}
	return string(v)
}

func (a attrs) u8(t uint16) (uint8, error) {
	v, ok := a[t]
	if !ok {
		return 0, nil
	}
	if len(v) < 1 {
		return 0, fmt.Errorf("attribute %d: want 1 byte, got %d", t, len(v))
	}
	return v[0], nil
}

func (a attrs) u32(t uint16) (uint32, error) {
	v, ok := a[t]
	if !ok {
		return 0, nil
	}
	if len(v) < 4 {
		return 0, fmt.Errorf("attribute %d: want 4 bytes, got %d", t, len(v))
	}
	return nl.NativeEndian().Uint32(v), nil
}

// u64 reads a u64 attribute. Netlink integers are in host byte order.
func (a attrs) u64(t uint16) (uint64, error) {
	v, ok := a[t]
	if !ok {
		return 0, nil
	}
	if len(v) < 8 {
		return 0, fmt.Errorf("attribute %d: want 8 bytes, got %d", t, len(v))
	}
	return nl.NativeEndian().Uint64(v), nil
}

// uint reads an unsigned attribute that may be sent as u32 or u64. The
// header comments RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID as u64, but the kernel
// writes it with nla_put_u32 (core/uverbs_main.c ib_uverbs_get_nl_info).
func (a attrs) uint(t uint16) (uint64, error) {
	v, ok := a[t]
	if !ok {
		return 0, nil
	}
	switch {
	case len(v) >= 8:
		return nl.NativeEndian().Uint64(v), nil
	case len(v) >= 4:
		return uint64(nl.NativeEndian().Uint32(v)), nil
	}
	return 0, fmt.Errorf("attribute %d: want 4 or 8 bytes, got %d", t, len(v))
}
