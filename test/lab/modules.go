//go:build linux

package lab

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// guestModules are the modules the guest loads (with their dependencies):
// 9p and virtio for the host file systems and the control port, veth for the
// CM topology, the RDMA stack, and crc32_generic: up to 6.x rxe asks the
// crypto API for "crc32" (kernel: drivers/infiniband/sw/rxe/rxe_icrc.c
// rxe_icrc_init, crypto_alloc_shash("crc32")), and `rdma link add` fails
// with ENOENT without it. libcrc32c is for siw.ko, which the lab builds
// (siw.go): its depends= names ib_core and libcrc32c (and ib_uverbs on
// 6.12).
//
// nvme_rdma and nvmet_rdma are the kernel's NVMe over RDMA host and target,
// which internal/nvmetest drives: the host's transport registers itself
// with nvme_fabrics as "rdma" (drivers/nvme/host/rdma.c
// nvme_rdma_init_module, nvmf_register_transport), the target's with nvmet
// as NVMF_TRTYPE_RDMA (drivers/nvme/target/rdma.c nvmet_rdma_init,
// nvmet_register_transport). Both cores would load the transport with
// request_module ("nvme-rdma" in nvmf_create_ctrl, "nvmet-transport-1" in
// nvmet_enable_port), which finds nothing here: the guest's /lib/modules is
// the host's. Their dependencies come with them: nvme_fabrics, nvme_core,
// nvmet, configfs (nvmet's configuration interface; a module in Debian's
// kernels) and, by kernel, t10_pi with its CRC modules (5.10, 6.1) or
// nvme_auth and nvme_keyring (6.12 and later).
var guestModules = []string{
	"virtio_pci", "virtio_console", "9pnet_virtio", "9p", "virtio_net", "veth",
	"crc32_generic", "ib_uverbs", "rdma_ucm", "rdma_rxe", "libcrc32c",
	"nvme_rdma", "nvmet_rdma",
}

// goneModules are guestModules that later kernels no longer have, neither
// as a module nor built in (Debian's 7.3 has neither; 6.18 has both), and
// why the guest does without them there. Any other missing module fails
// the kernel's preparation.
var goneModules = map[string]string{
	"crc32_generic": "rxe computes its ICRC with crc32_le() of the crc32 library (7.3: sw/rxe/rxe_icrc.c rxe_crc32)",
	"libcrc32c":     "siw calls crc32c() of the crc32 library (7.3: sw/siw/siw.h)",
}

// softdepAliases names the module behind an alias that a soft dependency
// names instead of a module, where the dependency must be loaded first:
// libcrc32c's "softdep=pre: crc32c" is an alias, and libcrc32c fails to
// load with ENOENT unless some module already provides crc32c (kernel:
// lib/libcrc32c.c libcrc32c_mod_init, crypto_alloc_shash("crc32c")); siw
// asks for it too (drivers/infiniband/sw/siw/siw_main.c siw_init_module).
// Debian's packages ship no modules.alias to look aliases up in.
var softdepAliases = map[string]string{"crc32c": "crc32c_generic"}

// module is a kernel module ready for init_module(2).
type module struct {
	name string
	deps []string // modules it needs loaded first (not built-in ones)
	data []byte   // uncompressed ELF image
}

// moduleTree indexes lib/modules/<release> of an unpacked kernel package.
// Debian's packages ship no modules.dep (depmod runs at install time), so
// dependencies come from each module's .modinfo "depends=" field.
type moduleTree struct {
	dir     string
	paths   map[string]string // module name -> file
	builtin map[string]bool
}

// modName turns a file name into a module name: the kernel treats '-' and
// '_' alike and reports '_'.
func modName(file string) string {
	base := filepath.Base(file)
	base = strings.TrimSuffix(base, ".xz")
	base = strings.TrimSuffix(base, ".ko")
	return strings.ReplaceAll(base, "-", "_")
}

func openModuleTree(dir string) (*moduleTree, error) {
	t := &moduleTree{dir: dir, paths: map[string]string{}, builtin: map[string]bool{}}
	err := filepath.WalkDir(filepath.Join(dir, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".ko") || strings.HasSuffix(p, ".ko.xz")) {
			t.paths[modName(p)] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("indexing kernel modules: %w", err)
	}
	f, err := os.Open(filepath.Join(dir, "modules.builtin"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			t.builtin[modName(line)] = true
		}
	}
	return t, sc.Err()
}

// resolve returns the modules to load for roots, every module after its
// dependencies. Built-in modules are left out. Soft dependencies are
// followed when the module exists.
func (t *moduleTree) resolve(roots []string) ([]module, error) {
	var out []module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string, soft bool) error
	visit = func(name, from string, soft bool) error {
		name = strings.ReplaceAll(name, "-", "_")
		if t.builtin[name] || state[name] == 2 {
			return nil
		}
		if state[name] == 1 {
			return fmt.Errorf("module dependency cycle at %s", name)
		}
		p, ok := t.paths[name]
		if !ok {
			if _, gone := goneModules[name]; soft || (gone && from == "") {
				return nil
			}
			if from != "" {
				return fmt.Errorf("module %s (needed by %s) is neither built in nor under %s", name, from, t.dir)
			}
			return fmt.Errorf("module %s is neither built in nor under %s", name, t.dir)
		}
		state[name] = 1
		data, err := readModuleFile(p)
		if err != nil {
			return err
		}
		info, err := modinfo(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		var deps []string
		need := func(d string, soft bool) error {
			if m, ok := softdepAliases[d]; ok && soft && t.paths[d] == "" {
				d = m
			}
			if err := visit(d, name, soft); err != nil {
				return err
			}
			// A module can name one twice (6.1's crc64_rocksoft: depends=
			// and softdep= both name crc64).
			if d = strings.ReplaceAll(d, "-", "_"); state[d] == 2 && !t.builtin[d] && !slices.Contains(deps, d) {
				deps = append(deps, d)
			}
			return nil
		}
		for _, dep := range info["depends"] {
			for _, d := range strings.Split(dep, ",") {
				if d = strings.TrimSpace(d); d != "" {
					if err := need(d, false); err != nil {
						return err
					}
				}
			}
		}
		for _, sd := range info["softdep"] {
			for _, d := range strings.Fields(sd) {
				if !strings.HasSuffix(d, ":") {
					if err := need(d, true); err != nil {
						return err
					}
				}
			}
		}
		state[name] = 2
		out = append(out, module{name: name, deps: deps, data: data})
		return nil
	}
	for _, r := range roots {
		if err := visit(r, "", false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readModuleFile returns the uncompressed image; .ko.xz files (6.12 series)
// are decompressed with xz.
func readModuleFile(p string) ([]byte, error) {
	if !strings.HasSuffix(p, ".xz") {
		return os.ReadFile(p)
	}
	var stderr bytes.Buffer
	cmd := exec.Command("xz", "-dc", p)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("xz -dc %s: %v: %s", p, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// modinfo parses the .modinfo section: NUL-separated key=value strings.
func modinfo(image []byte) (map[string][]string, error) {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return nil, err
	}
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("no .modinfo section")
	}
	raw, err := sec.Data()
	if err != nil {
		return nil, err
	}
	m := map[string][]string{}
	for _, kv := range bytes.Split(raw, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok {
			m[string(k)] = append(m[string(k)], string(v))
		}
	}
	return m, nil
}
