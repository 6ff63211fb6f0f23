package uverbs

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// pipeFD returns the write end of a pipe as a *sys.FD and the read end.
func pipeFD(t *testing.T) (*sys.FD, *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	w := sys.NewFD(p[1], "test pipe")
	r := os.NewFile(uintptr(p[0]), "pipe read end")
	t.Cleanup(func() { w.Close(); r.Close() })
	return w, r
}

// The write() header as the kernel reads it (kernel: uverbs_main.c
// ib_uverbs_write, verify_hdr; docs/abi.md §2.1): command u32 @0,
// in_words u16 @4 counting the header, out_words u16 @6; the body follows,
// its first 8 bytes the response pointer.
func TestWriteCmdEncoding(t *testing.T) {
	fd, r := pipeFD(t)
	req := make([]byte, 16) // response field + 8 bytes of request
	for i := 8; i < 16; i++ {
		req[i] = byte(i)
	}
	resp := make([]byte, 12)
	if err := writeCmd(fd, "test_cmd", 9, req, resp); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 24)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if c := le.Uint32(got[0:]); c != 9 {
		t.Errorf("command = %d, want 9", c)
	}
	if w := le.Uint16(got[4:]); w != 6 {
		t.Errorf("in_words = %d, want 6 (24 bytes with the header)", w)
	}
	if w := le.Uint16(got[6:]); w != 3 {
		t.Errorf("out_words = %d, want 3", w)
	}
	if p := le.Uint64(got[8:]); p != uint64(uintptr(unsafe.Pointer(&resp[0]))) {
		t.Errorf("response = %#x, want the address of the response buffer %p", p, &resp[0])
	}
	for i := 16; i < 24; i++ {
		if got[i] != byte(i-8) {
			t.Fatalf("request body byte %d = %d, want %d", i, got[i], i-8)
		}
	}
}

func TestWriteCmdRejectsBadSizes(t *testing.T) {
	fd, _ := pipeFD(t)
	if err := writeCmd(fd, "odd", 1, make([]byte, 6), nil); err == nil {
		t.Error("a request that is not a whole number of 4-byte words was accepted")
	}
	if err := writeCmd(fd, "noresp", 1, make([]byte, 4), make([]byte, 4)); err == nil {
		t.Error("a response without room for the response field was accepted")
	}
}

// The extended header (docs/abi.md §2.2): command has bit 31 set,
// in_words/out_words count 8-byte words of the core structs without the
// headers, ex header {response u64, provider_in_words u16,
// provider_out_words u16, reserved u32}, then the core request and the
// driver data.
func TestWriteExCmdEncoding(t *testing.T) {
	fd, r := pipeFD(t)
	req := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	udata := []byte{9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10}
	resp := make([]byte, 304)
	uout := make([]byte, 8)
	if err := writeExCmd(fd, "test_ex", 1, req, udata, resp, uout); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 24+8+16)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if c := le.Uint32(got[0:]); c != 0x80000001 {
		t.Errorf("command = %#x, want 0x80000001", c)
	}
	if w := le.Uint16(got[4:]); w != 1 {
		t.Errorf("in_words = %d, want 1", w)
	}
	if w := le.Uint16(got[6:]); w != 38 {
		t.Errorf("out_words = %d, want 38", w)
	}
	if p := le.Uint64(got[8:]); p == 0 {
		t.Error("response pointer is 0")
	}
	if w := le.Uint16(got[16:]); w != 2 {
		t.Errorf("provider_in_words = %d, want 2", w)
	}
	if w := le.Uint16(got[18:]); w != 1 {
		t.Errorf("provider_out_words = %d, want 1", w)
	}
	if le.Uint32(got[20:]) != 0 {
		t.Error("cmd_hdr_reserved is not 0")
	}
	if string(got[24:32]) != string(req) || string(got[32:]) != string(udata) {
		t.Errorf("payload = %v, want %v then %v", got[24:], req, udata)
	}
	if unsafe.Sizeof(abi.UverbsExQueryDeviceResp{}) != 304 {
		t.Errorf("ib_uverbs_ex_query_device_resp is %d bytes, want 304", unsafe.Sizeof(abi.UverbsExQueryDeviceResp{}))
	}
}

// The ioctl layout (docs/abi.md §2.3): header {length, object_id,
// method_id, num_attrs, reserved1 u64, driver_id u32, reserved2 u32}, then
// 16-byte attributes {attr_id, len, flags, attr_data, data u64}; values of
// up to 8 bytes travel inline, larger ones and outputs by pointer.
func TestIoctlEncoding(t *testing.T) {
	big := make([]byte, 20)
	out := make([]byte, 48)
	attrs := []ioctlAttr{
		attrConst(0, 7),
		attrIn(1, []byte{0xaa, 0xbb, 0xcc, 0xdd}),
		attrIn(2, big),
		attrOut(3, out),
		attrHandle(4, 42),
		attrFD(5, 17),
	}
	buf, err := encodeIoctl(14, 0, 6, attrs)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(buf) != 24+16*len(attrs) {
		t.Fatalf("encoded %d bytes, want %d", len(buf), 24+16*len(attrs))
	}
	if l := le.Uint16(buf[0:]); int(l) != len(buf) {
		t.Errorf("length = %d, want %d", l, len(buf))
	}
	if o, m, n := le.Uint16(buf[2:]), le.Uint16(buf[4:]), le.Uint16(buf[6:]); o != 0 || m != 6 || n != 6 {
		t.Errorf("object/method/num_attrs = %d/%d/%d, want 0/6/6", o, m, n)
	}
	if le.Uint64(buf[8:]) != 0 || le.Uint32(buf[20:]) != 0 {
		t.Error("reserved fields are not 0")
	}
	if d := le.Uint32(buf[16:]); d != 14 {
		t.Errorf("driver_id = %d, want 14", d)
	}
	type wire struct {
		id, len, flags uint16
		data           uint64
	}
	at := func(i int) wire {
		b := buf[24+16*i:]
		return wire{le.Uint16(b), le.Uint16(b[2:]), le.Uint16(b[4:]), le.Uint64(b[8:])}
	}
	want := []wire{
		{0, 8, 1, 7},
		{1, 4, 1, 0xddccbbaa},
		{2, 20, 1, uint64(uintptr(unsafe.Pointer(&big[0])))},
		{3, 48, 1, uint64(uintptr(unsafe.Pointer(&out[0])))},
		{4, 0, 1, 42},
		{5, 0, 1, 17},
	}
	for i, w := range want {
		if g := at(i); g != w {
			t.Errorf("attr %d = %+v, want %+v", i, g, w)
		}
	}

	// What the kernel writes back: VALID_OUTPUT on outputs, new handles in
	// data.
	le.PutUint16(buf[24+16*3+4:], 1|2)
	le.PutUint64(buf[24+16*4+8:], 99)
	decodeIoctlBack(buf, attrs)
	if !attrs[3].valid || attrs[0].valid {
		t.Error("VALID_OUTPUT not decoded per attribute")
	}
	if attrs[4].data != 99 {
		t.Errorf("handle written back = %d, want 99", attrs[4].data)
	}
}

// An ioctl on a descriptor that has no ioctl ABI fails with ENOTTY, which
// the uverbs ioctl path reports as ErrNotSupported, keeping the errno and
// the operation name.
func TestIoctlNotSupportedClassification(t *testing.T) {
	fd, _ := pipeFD(t)
	err := classifyIoctl(ioctlCmd(fd, "query_gid_entry", 14, 0, 6, []ioctlAttr{attrConst(0, 1)}))
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("err = %v, want ErrNotSupported", err)
	}
	if !errors.Is(err, unix.ENOTTY) {
		t.Errorf("err = %v does not unwrap to ENOTTY", err)
	}
	var op *OpError
	if !errors.As(err, &op) || op.Op != "query_gid_entry" {
		t.Errorf("err = %v, want an OpError for query_gid_entry", err)
	}
}

func TestWriteErrnoUnwraps(t *testing.T) {
	_, r := pipeFD(t)
	// Writing to the read end of a pipe fails with EBADF.
	raw, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	rd := sys.NewFD(raw, "read end")
	defer rd.Close()
	err = classifyWrite(writeCmd(rd, "get_context", 0, make([]byte, 8), make([]byte, 8)))
	if !errors.Is(err, unix.EBADF) {
		t.Fatalf("err = %v, want EBADF", err)
	}
	if errors.Is(err, ErrNotSupported) {
		t.Error("EBADF classified as not supported")
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		errno   unix.Errno
		ioctlNS bool
		writeNS bool
	}{
		{unix.EOPNOTSUPP, true, true},
		{unix.EPROTONOSUPPORT, true, false},
		{unix.ENOTTY, true, false},
		{unix.EINVAL, false, false},
		{unix.ENODATA, false, false},
	} {
		e := &OpError{Op: "x", Err: tc.errno}
		if got := errors.Is(classifyIoctl(e), ErrNotSupported); got != tc.ioctlNS {
			t.Errorf("ioctl %v: not supported = %v, want %v", tc.errno, got, tc.ioctlNS)
		}
		if got := errors.Is(classifyWrite(e), ErrNotSupported); got != tc.writeNS {
			t.Errorf("write %v: not supported = %v, want %v", tc.errno, got, tc.writeNS)
		}
		if !errors.Is(classifyIoctl(e), tc.errno) || !errors.Is(classifyWrite(e), tc.errno) {
			t.Errorf("%v: errno lost by classification", tc.errno)
		}
	}
}

func TestClosedContext(t *testing.T) {
	var c *Device
	if err := c.Close(); err != nil {
		t.Errorf("nil Close = %v", err)
	}
	if _, err := c.NextEvent(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("nil NextEvent = %v, want ErrClosed", err)
	}
	if _, err := c.Query(); !errors.Is(err, ErrClosed) {
		t.Errorf("nil Query = %v, want ErrClosed", err)
	}
}

// A command that succeeded passes the classifiers without an allocation:
// every device command goes through one of them.
func TestClassifySuccessAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if classifyWrite(nil) != nil || classifyIoctl(nil) != nil {
			t.Fatal("a nil error classified as an error")
		}
	}); n != 0 {
		t.Errorf("classifying success: %v allocations, want 0", n)
	}
}
