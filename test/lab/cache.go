//go:build linux

package lab

import (
	"os"
	"path/filepath"
	"time"
)

// cacheKeep is how long unused kernels, /init binaries and initramfs images
// stay in the cache. Entries in use are touched on every run.
const cacheKeep = 7 * 24 * time.Hour

// touchAndPrune marks the entries of this run as used and removes entries
// unused for cacheKeep (left by older versions of the lab or kernels that
// Debian has since replaced).
func (e *env) touchAndPrune(used ...string) {
	now := time.Now()
	keep := map[string]bool{}
	for _, p := range used {
		_ = os.Chtimes(p, now, now)
		keep[p] = true
	}
	// The foreign architecture's apt state of an earlier layout
	// (cache/apt-ARCH, which read the host's sources); apt.go keeps its
	// states in cache/apt.
	old, _ := filepath.Glob(filepath.Join(e.cache, "apt-*"))
	for _, p := range old {
		os.RemoveAll(p)
	}
	for _, dir := range []string{"kernels", "init", "initramfs", "userland"} {
		ents, _ := os.ReadDir(filepath.Join(e.cache, dir))
		for _, ent := range ents {
			p := filepath.Join(e.cache, dir, ent.Name())
			if keep[p] {
				continue
			}
			if fi, err := ent.Info(); err == nil && now.Sub(fi.ModTime()) > cacheKeep {
				os.RemoveAll(p)
			}
		}
	}
}
