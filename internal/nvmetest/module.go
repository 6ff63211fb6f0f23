//go:build linux

package nvmetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// envModules names the directory where the lab's guest keeps the modules
// it loaded at boot (test/lab/internal/proto EnvModules): the guest's
// /lib/modules is the host's, so modprobe cannot load them again.
const envModules = "GOVERBS_LAB_MODULES"

// ModuleLoaded reports whether module name is loaded (/sys/module/name
// with its refcnt: a built-in has the directory without it).
func ModuleLoaded(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/module", name, "refcnt"))
	return err == nil
}

// ModuleRefs returns module name's reference count, what lsmod's "Used by"
// shows: references taken with try_module_get and the modules that
// depend on it.
func ModuleRefs(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join("/sys/module", name, "refcnt"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// UnloadModule unloads module name with delete_module(2) and O_NONBLOCK,
// as rmmod does: while its reference count is not 0 the kernel refuses
// with EAGAIN (EWOULDBLOCK; kernel: kernel/module/main.c try_stop_module),
// and while another module depends on it, with EAGAIN too.
func UnloadModule(name string) error {
	if err := unix.DeleteModule(name, unix.O_NONBLOCK); err != nil {
		return fmt.Errorf("nvmetest: unloading module %s: %w", name, err)
	}
	return nil
}

// LoadLabModule loads module name again from the modules the lab's guest
// loaded at boot (GOVERBS_LAB_MODULES), with finit_module(2). A module
// loaded already is left alone. Outside the lab it fails.
func LoadLabModule(name string) error {
	if ModuleLoaded(name) {
		return nil
	}
	dir := os.Getenv(envModules)
	if dir == "" {
		return fmt.Errorf("nvmetest: loading module %s: %s is not set (only the lab's guest keeps the modules it loaded)", name, envModules)
	}
	f, err := os.Open(filepath.Join(dir, name+".ko"))
	if err != nil {
		return fmt.Errorf("nvmetest: loading module %s: %w", name, err)
	}
	defer f.Close()
	klog := openKernelLog()
	defer klog.close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("nvmetest: loading module %s from %s: %w%s", name, f.Name(), err, klog.report())
	}
	return nil
}
