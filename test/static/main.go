// Command static checks that programs are static binaries built without
// cgo, as the module promises: for each file named, the build settings the
// Go linker records in it (what `go version -m` prints) must say
// CGO_ENABLED=0, and the ELF file must have neither an interpreter
// (PT_INTERP) nor a dynamic section (PT_DYNAMIC), so that nothing is loaded
// before or beside it. It names each file that fails and exits 1.
//
// make static builds every program of the module and runs this on them.
package main

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: static PROGRAM...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		if err := check(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Printf("%d programs: static, CGO_ENABLED=0\n", len(os.Args)-1)
}

// check returns why the program at path is not a static binary built
// without cgo, or nil.
func check(path string) error {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	cgo := "(not recorded)"
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" {
			cgo = s.Value
		}
	}
	if cgo != "0" {
		return fmt.Errorf("%s: built with CGO_ENABLED=%s, want 0", path, cgo)
	}
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return fmt.Errorf("%s: dynamically linked: it names an ELF interpreter", path)
		case elf.PT_DYNAMIC:
			return fmt.Errorf("%s: dynamically linked: it has a dynamic section", path)
		}
	}
	return nil
}
