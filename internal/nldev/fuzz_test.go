package nldev

import (
	"testing"

	"github.com/goverbs/rdma"
	"github.com/goverbs/rdma/internal/abi"
)

// Replies from the kernel are parsed without trusting their lengths: no
// attribute may reach past its message, and no parser may panic.

func fuzzSeeds(f *testing.F) {
	f.Add(deviceReply(1, "rxe0", true))
	f.Add(portReply(3, 1, rdma.PortActive, rdma.PhysLinkUp, "veth0", 12))
	f.Add(encodeAttrs(tStr(abi.RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs0"), tU64(abi.RDMA_NLDEV_ATTR_CHARDEV_ABI, 2)))
	f.Add([]byte{4, 0, 1, 0})
	f.Add([]byte{0xff, 0xff, 1, 0, 0})
}

func FuzzParseAttrs(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		a, err := parseAttrs(payload)
		if err != nil {
			return
		}
		// Every value lies inside the payload: together they take no
		// more than it minus their 4-byte headers.
		total := 0
		for _, v := range a {
			total += len(v) + 4 // struct nlattr
		}
		if total > len(payload) {
			t.Fatalf("%d bytes of attributes in a %d-byte payload", total, len(payload))
		}
		for typ := range a {
			a.str(typ)
			a.u8(typ)
			a.u32(typ)
			a.u64(typ)
		}
	})
}

func FuzzParseReplies(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		if d, err := parseDevice(payload); err == nil {
			_ = d.NodeGUID.String() + d.NodeType.String()
		}
		if p, _, err := parsePort(payload); err == nil {
			_ = p.State.String() + p.PhysState.String()
		}
		if c, err := parseChardev(payload); err == nil {
			_ = c.Path() + c.DriverID.String()
		}
	})
}
