package lab

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeModule is a relocatable ELF file with only a .modinfo section, which
// is all resolve reads of a module.
func fakeModule(t *testing.T, info ...string) []byte {
	modinfo := []byte(strings.Join(info, "\x00") + "\x00")
	shstrtab := []byte("\x00.modinfo\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	shoff := (ehsize + len(modinfo) + len(shstrtab) + 7) &^ 7
	var b bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: uint64(shoff), Ehsize: ehsize, Shentsize: shentsize, Shnum: 3, Shstrndx: 2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	require.NoError(t, binary.Write(&b, binary.LittleEndian, hdr))
	b.Write(modinfo)
	b.Write(shstrtab)
	b.Write(make([]byte, shoff-b.Len()))
	for _, s := range []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Off: ehsize, Size: uint64(len(modinfo)), Addralign: 1},
		{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: uint64(ehsize + len(modinfo)), Size: uint64(len(shstrtab)), Addralign: 1},
	} {
		require.NoError(t, binary.Write(&b, binary.LittleEndian, s))
	}
	return b.Bytes()
}

// fakeTree writes a lib/modules/<release> tree: modules by file name with
// their .modinfo entries, and modules.builtin.
func fakeTree(t *testing.T, mods map[string][]string, builtin ...string) string {
	dir := t.TempDir()
	for name, info := range mods {
		p := filepath.Join(dir, "kernel", "drivers", name+".ko")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, fakeModule(t, info...), 0o644))
	}
	var bl strings.Builder
	for _, m := range builtin {
		bl.WriteString("kernel/" + m + ".ko\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte(bl.String()), 0o644))
	return dir
}

// TestResolveNVMeoF resolves the NVMe over RDMA host and target modules in
// a tree shaped like 6.12's (depends= as its .modinfo has them, with '-'
// for '_'; configfs built in as a stand-in for a built-in dependency; 6.1's
// crc64_rocksoft, which names crc64 twice): every module comes after its
// dependencies, once, with each dependency listed once and built-in ones
// left out.
func TestResolveNVMeoF(t *testing.T) {
	dir := fakeTree(t, map[string][]string{
		"ib_core":        {"license=GPL"},
		"rdma_cm":        {"depends=ib_core,configfs"},
		"nvme-auth":      {"depends="},
		"nvme-keyring":   {"depends="},
		"nvme-core":      {"depends=nvme-auth,t10-pi"},
		"t10-pi":         {"depends=crc64-rocksoft"},
		"crc64":          {"depends="},
		"crc64_rocksoft": {"softdep=pre: crc64", "depends=crc64"},
		"nvme-fabrics":   {"depends=nvme-core,nvme-keyring"},
		"nvme-rdma":      {"depends=nvme-fabrics,nvme-core,rdma_cm,ib_core"},
		"nvmet":          {"depends=configfs,nvme-auth,nvme-core,nvme-keyring"},
		"nvmet-rdma":     {"depends=ib_core,nvmet,rdma_cm"},
	}, "fs/configfs/configfs")
	tree, err := openModuleTree(dir)
	require.NoError(t, err)
	mods, err := tree.resolve([]string{"nvme_rdma", "nvmet_rdma"})
	require.NoError(t, err)

	var order []string
	pos := map[string]int{}
	for i, m := range mods {
		order = append(order, m.name)
		require.NotContains(t, pos, m.name, "%s resolved twice", m.name)
		pos[m.name] = i
		require.NotContains(t, m.deps, "configfs", "a built-in module is not loaded")
		for _, d := range m.deps {
			require.Contains(t, pos, d, "%s comes before its dependency %s", m.name, d)
		}
		deps := slices.Clone(m.deps)
		slices.Sort(deps)
		require.Equal(t, len(deps), len(slices.Compact(deps)), "%s lists a dependency twice: %v", m.name, m.deps)
	}
	require.ElementsMatch(t, []string{"ib_core", "rdma_cm", "nvme_auth", "nvme_keyring", "nvme_core", "t10_pi",
		"crc64", "crc64_rocksoft", "nvme_fabrics", "nvme_rdma", "nvmet", "nvmet_rdma"}, order)
	require.Equal(t, []string{"crc64"}, mods[pos["crc64_rocksoft"]].deps)
	require.Equal(t, []string{"nvme_fabrics", "nvme_core", "rdma_cm", "ib_core"}, mods[pos["nvme_rdma"]].deps)

	// A dependency the tree lacks is named with the module that needs it.
	dir = fakeTree(t, map[string][]string{
		"nvme-fabrics": {"depends=nvme-core,nvme-keyring"},
		"nvme-core":    {"depends="},
		"nvme-rdma":    {"depends=nvme-fabrics,nvme-core"},
	})
	tree, err = openModuleTree(dir)
	require.NoError(t, err)
	_, err = tree.resolve([]string{"nvme_rdma"})
	require.ErrorContains(t, err, "module nvme_keyring (needed by nvme_fabrics) is neither built in nor under "+dir)
}
