package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/netlinkrdma"
	"github.com/goverbs/rdma/uverbs"
	"github.com/vishvananda/netlink"
)

func TestMain(m *testing.M) { testutil.Main(m) }

type fakeOps struct {
	added   [][2]string
	deleted []string
	err     error
	devs    []uverbs.DeviceInfo
}

func (f *fakeOps) ops() ops {
	return ops{
		add: func(name, netdev string) error {
			f.added = append(f.added, [2]string{name, netdev})
			return f.err
		},
		del: func(name string) error {
			f.deleted = append(f.deleted, name)
			return f.err
		},
		devices: func() ([]uverbs.DeviceInfo, error) { return f.devs, f.err },
	}
}

var labDevs = []uverbs.DeviceInfo{
	{Index: 1, Name: "rxe0", Ports: []uverbs.PortInfo{{Number: 1, State: uverbs.PortActive,
		PhysState: uverbs.PhysLinkUp, Netdev: "lo", NetdevIndex: 1}}},
	{Index: 2, Name: "rxe1", Ports: []uverbs.PortInfo{{Number: 1, State: uverbs.PortDown,
		PhysState: uverbs.PhysDisabled, Netdev: "veth0", NetdevIndex: 5}}},
	{Index: 3, Name: "mlx5_0", Ports: []uverbs.PortInfo{
		{Number: 1, State: uverbs.PortActive, PhysState: uverbs.PhysLinkUp},
		{Number: 2, State: uverbs.PortInit, PhysState: uverbs.PhysPolling}}},
}

func TestRun(t *testing.T) {
	tests := []struct {
		args    []string
		err     error
		code    int
		stdout  string
		stderr  string // substring
		added   [][2]string
		deleted []string
		oneLine bool // stderr is one line
	}{
		{args: nil, code: 2, stderr: "missing command"},
		{args: []string{"--help"}, code: 0, stdout: usage},
		{args: []string{"frob"}, code: 2, stderr: `unknown command "frob"`},
		{args: []string{"add", "rxe0", "netdev", "eth0"}, code: 0, added: [][2]string{{"rxe0", "eth0"}}},
		{args: []string{"add", "rxe0", "type", "rxe", "netdev", "eth0"}, code: 0, added: [][2]string{{"rxe0", "eth0"}}},
		{args: []string{"add", "rxe0", "netdev", "eth0", "type", "rxe"}, code: 0, added: [][2]string{{"rxe0", "eth0"}}},
		{args: []string{"add", "rxe0", "type", "siw", "netdev", "eth0"}, code: 2, stderr: `"siw" is not supported`},
		{args: []string{"add", "rxe0"}, code: 2, stderr: "netdev NETDEV"},
		{args: []string{"add", "rxe0", "netdev"}, code: 2, stderr: `"netdev" needs a value`},
		{args: []string{"add"}, code: 2, stderr: "needs a device name"},
		{args: []string{"add", "rxe0", "dev", "eth0"}, code: 2, stderr: `unknown keyword "dev"`},
		{args: []string{"add", "rxe0", "netdev", "eth0"}, err: errors.New("rdma link add rxe0: boom"), code: 1,
			stderr: "rdma-link: rdma link add rxe0: boom\n", oneLine: true, added: [][2]string{{"rxe0", "eth0"}}},
		{args: []string{"del", "rxe0"}, code: 0, deleted: []string{"rxe0"}},
		{args: []string{"delete", "rxe0"}, code: 0, deleted: []string{"rxe0"}},
		{args: []string{"del"}, code: 2, stderr: "exactly one device name"},
		{args: []string{"del", "a", "b"}, code: 2, stderr: "exactly one device name"},
		{args: []string{"del", "rxe0"}, err: errors.New("gone"), code: 1, stderr: "rdma-link: gone\n", oneLine: true,
			deleted: []string{"rxe0"}},
		{args: []string{"show"}, code: 0, stdout: "link rxe0/1 state ACTIVE physical_state LINK_UP netdev lo\n" +
			"link rxe1/1 state DOWN physical_state DISABLED netdev veth0\n" +
			"link mlx5_0/1 state ACTIVE physical_state LINK_UP\n" +
			"link mlx5_0/2 state INIT physical_state POLLING\n"},
		{args: []string{"show", "rxe1"}, code: 0, stdout: "link rxe1/1 state DOWN physical_state DISABLED netdev veth0\n"},
		{args: []string{"show", "mlx5_0/2"}, code: 0, stdout: "link mlx5_0/2 state INIT physical_state POLLING\n"},
		{args: []string{"show", "mlx5_0/3"}, code: 1, stderr: "has no port 3", oneLine: true},
		{args: []string{"show", "rxe9"}, code: 1, stderr: `no RDMA device "rxe9"`, oneLine: true},
		{args: []string{"show", "rxe0/x"}, code: 2, stderr: `bad port "x"`},
		{args: []string{"show", "rxe0/0"}, code: 2, stderr: `bad port "0"`},
		{args: []string{"show", "/1"}, code: 2, stderr: "want NAME or NAME/PORT"},
		{args: []string{"show", "a", "b"}, code: 2, stderr: "at most one"},
		{args: []string{"show"}, err: errors.New("no netlink"), code: 1, stderr: "rdma-link: no netlink\n", oneLine: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := &fakeOps{err: tt.err, devs: labDevs}
			var stdout, stderr bytes.Buffer
			code := runWith(f.ops(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, stderr.String())
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.stderr)
			}
			if tt.oneLine && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("error is not one line: %q", stderr.String())
			}
			// Bad usage, and only bad usage, prints the usage text.
			if (tt.code == exitUsage) != strings.Contains(stderr.String(), "usage:") {
				t.Errorf("exit %d with usage text %v", code, !(tt.code == exitUsage))
			}
			if fmt.Sprint(f.added) != fmt.Sprint(tt.added) || fmt.Sprint(f.deleted) != fmt.Sprint(tt.deleted) {
				t.Errorf("added %v deleted %v, want %v %v", f.added, f.deleted, tt.added, tt.deleted)
			}
		})
	}
}

// Lab test: the command against the real kernel, cross-checked with
// iproute2 and rdma-core.

func TestLabCommand(t *testing.T) {
	testutil.RequireRDMA(t)
	testutil.RequireRoot(t)

	// run is main without os.Exit: same parsing, output and exit codes.
	rdmaLink := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}

	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "gvrl0a"}, PeerName: "gvrl0b"}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("ip link add gvrl0a type veth peer name gvrl0b: %v", err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(veth) })
	for _, n := range []string{"gvrl0a", "gvrl0b"} {
		l, err := netlink.LinkByName(n)
		if err == nil {
			err = netlink.LinkSetUp(l)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"gvrl0", "gvrl1"} {
		t.Cleanup(func() { _ = netlinkrdma.LinkDel(n) })
	}

	// Added by rdma-link, seen by iproute2 and rdma-core.
	if out, errOut, code := rdmaLink("add", "gvrl0", "netdev", "gvrl0a"); code != 0 {
		t.Fatalf("rdma-link add: exit %d\n%s%s", code, out, errOut)
	}
	if out := testutil.RunTool(t, "rdma", "link", "show"); !strings.Contains(out, "link gvrl0/1 state ACTIVE physical_state LINK_UP netdev gvrl0a") {
		t.Errorf("`rdma link show` does not list gvrl0 on gvrl0a:\n%s", out)
	}
	if out := testutil.RunTool(t, "ibv_devices"); !strings.Contains(out, "gvrl0") {
		t.Errorf("ibv_devices does not list gvrl0:\n%s", out)
	}

	// Added by iproute2, seen by rdma-link, in the same words.
	testutil.RunTool(t, "rdma", "link", "add", "gvrl1", "type", "rxe", "netdev", "gvrl0b")
	ours, errOut, code := rdmaLink("show", "gvrl1")
	if code != 0 {
		t.Fatalf("rdma-link show gvrl1: exit %d: %s", code, errOut)
	}
	theirs := testutil.RunTool(t, "rdma", "link", "show", "gvrl1/1")
	if strings.TrimSpace(ours) != strings.TrimSpace(theirs) ||
		!strings.Contains(ours, "link gvrl1/1 state ACTIVE physical_state LINK_UP netdev gvrl0b") {
		t.Errorf("rdma-link show gvrl1:\n%s\nrdma link show gvrl1/1:\n%s", ours, theirs)
	}
	all, _, code := rdmaLink("show")
	if code != 0 || !strings.Contains(all, "link gvrl0/1 ") || !strings.Contains(all, "link gvrl1/1 ") {
		t.Errorf("rdma-link show (exit %d):\n%s", code, all)
	}

	// A second rxe on the same netdev: one clear line, exit 1.
	_, errOut, code = rdmaLink("add", "gvrl2", "netdev", "gvrl0a")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "rdma-link del gvrl0") {
		t.Errorf("second rxe on gvrl0a: exit %d, stderr %q", code, errOut)
	}

	for _, n := range []string{"gvrl0", "gvrl1"} {
		if _, errOut, code := rdmaLink("del", n); code != 0 {
			t.Errorf("rdma-link del %s: exit %d: %s", n, code, errOut)
		}
	}
	if out := testutil.RunTool(t, "rdma", "link", "show"); strings.Contains(out, "gvrl") {
		t.Errorf("`rdma link show` still lists deleted links:\n%s", out)
	}
	if _, errOut, code := rdmaLink("del", "gvrl0"); code != 1 || !strings.Contains(errOut, "no RDMA device") {
		t.Errorf("rdma-link del of a missing device: exit %d, stderr %q", code, errOut)
	}
}
