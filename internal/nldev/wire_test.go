package nldev

import (
	"bytes"
	"encoding/binary"
	"github.com/goverbs/rdma/internal/abi"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Test-side encoders, written from <linux/netlink.h> independently of the
// nl package: nlattr = u16 len (header included), u16 type, value, padding
// to 4 bytes; integers in host order.

type tattr struct {
	typ uint16
	val []byte
}

func tU8(t uint16, v uint8) tattr   { return tattr{t, []byte{v}} }
func tU32(t uint16, v uint32) tattr { return tattr{t, binary.NativeEndian.AppendUint32(nil, v)} }
func tU64(t uint16, v uint64) tattr { return tattr{t, binary.NativeEndian.AppendUint64(nil, v)} }
func tStr(t uint16, s string) tattr { return tattr{t, append([]byte(s), 0)} }
func tPad() tattr                   { return tattr{abi.RDMA_NLDEV_ATTR_PAD, nil} }

func encodeAttrs(as ...tattr) []byte {
	var b []byte
	for _, a := range as {
		b = binary.NativeEndian.AppendUint16(b, uint16(4+len(a.val)))
		b = binary.NativeEndian.AppendUint16(b, a.typ)
		b = append(b, a.val...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	return b
}

// encodeKernel lays attributes out like nla_put_u64_64bit on an architecture
// without efficient unaligned access: before each 8-byte value whose data
// would not be 8-byte aligned (counting the 16-byte nlmsghdr), an empty
// RDMA_NLDEV_ATTR_PAD attribute.
func encodeKernel(as ...tattr) []byte {
	var b []byte
	for _, a := range as {
		if len(a.val) == 8 && (unix.SizeofNlMsghdr+len(b)+4)%8 != 0 {
			b = append(b, encodeAttrs(tPad())...)
		}
		b = append(b, encodeAttrs(a)...)
	}
	return b
}

func nlmsg(typ, flags uint16, payload []byte) []byte {
	var b []byte
	b = binary.NativeEndian.AppendUint32(b, uint32(unix.SizeofNlMsghdr+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, 0) // seq, zeroed by serialize
	b = binary.NativeEndian.AppendUint32(b, 0) // pid
	return append(b, payload...)
}

// serialize returns the bytes a request puts on the socket, with the
// sequence number (a process-wide counter) zeroed.
func serialize(req *nl.NetlinkRequest) []byte {
	req.Seq = 0
	return req.Serialize()
}

func TestRequestBytes(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the expected bytes below are written for a little-endian host")
	}
	const (
		req  = unix.NLM_F_REQUEST
		ack  = unix.NLM_F_ACK
		dump = unix.NLM_F_DUMP
	)
	tests := []struct {
		name string
		got  *nl.NetlinkRequest
		want []byte
	}{
		{"GET dump", getDumpRequest(), nlmsg(0x1401, req|dump, nil)},
		{"PORT_GET dump", portDumpRequest(7), nlmsg(0x1405, req|dump,
			[]byte{8, 0, 1, 0, 7, 0, 0, 0})},
		{"GET_CHARDEV uverbs", chardevRequest(3, false, "uverbs"), nlmsg(0x140f, req,
			[]byte{
				8, 0, 1, 0, 3, 0, 0, 0, // DEV_INDEX = 3
				11, 0, 69, 0, 'u', 'v', 'e', 'r', 'b', 's', 0, 0, // CHARDEV_TYPE "uverbs\0" + 1 pad byte
			})},
		{"GET_CHARDEV rdma_cm global", chardevRequest(0, true, "rdma_cm"), nlmsg(0x140f, req,
			[]byte{12, 0, 69, 0, 'r', 'd', 'm', 'a', '_', 'c', 'm', 0})},
		{"SYS_GET", sysGetRequest(), nlmsg(0x1406, req, nil)},
		{"DELLINK", delLinkRequest(0x01020304), nlmsg(0x1404, req|ack,
			[]byte{8, 0, 1, 0, 4, 3, 2, 1})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := serialize(tt.got)
			if !bytes.Equal(got, tt.want) {
				t.Errorf("request bytes\n got % x\nwant % x", got, tt.want)
			}
		})
	}
}

// The NEWLINK request is built by github.com/vishvananda/netlink's
// RdmaLinkAdd from its nl constants; check those match the UAPI values.
func TestVishvanandaConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"RDMA_NL_NLDEV", nl.RDMA_NL_NLDEV, abi.RDMA_NL_NLDEV},
		{"RDMA_NL_GET_CLIENT_SHIFT", nl.RDMA_NL_GET_CLIENT_SHIFT, 10},
		{"RDMA_NLDEV_CMD_NEWLINK", nl.RDMA_NLDEV_CMD_NEWLINK, abi.RDMA_NLDEV_CMD_NEWLINK},
		{"RDMA_NLDEV_CMD_SYS_GET", nl.RDMA_NLDEV_CMD_SYS_GET, abi.RDMA_NLDEV_CMD_SYS_GET},
		{"RDMA_NLDEV_ATTR_DEV_NAME", nl.RDMA_NLDEV_ATTR_DEV_NAME, abi.RDMA_NLDEV_ATTR_DEV_NAME},
		{"RDMA_NLDEV_ATTR_LINK_TYPE", nl.RDMA_NLDEV_ATTR_LINK_TYPE, abi.RDMA_NLDEV_ATTR_LINK_TYPE},
		{"RDMA_NLDEV_ATTR_NDEV_NAME", nl.RDMA_NLDEV_ATTR_NDEV_NAME, abi.RDMA_NLDEV_ATTR_NDEV_NAME},
		{"RDMA_NLDEV_SYS_ATTR_NETNS_MODE", nl.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE},
	} {
		if c.got != c.want {
			t.Errorf("nl.%s = %d, <rdma/rdma_netlink.h> says %d", c.name, c.got, c.want)
		}
	}
	if got := nlType(abi.RDMA_NLDEV_CMD_NEWLINK); got != 0x1403 {
		t.Errorf("nlType(NEWLINK) = %#x, want 0x1403", got)
	}
}
