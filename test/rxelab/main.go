//go:build linux

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

	"github.com/goverbs/rdma/internal/version"
	"github.com/goverbs/rdma/test/lab"
	"github.com/goverbs/rdma/test/lab/peer"
)

func main() {
	version.Handle("rxelab")
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("rxelab", flag.ContinueOnError)
	kernelDefault := os.Getenv("GOVERBS_LAB_KERNEL")
	if kernelDefault == "" {
		kernelDefault = lab.DefaultKernel
	}
	kernel := fs.String("kernel", kernelDefault, "kernel series: major.minor of any series Debian serves (5.10, 6.1, 6.12, 6.18, 7.3 ...) or newest (env GOVERBS_LAB_KERNEL)")
	archDefault := os.Getenv("GOVERBS_LAB_ARCH")
	if archDefault == "" {
		archDefault = lab.ArchAMD64
	}
	arch := fs.String("arch", archDefault, "guest architecture: amd64 or arm64 (env GOVERBS_LAB_ARCH); arm64 runs arm64 binaries (GOARCH=arm64) on an arm64 userland")
	timeout := fs.Duration("timeout", lab.DefaultTimeout, "stop the VM if the command runs longer than this")
	bootTimeout := fs.Duration("boot-timeout", lab.DefaultBootTimeout, "stop the VM if the command has not started after this")
	verbose := fs.Bool("v", false, "show the kernel console and progress on stderr")
	inPeer := fs.Bool("peer", false, "inside the primary guest of the two-guest lab: run CMD in the peer guest")
	powerOff := fs.Bool("poweroff-peer", false, "inside the primary guest of the two-guest lab: power the peer guest off at once")
	noSiw := fs.Bool("no-siw", false, "boot without siw (soft-iWARP): no siw.ko build, no siw1/siw2 (amd64 only; arm64 guests never have siw)")
	prepare := fs.Bool("prepare", false, "download and prepare the kernel (and siw.ko) without booting; print the kernel package and whether the guest has siw")
	guests := fs.Int("guests", 1, "1, or 2: a peer VM joined by a network of their own (see package test/lab/peer)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: rxelab [-kernel 6.1|6.12|7.3|newest|...] [-arch amd64|arm64] [-guests 1|2] [-timeout 10m] [-v] [--] CMD [ARGS...]\n"+
			"       rxelab -peer [--] CMD [ARGS...]    (in the primary guest)\n"+
			"       rxelab -poweroff-peer              (in the primary guest)\n"+
			"       rxelab [-kernel SERIES] [-arch ARCH] -prepare\n\n"+
			"Runs CMD as root in a QEMU VM with a Debian kernel and rdma_rxe devices\n"+
			"(rxe0 on lo, rxe1/rxe2 on the veth pair veth0/veth1) and, on amd64, siw\n"+
			"devices built by the lab (siw1/siw2 on veth2/veth3); with -guests 2 also\n"+
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
	sigs := make(chan os.Signal, 4)
	// SIGQUIT too: go test sends it to the -exec wrapper on a test timeout,
	// and the test binary in the guest should dump its goroutines.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)

	if *powerOff {
		if err := peer.PowerOff(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "rxelab: %v\n", err)
			return lab.ExitLabFailure
		}
		return 0
	}
	if fs.NArg() == 0 && !*prepare {
		fs.Usage()
		return 2
	}
	if *inPeer {
		return runInPeer(fs.Args(), sigs)
	}

	code, err := lab.Run(context.Background(), lab.Config{
		Kernel:      *kernel,
		Arch:        *arch,
		Timeout:     *timeout,
		BootTimeout: *bootTimeout,
		Verbose:     *verbose,
		Guests:      *guests,
		NoSiw:       *noSiw,
		Prepare:     *prepare,
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

// runInPeer runs args in the peer guest with this process's stdout and
// stderr, passes it the signals received here and returns its status.
func runInPeer(args []string, sigs <-chan os.Signal) int {
	cmd := peer.Command(context.Background(), args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return peerStatus(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			return peerStatus(err)
		case s := <-sigs:
			if n, ok := s.(syscall.Signal); ok {
				_ = cmd.Signal(n)
			}
		}
	}
}

func peerStatus(err error) int {
	var ee *peer.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.Msg != "" {
			fmt.Fprintf(os.Stderr, "rxelab: %s\n", ee.Msg)
		}
		return ee.Code
	}
	fmt.Fprintf(os.Stderr, "rxelab: %v\n", err)
	return lab.ExitLabFailure
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.ReplaceAll(s, "\r", ""), "\n", "\n    ")
}
