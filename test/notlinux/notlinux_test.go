//go:build !linux || goverbs_notlinux

package notlinux

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/goverbs/rdma/netlinkrdma"
	"github.com/goverbs/rdma/nvmeof"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/rsocket"
	"github.com/goverbs/rdma/uverbs"
)

// TestEntryPoints calls every function of the public packages that reaches
// the kernel, with valid arguments (address literals: no DNS), and wants an
// error that matches the package's ErrNotSupported and
// errors.ErrUnsupported.
func TestEntryPoints(t *testing.T) {
	ctx := context.Background()
	const dst, wild = "192.0.2.1:7471", "0.0.0.0:7471" // TEST-NET-1 (RFC 5737)
	dev := uverbs.DeviceInfo{Name: "rxe0", Uverbs: "uverbs0", Path: "/dev/infiniband/uverbs0"}
	second := func(_ any, err error) error { return err }
	third := func(_, _ any, err error) error { return err }
	cases := []struct {
		name string
		want error
		call func() error
	}{
		{"uverbs.Devices", uverbs.ErrNotSupported, func() error { return second(uverbs.Devices()) }},
		{"uverbs.LookupDevice", uverbs.ErrNotSupported, func() error { return second(uverbs.LookupDevice("rxe0")) }},
		{"uverbs.Open", uverbs.ErrNotSupported, func() error { return second(uverbs.Open("")) }},
		{"uverbs.OpenDevice", uverbs.ErrNotSupported, func() error { return second(uverbs.OpenDevice(dev)) }},
		{"uverbs.AllocBuffer", uverbs.ErrNotSupported, func() error { return second(uverbs.AllocBuffer(4096)) }},

		{"rdmacm.NewEventChannel", rdmacm.ErrNotSupported, func() error { return second(rdmacm.NewEventChannel()) }},
		{"rdmacm.NewAsyncEventChannel", rdmacm.ErrNotSupported, func() error { return second(rdmacm.NewAsyncEventChannel()) }},
		{"rdmacm.Dial", rdmacm.ErrNotSupported, func() error { return second(rdmacm.Dial(ctx, dst, nil)) }},
		{"rdmacm.Resolve", rdmacm.ErrNotSupported, func() error { return second(rdmacm.Resolve(ctx, dst, nil)) }},
		{"rdmacm.Listen", rdmacm.ErrNotSupported, func() error { return second(rdmacm.Listen(ctx, wild, nil)) }},
		{"rdmacm.DeviceForAddr", rdmacm.ErrNotSupported, func() error {
			return third(rdmacm.DeviceForAddr(netip.MustParseAddr("192.0.2.1")))
		}},

		{"nvmeof.Connect", nvmeof.ErrNotSupported, func() error { return second(nvmeof.Connect(ctx, dst, "nqn.2014-08.org.example:x", nil)) }},
		{"nvmeof.Discover", nvmeof.ErrNotSupported, func() error { return second(nvmeof.Discover(ctx, dst, nil)) }},
		{"nvmeof.Listen", nvmeof.ErrNotSupported, func() error {
			ns, err := nvmeof.MemoryNamespace(1<<20, 512)
			if err != nil {
				return err
			}
			defer ns.Close()
			return second(nvmeof.Listen(ctx, wild, nil, &nvmeof.Subsystem{NQN: "nqn.2014-08.org.example:x", Namespaces: []*nvmeof.TargetNamespace{ns}}))
		}},
		{"rsocket.Dial", rsocket.ErrNotSupported, func() error { return second(rsocket.Dial(ctx, "rdma", dst)) }},
		{"rsocket.Listen", rsocket.ErrNotSupported, func() error { return second(rsocket.Listen(ctx, "rdma", wild)) }},
		{"rsocket.Dialer.DialContext", rsocket.ErrNotSupported, func() error {
			return second((&rsocket.Dialer{}).DialContext(ctx, "rdma", dst))
		}},
		{"rsocket.ListenConfig.Listen", rsocket.ErrNotSupported, func() error {
			return second((&rsocket.ListenConfig{}).Listen(ctx, "rdma", wild))
		}},

		{"netlinkrdma.LinkAdd", netlinkrdma.ErrNotSupported, func() error { return netlinkrdma.LinkAdd("rxe0", "eth0") }},
		{"netlinkrdma.LinkDel", netlinkrdma.ErrNotSupported, func() error { return netlinkrdma.LinkDel("rxe0") }},
		{"netlinkrdma.NetnsMode", netlinkrdma.ErrNotSupported, func() error { return second(netlinkrdma.NetnsMode()) }},
		{"netlinkrdma.CopyOnFork", netlinkrdma.ErrNotSupported, func() error { return second(netlinkrdma.CopyOnFork()) }},
		{"netlinkrdma.DeviceChardev", netlinkrdma.ErrNotSupported, func() error {
			return second(netlinkrdma.DeviceChardev(0, "uverbs"))
		}},
		{"netlinkrdma.GlobalChardev", netlinkrdma.ErrNotSupported, func() error {
			return second(netlinkrdma.GlobalChardev("rdma_cm"))
		}},
	}
	for _, c := range cases {
		err := c.call()
		t.Logf("%s: %v", c.name, err)
		if !errors.Is(err, c.want) || !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: got %v, want an error matching ErrNotSupported and errors.ErrUnsupported", c.name, err)
		}
	}
}
