package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/goverbs/rdma/internal/version"
	"github.com/goverbs/rdma/netlinkrdma"
	"github.com/goverbs/rdma/uverbs"
)

const usage = `usage:
  rdma-link add NAME netdev NETDEV          create a Soft-RoCE (rxe) device NAME on NETDEV
  rdma-link add NAME type rxe netdev NETDEV (the same, in iproute2's words)
  rdma-link del NAME                        remove the RDMA device NAME (also: delete)
  rdma-link show [NAME[/PORT]]              list RDMA devices and their ports
`

const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	version.Handle("rdma-link")
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// ops is what run needs from the kernel; tests give runWith their own.
type ops struct {
	add     func(name, netdev string) error
	del     func(name string) error
	devices func() ([]uverbs.DeviceInfo, error)
}

var kernel = ops{add: netlinkrdma.LinkAdd, del: netlinkrdma.LinkDel, devices: devices}

// devices is uverbs.Devices with no device meaning an empty list, as
// `rdma link show` prints nothing then.
func devices() ([]uverbs.DeviceInfo, error) {
	devs, err := uverbs.Devices()
	if errors.Is(err, uverbs.ErrNoDevice) {
		return nil, nil
	}
	return devs, err
}

func run(args []string, stdout, stderr io.Writer) int {
	return runWith(kernel, args, stdout, stderr)
}

func runWith(k ops, args []string, stdout, stderr io.Writer) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "rdma-link: "+format+"\n%s", append(a, usage)...)
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "rdma-link: %v\n", err)
		return exitFail
	}
	if len(args) == 0 {
		return bad("missing command")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK

	case "add":
		name, netdev, err := parseAdd(rest)
		if err != nil {
			return bad("%v", err)
		}
		if err := k.add(name, netdev); err != nil {
			return fail(err)
		}
		return exitOK

	case "del", "delete":
		if len(rest) != 1 || rest[0] == "" {
			return bad("%s takes exactly one device name", cmd)
		}
		if err := k.del(rest[0]); err != nil {
			return fail(err)
		}
		return exitOK

	case "show", "list", "ls":
		if len(rest) > 1 {
			return bad("show takes at most one NAME or NAME/PORT")
		}
		var f filter
		if len(rest) == 1 {
			var err error
			if f, err = parseFilter(rest[0]); err != nil {
				return bad("%v", err)
			}
		}
		devs, err := k.devices()
		if err != nil {
			return fail(err)
		}
		lines, err := format(devs, f)
		if err != nil {
			return fail(err)
		}
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
		return exitOK
	}
	return bad("unknown command %q", args[0])
}

// parseAdd accepts "NAME netdev NETDEV" and "NAME type rxe netdev NETDEV",
// keywords in any order after NAME as iproute2 allows.
func parseAdd(args []string) (name, netdev string, err error) {
	if len(args) == 0 || args[0] == "" {
		return "", "", fmt.Errorf("add needs a device name, e.g. `rdma-link add rxe0 netdev eth0`")
	}
	name = args[0]
	for rest := args[1:]; len(rest) > 0; rest = rest[2:] {
		if len(rest) < 2 {
			return "", "", fmt.Errorf("%q needs a value", rest[0])
		}
		switch key, val := rest[0], rest[1]; key {
		case "netdev":
			netdev = val
		case "type":
			if val != "rxe" {
				return "", "", fmt.Errorf("link type %q is not supported: only rxe (Soft-RoCE)", val)
			}
		default:
			return "", "", fmt.Errorf("unknown keyword %q for add", key)
		}
	}
	if netdev == "" {
		return "", "", fmt.Errorf("add needs `netdev NETDEV`, the network device to put %s on (see `ip link`)", name)
	}
	return name, netdev, nil
}

type filter struct {
	name string
	port uint32 // 0: all ports
}

func parseFilter(s string) (filter, error) {
	name, port, hasPort := strings.Cut(s, "/")
	if name == "" {
		return filter{}, fmt.Errorf("bad device %q: want NAME or NAME/PORT", s)
	}
	f := filter{name: name}
	if hasPort {
		p, err := strconv.ParseUint(port, 10, 32)
		if err != nil || p == 0 {
			return filter{}, fmt.Errorf("bad port %q in %q: ports are numbered from 1", port, s)
		}
		f.port = uint32(p)
	}
	return f, nil
}

// format renders devices as `rdma link show` does, one line per port.
func format(devs []uverbs.DeviceInfo, f filter) ([]string, error) {
	var lines []string
	found := false
	for _, d := range devs {
		if f.name != "" && d.Name != f.name {
			continue
		}
		found = true
		for _, p := range d.Ports {
			if f.port != 0 && uint32(p.Number) != f.port {
				continue
			}
			l := fmt.Sprintf("link %s/%d state %s physical_state %s", d.Name, p.Number, p.State, p.PhysState)
			if p.Netdev != "" {
				l += " netdev " + p.Netdev
			}
			lines = append(lines, l)
		}
	}
	switch {
	case f.name != "" && !found:
		return nil, fmt.Errorf("no RDMA device %q: `rdma-link show` lists them all", f.name)
	case f.port != 0 && len(lines) == 0:
		return nil, fmt.Errorf("RDMA device %s has no port %d", f.name, f.port)
	}
	return lines, nil
}
