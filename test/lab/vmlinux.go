//go:build linux

package lab

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// extractVmlinux returns the uncompressed kernel ELF inside a bzImage.
//
// Under TCG, the bzImage's own decompressor takes 10-15 s; an ELF kernel with
// a PVH entry point (CONFIG_PVH, Xen note XEN_ELFNOTE_PHYS32_ENTRY) is loaded
// by QEMU directly and starts at once. The payload is located with the boot
// protocol header (Documentation/arch/x86/boot.rst): setup_sects at 0x1f1,
// payload_offset/payload_length at 0x248/0x24c, relative to the protected
// mode code at (setup_sects+1)*512. The payload ends with the uncompressed
// size as a little-endian uint32 (arch/x86/boot/compressed/Makefile,
// *_with_size).
func extractVmlinux(bzImage []byte) ([]byte, error) {
	if len(bzImage) < 0x250 || string(bzImage[0x202:0x206]) != "HdrS" {
		return nil, errors.New("not a bzImage")
	}
	setupSects := int(bzImage[0x1f1])
	if setupSects == 0 {
		setupSects = 4
	}
	off := int(binary.LittleEndian.Uint32(bzImage[0x248:]))
	n := int(binary.LittleEndian.Uint32(bzImage[0x24c:]))
	start := (setupSects+1)*512 + off
	if n < 8 || start < 0 || start+n > len(bzImage) {
		return nil, errors.New("bzImage payload out of range")
	}
	payload := bzImage[start : start+n]
	size := int(binary.LittleEndian.Uint32(payload[n-4:]))
	payload = payload[:n-4]
	var tool []string
	switch {
	case bytes.HasPrefix(payload, []byte("\xfd7zXZ\x00")):
		tool = []string{"xz", "-dc", "--single-stream"}
	case bytes.HasPrefix(payload, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		tool = []string{"zstd", "-dcq"}
	default:
		return nil, fmt.Errorf("bzImage payload compression % x not supported", payload[:4])
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tool[0], tool[1:]...)
	cmd.Stdin = bytes.NewReader(payload)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %s", strings.Join(tool, " "), err, strings.TrimSpace(stderr.String()))
	}
	if len(out) != size {
		return nil, fmt.Errorf("decompressed kernel has %d bytes, header says %d", len(out), size)
	}
	if !hasPVHNote(out) {
		return nil, errors.New("kernel has no PVH entry point (CONFIG_PVH)")
	}
	return out, nil
}

// hasPVHNote reports whether the ELF image has the Xen note type 18
// (XEN_ELFNOTE_PHYS32_ENTRY) QEMU needs to boot it directly.
func hasPVHNote(image []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			continue
		}
		for len(b) >= 12 {
			namesz := int(f.ByteOrder.Uint32(b[0:]))
			descsz := int(f.ByteOrder.Uint32(b[4:]))
			typ := f.ByteOrder.Uint32(b[8:])
			nameEnd := 12 + (namesz+3)&^3
			next := nameEnd + (descsz+3)&^3
			if next > len(b) || namesz < 1 {
				break
			}
			if string(b[12:12+namesz-1]) == "Xen" && typ == 18 {
				return true
			}
			b = b[next:]
		}
	}
	return false
}

// writeVmlinux stores the ELF kernel next to the bzImage when it can be
// extracted; otherwise QEMU boots the bzImage (slower) and says why.
func (e *env) writeVmlinux(bzImagePath, outPath string) {
	bz, err := os.ReadFile(bzImagePath)
	if err == nil {
		var vm []byte
		if vm, err = extractVmlinux(bz); err == nil {
			err = os.WriteFile(outPath, vm, 0o644)
		}
	}
	if err != nil {
		e.logf("warning: booting the compressed kernel (slower under TCG): %v", err)
	}
}
