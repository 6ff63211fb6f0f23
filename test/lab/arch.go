//go:build linux

package lab

import (
	"fmt"
	"runtime"
)

// Guest architectures (Config.Arch). amd64 guests run the host's own
// binaries; arm64 guests run arm64 binaries (GOARCH=arm64 test binaries) on
// an arm64 userland built from Debian's packages (see userland.go).
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
)

// guestArch is what differs between the guest architectures.
type guestArch struct {
	name  string // Debian's architecture name, also GOARCH
	qemu  string // the QEMU binary
	pkg   string // the Debian package with the QEMU binary
	mach  []string
	tcg   []string // -cpu under TCG
	cons  string   // the first serial port's device name, for console=
	clock string   // kernel parameters that pick a clock with a vDSO read
	elfOK bool     // the kernel package's bzImage holds a PVH ELF kernel (vmlinux.go)
}

// guestArchs: the arm64 guest is QEMU's "virt" board with the "max" CPU.
// pauth-impdef=on makes TCG compute pointer authentication codes with a
// cheap implementation-defined function instead of QARMA, the main cost of
// running an arm64 kernel under TCG (QEMU docs, "Arm CPU Features").
var guestArchs = map[string]*guestArch{
	ArchAMD64: {
		name: ArchAMD64, qemu: "qemu-system-x86_64", pkg: "qemu-system-x86",
		tcg: []string{"-cpu", "max"}, cons: "ttyS0", elfOK: true,
		// Under TCG the 6.1 kernel's clocksource watchdog rejects the TSC
		// and falls back to the HPET, which the vDSO cannot read: every
		// clock_gettime becomes a system call, about 4 µs where the TSC
		// costs 0.2 µs, and Go reads the clock far more often than C
		// (docs/testing.md §2). QEMU derives every vCPU's TSC from one
		// virtual clock, so it is safe to trust (tsc=reliable turns the
		// watchdog off; kernel-parameters.txt).
		clock: "clocksource=tsc tsc=reliable",
	},
	ArchARM64: {
		name: ArchARM64, qemu: "qemu-system-aarch64", pkg: "qemu-system-arm",
		mach: []string{"-M", "virt"},
		tcg:  []string{"-cpu", "max,pauth-impdef=on"}, cons: "ttyAMA0",
	},
}

// archFor returns the guest architecture named a ("" is amd64).
func archFor(a string) (*guestArch, error) {
	if a == "" {
		a = ArchAMD64
	}
	ga, ok := guestArchs[a]
	if !ok {
		return nil, fmt.Errorf("unknown guest architecture %q; use -arch amd64 or -arch arm64", a)
	}
	return ga, nil
}

// foreign reports whether the guest cannot run the host's binaries: the lab
// then gives it a userland of its own (userland.go).
func (a *guestArch) foreign() bool { return a.name != runtime.GOARCH }
