package uverbs

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// This file holds the two command transports of a Device: the write() ABI
// (ctx.write, ctx.writeEx) and the ioctl ABI (ctx.ioctl). Every uverbs
// command of the package goes through one of them, and each command picks
// its transport in one place (its own method).
//
// Command and response buffers live on the Go heap and are pinned for the
// duration of the system call: the kernel writes responses through addresses
// stored inside the command as plain integers, which the garbage collector
// neither follows nor keeps alive, and goroutine stacks move
// (docs/abi.md §6.1).

// bytesOf views the memory of a fixed-size ABI struct. The struct must be one
// of the generated types in internal/abi (no Go pointers inside).
func bytesOf[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// cmdBuf returns an 8-byte aligned, zeroed heap buffer of n bytes.
func cmdBuf(n int) []byte {
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

func addrOf(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// pinAll pins the backing arrays of bufs (empty ones are skipped).
func pinAll(p *runtime.Pinner, bufs ...[]byte) {
	for _, b := range bufs {
		if len(b) > 0 {
			p.Pin(unsafe.SliceData(b))
		}
	}
}

// lockCmd takes the context's command lock and checks that it is open. The
// lock is held shared for the duration of a command so that Close cannot
// close the descriptor (and let the number be reused) under a running call.
func (c *Device) lockCmd(op string) error {
	if c == nil {
		return &OpError{Op: op, Err: ErrClosed}
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return &OpError{Op: op, Err: ErrClosed}
	}
	return nil
}

// write issues a legacy write() command (kernel: core/uverbs_main.c
// ib_uverbs_write): [ib_uverbs_cmd_hdr | req]. req is the core request
// followed by any driver input (udata); resp receives the core response
// followed by any driver output. When resp is not empty the request's first
// 8 bytes are the `response` field and are set to resp's address, as in
// every uverbs command that has a response.
func (c *Device) write(op string, cmd uint32, req, resp []byte) error {
	if err := c.lockCmd(op); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	return classifyWrite(writeCmd(c.fd, op, cmd, req, resp))
}

func writeCmd(fd *sys.FD, op string, cmd uint32, req, resp []byte) error {
	var hdr abi.UverbsCmdHdr
	n := int(unsafe.Sizeof(hdr)) + len(req)
	if n%4 != 0 || len(resp)%4 != 0 || n/4 > 0xffff || len(resp)/4 > 0xffff {
		return &OpError{Op: op, Err: fmt.Errorf("command of %d bytes with a %d-byte response does not fit the write() header", n, len(resp))}
	}
	hdr.Command = cmd
	hdr.InWords = uint16(n / 4)
	hdr.OutWords = uint16(len(resp) / 4)
	buf := cmdBuf(n)
	copy(buf, bytesOf(&hdr))
	copy(buf[unsafe.Sizeof(hdr):], req)
	if len(resp) > 0 {
		if len(req) < 8 {
			return &OpError{Op: op, Err: fmt.Errorf("request of %d bytes has no response field", len(req))}
		}
		*(*uint64)(unsafe.Pointer(&buf[unsafe.Sizeof(hdr)])) = addrOf(resp)
	}
	var pin runtime.Pinner
	pinAll(&pin, buf, resp)
	err := sys.Write(fd, op, unsafe.Pointer(unsafe.SliceData(buf)), uintptr(n))
	pin.Unpin()
	runtime.KeepAlive(buf)
	runtime.KeepAlive(resp)
	return err
}

// writeEx issues an extended write() command (IB_USER_VERBS_CMD_FLAG_EXTENDED;
// kernel: core/uverbs_main.c ib_uverbs_write, verify_hdr):
// [ib_uverbs_cmd_hdr | ib_uverbs_ex_cmd_hdr | req | udataIn]. The kernel writes
// the core response to resp and the driver response right after it, so resp
// and udataOut are carried in one buffer. Sizes must be multiples of 8.
func (c *Device) writeEx(op string, cmd uint32, req, udataIn, resp, udataOut []byte) error {
	if err := c.lockCmd(op); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	return classifyWrite(writeExCmd(c.fd, op, cmd, req, udataIn, resp, udataOut))
}

func writeExCmd(fd *sys.FD, op string, cmd uint32, req, udataIn, resp, udataOut []byte) error {
	var hdr abi.UverbsCmdHdr
	var ex abi.UverbsExCmdHdr
	for _, b := range [][]byte{req, udataIn, resp, udataOut} {
		if len(b)%8 != 0 || len(b)/8 > 0xffff {
			return &OpError{Op: op, Err: fmt.Errorf("extended command part of %d bytes is not a whole number of 8-byte words", len(b))}
		}
	}
	hdrLen := int(unsafe.Sizeof(hdr) + unsafe.Sizeof(ex))
	n := hdrLen + len(req) + len(udataIn)
	hdr.Command = abi.IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd
	hdr.InWords = uint16(len(req) / 8)
	hdr.OutWords = uint16(len(resp) / 8)
	ex.ProviderInWords = uint16(len(udataIn) / 8)
	ex.ProviderOutWords = uint16(len(udataOut) / 8)

	var out []byte
	if len(resp)+len(udataOut) > 0 {
		out = cmdBuf(len(resp) + len(udataOut))
		ex.Response = addrOf(out)
	}
	buf := cmdBuf(n)
	copy(buf, bytesOf(&hdr))
	copy(buf[unsafe.Sizeof(hdr):], bytesOf(&ex))
	copy(buf[hdrLen:], req)
	copy(buf[hdrLen+len(req):], udataIn)

	var pin runtime.Pinner
	pinAll(&pin, buf, out)
	err := sys.Write(fd, op, unsafe.Pointer(unsafe.SliceData(buf)), uintptr(n))
	pin.Unpin()
	runtime.KeepAlive(buf)
	runtime.KeepAlive(out)
	if err == nil {
		copy(resp, out)
		copy(udataOut, out[len(resp):])
	}
	return err
}

// ioctlAttr is one attribute of an RDMA_VERBS_IOCTL command
// (struct ib_uverbs_attr; encoding as rdma-core's libibverbs/cmd_ioctl.h).
type ioctlAttr struct {
	id    uint16
	flags uint16
	len   uint16
	data  uint64 // inline value, object handle or fd; output: what the kernel wrote back
	buf   []byte // pointer payload (in or out)
	out   bool   // buf is written by the kernel
	valid bool   // output: the kernel set UVERBS_ATTR_F_VALID_OUTPUT
}

// attrConst is a const-in attribute: always 8 bytes inline
// (UVERBS_ATTR_CONST_IN; rdma-core fill_attr_const_in).
func attrConst(id uint16, v uint64) ioctlAttr {
	return ioctlAttr{id: id, flags: abi.UVERBS_ATTR_F_MANDATORY, len: 8, data: v}
}

// attrIn is a pointer-in attribute. Up to 8 bytes travel inline in data, as
// the kernel reads them (core/uverbs_ioctl.c uverbs_process_attr).
func attrIn(id uint16, b []byte) ioctlAttr {
	a := ioctlAttr{id: id, flags: abi.UVERBS_ATTR_F_MANDATORY, len: uint16(len(b))}
	if len(b) <= 8 {
		var v [8]byte
		copy(v[:], b)
		a.data = *(*uint64)(unsafe.Pointer(&v))
	} else {
		a.buf = b
	}
	return a
}

// attrOut is a pointer-out attribute: the kernel writes up to len(b) bytes.
func attrOut(id uint16, b []byte) ioctlAttr {
	return ioctlAttr{id: id, flags: abi.UVERBS_ATTR_F_MANDATORY, len: uint16(len(b)), buf: b, out: true}
}

// attrHandle is an object (IDR) attribute: data is the handle, len 0.
func attrHandle(id uint16, handle uint32) ioctlAttr {
	return ioctlAttr{id: id, flags: abi.UVERBS_ATTR_F_MANDATORY, data: uint64(handle)}
}

// attrFD is a file-descriptor attribute: data is the fd, len 0.
func attrFD(id uint16, fd int) ioctlAttr {
	return ioctlAttr{id: id, flags: abi.UVERBS_ATTR_F_MANDATORY, data: uint64(fd)}
}

// ioctl issues one RDMA_VERBS_IOCTL method call (kernel: core/uverbs_ioctl.c
// ib_uverbs_ioctl): an ib_uverbs_ioctl_hdr carrying the device's driver id,
// followed by the attributes. Output attributes are written in place; data
// and valid of each attribute are updated from what the kernel wrote back.
// EOPNOTSUPP, EPROTONOSUPPORT and ENOTTY come back matching ErrNotSupported.
func (c *Device) ioctl(op string, object, method uint16, attrs ...ioctlAttr) error {
	if err := c.lockCmd(op); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	return classifyIoctl(ioctlCmd(c.fd, op, uint32(c.dev.DriverID), object, method, attrs))
}

func ioctlCmd(fd *sys.FD, op string, driverID uint32, object, method uint16, attrs []ioctlAttr) error {
	buf, err := encodeIoctl(driverID, object, method, attrs)
	if err != nil {
		return &OpError{Op: op, Err: err}
	}
	var pin runtime.Pinner
	pinAll(&pin, buf)
	for i := range attrs {
		pinAll(&pin, attrs[i].buf)
	}
	err = sys.Ioctl(fd, op, abi.RDMA_VERBS_IOCTL, unsafe.Pointer(unsafe.SliceData(buf)))
	pin.Unpin()
	runtime.KeepAlive(buf)
	for i := range attrs {
		runtime.KeepAlive(attrs[i].buf)
	}
	decodeIoctlBack(buf, attrs)
	return err
}

// encodeIoctl lays out [ib_uverbs_ioctl_hdr | ib_uverbs_attr...]. Pointer
// attributes carry the address of their buffer, which the caller must keep
// pinned until the call returns.
func encodeIoctl(driverID uint32, object, method uint16, attrs []ioctlAttr) ([]byte, error) {
	var hdr abi.UverbsIoctlHdr
	var ua abi.UverbsAttr
	hdrSize := int(unsafe.Sizeof(hdr))
	attrSize := int(unsafe.Sizeof(ua))
	n := hdrSize + attrSize*len(attrs)
	if n > 0xffff {
		return nil, fmt.Errorf("%d attributes do not fit one ioctl", len(attrs))
	}
	hdr.Length = uint16(n)
	hdr.ObjectID = object
	hdr.MethodID = method
	hdr.NumAttrs = uint16(len(attrs))
	hdr.DriverID = driverID
	buf := cmdBuf(n)
	copy(buf, bytesOf(&hdr))
	for i := range attrs {
		a := &attrs[i]
		ua = abi.UverbsAttr{AttrID: a.id, Len: a.len, Flags: a.flags, Data: a.data}
		if len(a.buf) > 0 {
			ua.Data = addrOf(a.buf)
		}
		copy(buf[hdrSize+i*attrSize:], bytesOf(&ua))
	}
	return buf, nil
}

// decodeIoctlBack reads what the kernel wrote into the attribute array: the
// VALID_OUTPUT flag of output attributes, and the data word of inline ones
// (new object handles, new fds).
func decodeIoctlBack(buf []byte, attrs []ioctlAttr) {
	var hdr abi.UverbsIoctlHdr
	var ua abi.UverbsAttr
	hdrSize := int(unsafe.Sizeof(hdr))
	attrSize := int(unsafe.Sizeof(ua))
	for i := range attrs {
		back := (*abi.UverbsAttr)(unsafe.Pointer(&buf[hdrSize+i*attrSize]))
		attrs[i].valid = back.Flags&abi.UVERBS_ATTR_F_VALID_OUTPUT != 0
		if len(attrs[i].buf) == 0 {
			attrs[i].data = back.Data
		}
	}
}
