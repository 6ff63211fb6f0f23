package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// kernelMeta is the Debian metapackage of a kernel series for this
// architecture: Series names the amd64 one, and Debian names the others the
// same with the architecture in place of "amd64" (linux-image-arm64,
// linux-image-6.12-arm64).
func (a *guestArch) kernelMeta(series string) string {
	return strings.TrimSuffix(Series[series], ArchAMD64) + a.name
}

// The apt state of a foreign architecture lives in the cache
// (cache/apt-ARCH): apt-get and apt-cache read the host's sources but keep
// their own package lists and an empty dpkg status, so the host's dpkg
// configuration (its architectures) is left alone and no root is needed.
func (e *env) foreignAptDir(arch string) string {
	return filepath.Join(e.cache, "apt-"+arch)
}

// foreignAptOpts are the apt options that select that state.
func (e *env) foreignAptOpts(arch string) []string {
	d := e.foreignAptDir(arch)
	return []string{
		"-o", "APT::Architecture=" + arch,
		"-o", "APT::Architectures=" + arch,
		"-o", "Dir::State=" + filepath.Join(d, "state"),
		"-o", "Dir::State::status=" + filepath.Join(d, "state", "status"),
		"-o", "Dir::Cache=" + filepath.Join(d, "cache"),
		"-o", "APT::Sandbox::User=root",
	}
}

// foreignAptUpdate fetches the package lists of arch into its apt state,
// once per process.
func (e *env) foreignAptUpdate(arch string) error {
	e.foreignUpdateOnce.Do(func() {
		d := e.foreignAptDir(arch)
		for _, p := range []string{"state/lists/partial", "cache/archives/partial"} {
			if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
				e.foreignUpdateErr = err
				return
			}
		}
		status := filepath.Join(d, "state", "status")
		if !fileExists(status) {
			if err := os.WriteFile(status, nil, 0o644); err != nil {
				e.foreignUpdateErr = err
				return
			}
		}
		unlock, err := e.lockFile("apt-" + arch)
		if err != nil {
			e.foreignUpdateErr = err
			return
		}
		defer unlock()
		e.logf("running apt-get update for %s ...", arch)
		e.foreignUpdateErr = e.apt(append(e.foreignAptOpts(arch), "update")...)
	})
	return e.foreignUpdateErr
}

// foreignAptHasLists reports whether apt-get update has run for arch.
func (e *env) foreignAptHasLists(arch string) bool {
	m, _ := filepath.Glob(filepath.Join(e.foreignAptDir(arch), "state", "lists", "*_Packages*"))
	return len(m) > 0
}
