package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/goverbs/rdma/test/lab"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("rxelab", flag.ContinueOnError)
	kernelDefault := os.Getenv("GOVERBS_LAB_KERNEL")
	if kernelDefault == "" {
		kernelDefault = lab.DefaultKernel
	}
	kernel := fs.String("kernel", kernelDefault, "kernel series: 6.1 or 6.12 (env GOVERBS_LAB_KERNEL)")
	timeout := fs.Duration("timeout", lab.DefaultTimeout, "stop the VM if the command runs longer than this")
	bootTimeout := fs.Duration("boot-timeout", lab.DefaultBootTimeout, "stop the VM if the command has not started after this")
	verbose := fs.Bool("v", false, "show the kernel console and progress on stderr")
	guests := fs.Int("guests", 1, "1, or 2: a peer VM joined by a network of their own (see package test/lab/peer)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: rxelab [-kernel 6.1|6.12] [-guests 1|2] [-timeout 10m] [-v] [--] CMD [ARGS...]\n\n"+
			"Runs CMD as root in a QEMU VM with a Debian kernel and rdma_rxe devices\n"+
			"(rxe0 on lo, rxe1/rxe2 on the veth pair veth0/veth1); with -guests 2 also\n"+
			"rxe_a on eth0 (10.78.0.1), joined to a peer VM's rxe_b (10.78.0.2).\n"+
			"Cache in %s.\n\n", lab.DefaultCacheDir())
		fs.PrintDefaults()
	}
	// flag stops at the first non-flag argument, so the command's own flags
	// (go test -exec passes -test.*) are left alone.
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}

	sigs := make(chan os.Signal, 4)
	// SIGQUIT too: go test sends it to the -exec wrapper on a test timeout,
	// and the test binary in the guest should dump its goroutines.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)

	code, err := lab.Run(context.Background(), lab.Config{
		Kernel:      *kernel,
		Timeout:     *timeout,
		BootTimeout: *bootTimeout,
		Verbose:     *verbose,
		Guests:      *guests,
		Args:        fs.Args(),
		Signals:     sigs,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: %v\n", err)
		var le *lab.Error
		if errors.As(err, &le) && le.KernelLog != "" {
			fmt.Fprintf(os.Stderr, "lab: last lines of the kernel console:\n%s\n", indent(le.KernelLog))
		}
	}
	return code
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", "\n    ")
}
