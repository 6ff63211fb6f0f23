//go:build linux

package lab

import (
	"fmt"
	"io"
)

// cpioWriter writes the "newc" cpio format the kernel unpacks as an
// initramfs (Documentation/driver-api/early-userspace/buffer-format.rst):
// a 110-byte ASCII header of "070701" and 13 eight-digit hex fields, the
// NUL-terminated name, padding to 4 bytes, the data, padding to 4 bytes.
type cpioWriter struct {
	w   io.Writer
	off int64
	ino uint32
	err error
}

const (
	modeDir  = 0o040000
	modeReg  = 0o100000
	modeChar = 0o020000
)

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) entry(name string, mode uint32, rdevMajor, rdevMinor uint32, data []byte) {
	c.ino++
	nlink := uint32(1)
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
}

// Dir adds a directory.
func (c *cpioWriter) Dir(name string, perm uint32) { c.entry(name, modeDir|perm, 0, 0, nil) }

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, data []byte) {
	c.entry(name, modeReg|perm, 0, 0, data)
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) {
	c.entry(name, modeChar|perm, major, minor, nil)
}

// Close writes the trailer.
func (c *cpioWriter) Close() error {
	c.ino = 0
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	return c.err
}
