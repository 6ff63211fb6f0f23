package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goverbs/rdma/internal/version"
	"github.com/goverbs/rdma/uverbs"
)

func main() {
	version.Handle("rdma-devinfo")
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return runWith(uverbs.Devices, args, stdout, stderr)
}

// runWith is run with the devices listed by listDevices (tests give a
// lister of their own to reach the no-device path).
func runWith(listDevices func() ([]uverbs.DeviceInfo, error), args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdma-devinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	devName := fs.String("d", "", "use RDMA device `DEVICE` (default: all devices)")
	port := fs.Int("i", 0, "print only port `PORT` (default: all ports)")
	verbose := fs.Bool("v", false, "print all the attributes of the device(s)")
	list := fs.Bool("l", false, "print only the device names")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: rdma-devinfo [-d DEVICE] [-i PORT] [-v] [-l]\n\nPrints RDMA device attributes like ibv_devinfo.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *port < 0 {
		fs.Usage()
		return 2
	}

	devs, err := listDevices()
	if err != nil {
		fmt.Fprintln(stderr, "rdma-devinfo:", err)
		return 1
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()

	if *list {
		s := "s"
		if len(devs) == 1 {
			s = ""
		}
		fmt.Fprintf(out, "%d HCA%s found:\n", len(devs), s)
		for _, d := range devs {
			fmt.Fprintf(out, "\t%s\n", d.Name)
		}
		fmt.Fprintln(out)
		return 0
	}

	if *devName != "" {
		d, err := uverbs.LookupDevice(*devName)
		if err != nil {
			fmt.Fprintln(stderr, "rdma-devinfo:", err)
			return 1
		}
		devs = []uverbs.DeviceInfo{d}
	}
	code := 0
	for _, d := range devs {
		r, err := collect(d, *verbose, *port)
		if err != nil {
			out.Flush()
			fmt.Fprintf(stderr, "rdma-devinfo: %s: %v\n", d.Name, err)
			code = 1
			continue
		}
		writeReport(out, r, *verbose, *port)
	}
	return code
}

// collect opens the device and queries everything printed about it.
func collect(d uverbs.DeviceInfo, verbose bool, onlyPort int) (*report, error) {
	ctx, err := uverbs.OpenDevice(d)
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	attr, err := ctx.Query()
	if err != nil {
		return nil, err
	}
	if onlyPort > attr.PhysPortCnt {
		return nil, fmt.Errorf("port %d does not exist: the device has %d port(s)", onlyPort, attr.PhysPortCnt)
	}
	r := &report{Dev: d, Attr: attr, NumCompVectors: ctx.NumCompVectors()}
	// rdma-core reads board_id from sysfs (libibverbs/examples/devinfo.c).
	if b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", d.Name, "board_id")); err == nil {
		r.BoardID = strings.TrimRight(string(b), "\n")
	}
	for n := 1; n <= attr.PhysPortCnt; n++ {
		if onlyPort != 0 && n != onlyPort {
			continue
		}
		pa, err := ctx.QueryPort(uint8(n))
		if err != nil {
			return nil, err
		}
		pr := portReport{Num: n, Attr: pa}
		if verbose {
			if pr.GIDs, err = ctx.GIDs(uint8(n)); err != nil && !errors.Is(err, uverbs.ErrNotSupported) {
				return nil, err
			}
		}
		r.Ports = append(r.Ports, pr)
	}
	return r, nil
}
