package nvmeof

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goverbs/rdma"
)

var (
	// ErrProtocol: the target sent something the NVMe over Fabrics RDMA
	// transport does not allow (a response of the wrong size, for a
	// command not outstanding, or private data of the wrong format). On a
	// connected controller the error also matches ErrControllerLost: the
	// controller is given up.
	ErrProtocol = errors.New("NVMe over RDMA protocol violation by the target")
	// ErrControllerLost: the controller can no longer be used. The
	// connection of one of its queues ended (the target went away, its
	// port was removed, or a transfer failed), a command or a keep-alive
	// went unanswered past its time, or Close was called. Commands
	// outstanding then end with an error that matches it and says what
	// happened. Connect again to go on.
	ErrControllerLost = errors.New("NVMe controller lost")
	// ErrNotSupported is rdma.ErrNotSupported: on a system other than
	// Linux, Connect and Discover fail with an error that matches it; a
	// command the controller does not offer (Write Zeroes where ONCS lacks
	// it) does too.
	ErrNotSupported = rdma.ErrNotSupported
	// ErrClosed is rdma.ErrClosed: the Controller was closed.
	ErrClosed = rdma.ErrClosed
)

// StatusError is a command the controller completed with an error status
// (NVMe base specification, "Status Field Definition").
type StatusError struct {
	Op string // the command, e.g. "read", "identify controller"
	// Type and Code are the status code type (SCT) and status code (SC).
	Type, Code uint8
	// More says the controller has more in an Error Information log page;
	// DoNotRetry (DNR) says the same command will fail again.
	More, DoNotRetry bool
}

func statusError(op string, status uint16) *StatusError {
	return &StatusError{
		Op:         op,
		Code:       uint8(status),
		Type:       uint8(status>>8) & 7,
		More:       status&(1<<13) != 0,
		DoNotRetry: status&(1<<14) != 0,
	}
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("nvmeof: %s: %s (status type %#x, code %#02x", e.Op, e.describe(), e.Type, e.Code)
	if e.DoNotRetry {
		s += ", do not retry"
	}
	return s + ")"
}

// statusTexts are the statuses a target on Linux answers with (kernel:
// include/linux/nvme.h NVME_SC_*, drivers/nvme/target/*.c).
var statusTexts = map[uint16]string{
	0x000: "success",
	0x001: "invalid command opcode: the controller does not offer this command",
	0x002: "invalid field in command",
	0x003: "command ID conflict",
	0x004: "data transfer error",
	0x006: "internal error in the controller",
	0x007: "command abort requested",
	0x008: "command aborted: submission queue deleted",
	0x00b: "invalid namespace or format: no such namespace, or it is not active",
	0x00c: "command sequence error",
	0x00d: "invalid SGL segment descriptor",
	0x00e: "invalid number of SGL descriptors",
	0x00f: "data SGL length invalid",
	0x011: "SGL descriptor type invalid",
	0x016: "SGL offset invalid",
	0x019: "keep alive timeout expired",
	0x01a: "keep alive timeout invalid: the controller was connected without a keep-alive timeout",
	0x020: "namespace is write protected",
	0x022: "transient transport error",
	0x080: "LBA out of range: the namespace is smaller",
	0x081: "capacity exceeded",
	0x082: "namespace not ready",
	0x101: "invalid queue identifier",
	0x102: "invalid queue size",
	0x109: "invalid log page",
	0x10d: "feature not saveable",
	// Command specific for the NVM command set's I/O commands.
	0x180: "conflicting attributes",
	0x181: "invalid protection information",
	0x182: "attempted write to a read-only range",
	0x183: "not supported on this namespace (the kernel's target: ONCS not supported)",
	0x280: "write fault",
	0x281: "unrecovered read error",
	0x286: "access denied",
	0x302: "asymmetric access inaccessible",
}

// connectTexts are the Connect command's own statuses (NVMe over Fabrics,
// "Connect Response"), which reuse the codes of the I/O commands'.
var connectTexts = map[uint16]string{
	0x180: "incompatible format",
	0x181: "controller busy",
	0x182: "invalid parameters (the host, subsystem or controller given is not known or not allowed)",
	0x183: "restart discovery",
	0x184: "invalid host: this host is not allowed to this subsystem",
}

func (e *StatusError) describe() string {
	sc := uint16(e.Type)<<8 | uint16(e.Code)
	if strings.HasPrefix(e.Op, "connect") {
		if t, ok := connectTexts[sc]; ok {
			return t
		}
	}
	if t, ok := statusTexts[sc]; ok {
		return t
	}
	return "error status"
}
