package uverbs

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/sys"
)

// fakeCmdContext is a Device whose commands go to /dev/full, which
// refuses every write with ENOSPC: a stand-in for a kernel that refuses a
// destroy command. swap switches it to /dev/null, which accepts every
// write.
func fakeCmdContext(t *testing.T) (c *Device, swap func()) {
	t.Helper()
	full, err := sys.Open("/dev/full", unix.O_RDWR, "fake uverbs")
	if err != nil {
		t.Fatal(err)
	}
	c = &Device{dev: DeviceInfo{Name: "fake0"}, fd: full}
	t.Cleanup(func() { c.fd.Close() })
	swap = func() {
		null, err := sys.Open("/dev/null", unix.O_RDWR, "fake uverbs")
		if err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		old := c.fd
		c.fd = null
		c.mu.Unlock()
		old.Close()
	}
	return c, swap
}

// A DEREG_MR or DEALLOC_PD the kernel refuses leaves the object open (and
// the Buffer registered, so its memory is not unmapped under the device);
// a later Close retries.
func TestCloseKeepsObjectsTheKernelRefused(t *testing.T) {
	c, swap := fakeCmdContext(t)
	pd := &PD{ctx: c, h: newHandle()}
	buf, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	mem := buf.Bytes()
	mr := &MR{pd: pd, h: newHandle(), addr: addrOf(mem), length: len(mem), mem: mem, buf: bufferOf(addrOf(mem), len(mem))}
	if mr.buf != buf {
		t.Fatal("bufferOf did not find the Buffer")
	}
	pd.kids.adopt(mr, kindMR)
	pd.addMR(mr)

	if err := mr.Close(); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("MR.Close with the command refused: %v, want ENOSPC", err)
	}
	if mr.Bytes() == nil {
		t.Fatal("a refused DEREG_MR released the MR")
	}
	if err := buf.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("Buffer.Close under a still registered MR: %v, want ErrBusy", err)
	}
	pd.mrMu.RLock()
	inMR := pd.inMRLocked(addrOf(mem), 16)
	pd.mrMu.RUnlock()
	if !inMR {
		t.Fatal("a refused DEREG_MR dropped the MR from the PD's list")
	}
	if err := pd.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("PD.Close with an MR: %v, want ErrBusy", err)
	}

	swap() // the kernel now accepts
	if err := mr.Close(); err != nil {
		t.Fatalf("retried MR.Close: %v", err)
	}
	if mr.Bytes() != nil {
		t.Fatal("MR still holds its memory after Close")
	}
	if err := buf.Close(); err != nil {
		t.Fatalf("Buffer.Close after the MR: %v", err)
	}

	// DEALLOC_PD refused: the PD stays open, then closes on retry.
	c2, swap2 := fakeCmdContext(t)
	pd2 := &PD{ctx: c2, h: newHandle()}
	if err := pd2.Close(); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("PD.Close with the command refused: %v, want ENOSPC", err)
	}
	if err := pd2.hold("test"); err != nil {
		t.Fatalf("a PD the kernel kept refuses children: %v", err)
	}
	pd2.kids.unhold()
	swap2()
	if err := pd2.Close(); err != nil {
		t.Fatalf("retried PD.Close: %v", err)
	}
	if err := pd2.hold("test"); !errors.Is(err, ErrClosed) {
		t.Fatalf("hold on a closed PD: %v", err)
	}
}
