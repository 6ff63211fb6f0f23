package rdmacm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/uverbs"
)

// Bind binds the ID to a local address; port 0 picks a free port. Binding
// to an address of an RDMA device's netdev also binds the ID to that device.
//
// rdma-core: rdma_bind_addr.
func (id *ID) Bind(addr netip.AddrPort) error {
	const op = "bind"
	return id.locked(op, func() error { return id.bindLocked(op, addr) })
}

func (id *ID) bindLocked(op string, addr netip.AddrPort) error {
	var body abi.UcmBind
	size, err := encodeSockaddr(&body.Addr, addr)
	if err != nil {
		return &sys.OpError{Op: op, Err: err}
	}
	body.ID = id.kid
	body.AddrSize = size
	id.log("bind %s to %v", id, addr)
	if err := id.command(op, abi.RDMA_USER_CM_CMD_BIND, bytesOf(&body), nil); err != nil {
		if errors.Is(err, unix.EADDRINUSE) {
			return &sys.OpError{Op: op, Err: fmt.Errorf("%v: address in use by another CM ID (set ReuseAddr, or pick another port): %w", addr, unix.EADDRINUSE)}
		}
		if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENODEV) {
			return &sys.OpError{Op: op, Err: fmt.Errorf("%v is not an address of this machine with an RDMA device on its netdev (add one with `rdma-link add rxe0 netdev <netdev>`): %w", addr.Addr(), unix.Errno(errnoOf(err)))}
		}
		return err
	}
	return id.queryDeviceLocked()
}

func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// Listen makes the ID listen for connection requests; backlog <= 0 takes the
// kernel's limit (net.rdma_ucm.max_backlog, 1024 by default). Requests come
// as EventConnectRequest events whose Request is a new ID.
//
// rdma-core: rdma_listen.
func (id *ID) Listen(backlog int) error {
	const op = "listen"
	if backlog < 0 {
		backlog = 0
	}
	return id.locked(op, func() error {
		body := abi.UcmListen{ID: id.kid, Backlog: uint32(backlog)}
		id.log("listen on %s, backlog %d", id, backlog)
		if err := id.command(op, abi.RDMA_USER_CM_CMD_LISTEN, bytesOf(&body), nil); err != nil {
			return err
		}
		id.state = stateListening
		return nil
	})
}

func (id *ID) listening() bool {
	id.mu.Lock()
	defer id.mu.Unlock()
	return !id.closed && id.state == stateListening
}

// ResolveAddr resolves dst to an RDMA device, port and GID (through the
// neighbour table: ARP or ND), from src if it is valid, and waits for the
// answer. ctx bounds the wait, and its deadline the kernel's attempt (the
// timeout_ms of RDMA_USER_CM_CMD_RESOLVE_ADDR); without a deadline the
// kernel tries for 2 s, librdmacm's usual choice. A failure is an
// *EventError matching ErrAddrResolve, or ctx's error.
//
// rdma-core: rdma_resolve_addr.
func (id *ID) ResolveAddr(ctx context.Context, src, dst netip.AddrPort) error {
	return id.resolveAddr(ctx, src, dst, ctxTimeout(ctx))
}

// ctxTimeout is what is left of ctx's deadline, or 0 (the kernel's
// attempt then gets timeoutMs's default) when it has none.
func ctxTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}

// resolveAddr is ResolveAddr with the kernel's timeout given.
func (id *ID) resolveAddr(ctx context.Context, src, dst netip.AddrPort, timeout time.Duration) error {
	const op = "resolve_addr"
	if err := id.waitable(op); err != nil {
		return err
	}
	if err := id.startResolveAddr(op, src, dst, timeout); err != nil {
		return err
	}
	if _, err := id.expect(ctx, op, EventAddrResolved); err != nil {
		return err
	}
	return id.locked(op, id.queryDeviceLocked)
}

// startResolveAddr issues RESOLVE_ADDR; the answer is an event.
func (id *ID) startResolveAddr(op string, src, dst netip.AddrPort, timeout time.Duration) error {
	var body abi.UcmResolveAddr
	body.TimeoutMs = timeoutMs(timeout)
	dsize, err := encodeSockaddr(&body.DstAddr, dst)
	if err != nil {
		return &sys.OpError{Op: op, Err: fmt.Errorf("destination: %w", err)}
	}
	body.DstSize = dsize
	if src.Addr().IsValid() {
		ssize, err := encodeSockaddr(&body.SrcAddr, src)
		if err != nil {
			return &sys.OpError{Op: op, Err: fmt.Errorf("source: %w", err)}
		}
		body.SrcSize = ssize
	}
	err = id.locked(op, func() error {
		body.ID = id.kid
		if id.logging() {
			if body.SrcSize != 0 {
				id.log("resolve address %v from %v (timeout %d ms) on %s", dst, src.Addr(), body.TimeoutMs, id)
			} else {
				id.log("resolve address %v (timeout %d ms) on %s", dst, body.TimeoutMs, id)
			}
		}
		return id.command(op, abi.RDMA_USER_CM_CMD_RESOLVE_ADDR, bytesOf(&body), nil)
	})
	if err != nil {
		switch {
		case errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENODEV):
			route := fmt.Sprintf("destination %v", dst)
			if src.Addr().IsValid() {
				route = fmt.Sprintf("source %v, %s", src.Addr(), route)
			}
			return &sys.OpError{Op: op, Err: fmt.Errorf("%s: %w: no usable source address with an RDMA device on its netdev (add a device with `rdma-link add rxe0 netdev <netdev>`; a new IPv6 address is usable once duplicate address detection ends)", route, errnoOf(err))}
		case errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EHOSTUNREACH):
			return &EventError{Op: op, Event: EventAddrError, Status: -int(errnoOf(err))}
		}
		return err
	}
	return nil
}

// ResolveRoute resolves the route to the address ResolveAddr found and
// waits for it. For RoCE the kernel computes it at once from the IP route
// (kernel: core/cma.c cma_resolve_iboe_route).
//
// ctx bounds the wait, and its deadline the kernel's attempt (2 s without
// one), as in ResolveAddr.
//
// rdma-core: rdma_resolve_route.
func (id *ID) ResolveRoute(ctx context.Context) error {
	return id.resolveRoute(ctx, ctxTimeout(ctx))
}

// resolveRoute is ResolveRoute with the kernel's timeout given.
func (id *ID) resolveRoute(ctx context.Context, timeout time.Duration) error {
	const op = "resolve_route"
	if err := id.waitable(op); err != nil {
		return err
	}
	if err := id.startResolveRoute(op, timeout); err != nil {
		return err
	}
	_, err := id.expect(ctx, op, EventRouteResolved)
	return err
}

// startResolveRoute issues RESOLVE_ROUTE; the answer is an event.
func (id *ID) startResolveRoute(op string, timeout time.Duration) error {
	return id.locked(op, func() error {
		body := abi.UcmResolveRoute{ID: id.kid, TimeoutMs: timeoutMs(timeout)}
		if id.logging() {
			id.log("resolve route on %s (timeout %d ms)", id, body.TimeoutMs)
		}
		return id.command(op, abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE, bytesOf(&body), nil)
	})
}

func timeoutMs(d time.Duration) uint32 {
	if d <= 0 {
		return 2000
	}
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	if ms > 1<<31 {
		ms = 1 << 31
	}
	return uint32(ms)
}

// Query returns what the kernel knows of the ID's addresses, device and
// path.
//
// rdma-core: rdma_query_addr, rdma_query_gid, rdma_query_route (QUERY with
// RDMA_USER_CM_QUERY_ADDR, _GID and _PATH).
func (id *ID) Query() (info Info, err error) {
	err = id.locked("query", func() error {
		info, err = id.queryLocked()
		return err
	})
	return info, err
}

// Info is the result of Query.
type Info struct {
	Local, Remote netip.AddrPort
	Device        string // the ID's RDMA device, "" before it has one
	Port          uint8
	PKey          uint16 // the address's PKey; 0 on RoCE, whose path PKey is 0xffff
	NodeGUID      uverbs.GUID
	SGID, DGID    uverbs.GID
	Paths         []PathRecord // after route resolution
}

// PathRecord is one path the CM resolved (an IB path record, the wire
// format of IBA 15.2.5.16; for RoCE the kernel fills it from the IP route).
type PathRecord struct {
	DGID, SGID uverbs.GID
	PKey       uint16
	SL         uint8
	MTU        uverbs.MTU
	Rate       uint8
	// PacketLifeTime is the exponent the ACK timeout derives from
	// (4.096 µs × 2^x).
	PacketLifeTime uint8
	Raw            [64]byte
}

func decodePathRecord(raw []byte) PathRecord {
	p := PathRecord{}
	copy(p.Raw[:], raw)
	copy(p.DGID[:], raw[8:24])
	copy(p.SGID[:], raw[24:40])
	p.PKey = uint16(raw[50])<<8 | uint16(raw[51])
	p.SL = raw[53] & 0x0f
	p.MTU = uverbs.MTU(raw[54] & 0x3f)
	p.Rate = raw[55] & 0x3f
	p.PacketLifeTime = raw[56] & 0x3f
	return p
}

func (id *ID) queryAddrLocked() (*abi.UcmQueryAddrResp, error) {
	resp := new(abi.UcmQueryAddrResp)
	rb := bytesOf(resp)
	body := abi.UcmQuery{Response: addrOf(rb), ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_ADDR}
	if err := id.command("query addr", abi.RDMA_USER_CM_CMD_QUERY, bytesOf(&body), rb); err != nil {
		return nil, err
	}
	return resp, nil
}

// addrs returns the ID's local and remote addresses: those learnt with
// its device if it has one (a request's stay readable after it is gone),
// else from QUERY(ADDR).
func (id *ID) addrs() (local, remote netip.AddrPort) {
	id.locked("query addr", func() error {
		if id.local.IsValid() || id.remote.IsValid() {
			local, remote = id.local, id.remote
			return nil
		}
		a, err := id.queryAddrLocked()
		if err == nil {
			local, remote = decodeSockaddr(a.SrcAddr.Anon0[:a.SrcSize]), decodeSockaddr(a.DstAddr.Anon0[:a.DstSize])
		}
		return err
	})
	return local, remote
}

func (id *ID) queryLocked() (Info, error) {
	a, err := id.queryAddrLocked()
	if err != nil {
		return Info{}, err
	}
	info := Info{
		Local:    decodeSockaddr(a.SrcAddr.Anon0[:a.SrcSize]),
		Remote:   decodeSockaddr(a.DstAddr.Anon0[:a.DstSize]),
		Port:     a.PortNum,
		PKey:     uint16(a.PKey>>8 | a.PKey<<8),
		NodeGUID: uverbs.GUID(beUint64(a.NodeGUID)),
	}
	if id.dev != nil {
		info.Device = id.dev.Name
	}
	if a.NodeGUID == 0 {
		return info, nil
	}
	g := new(abi.UcmQueryAddrResp)
	gb := bytesOf(g)
	body := abi.UcmQuery{Response: addrOf(gb), ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_GID}
	if err := id.command("query gid", abi.RDMA_USER_CM_CMD_QUERY, bytesOf(&body), gb); err != nil {
		return info, err
	}
	if gid, ok := decodeSockaddrIB(g.SrcAddr.Anon0[:g.SrcSize]); ok {
		info.SGID = gid
	}
	if gid, ok := decodeSockaddrIB(g.DstAddr.Anon0[:g.DstSize]); ok {
		info.DGID = gid
	}
	// QUERY(PATH): a count and up to n struct ib_path_rec_data; librdmacm
	// leaves room for 6.
	const maxPaths = 6
	pb := make([]byte, unsafe.Sizeof(abi.UcmQueryPathResp{})+maxPaths*unsafe.Sizeof(abi.IBPathRecData{}))
	body = abi.UcmQuery{Response: addrOf(pb), ID: id.kid, Option: abi.RDMA_USER_CM_QUERY_PATH}
	if err := id.command("query path", abi.RDMA_USER_CM_CMD_QUERY, bytesOf(&body), pb); err != nil {
		return info, err
	}
	n := int((*abi.UcmQueryPathResp)(unsafe.Pointer(&pb[0])).NumPaths)
	for i := 0; i < n && i < maxPaths; i++ {
		off := int(unsafe.Sizeof(abi.UcmQueryPathResp{})) + i*int(unsafe.Sizeof(abi.IBPathRecData{}))
		rec := (*abi.IBPathRecData)(unsafe.Pointer(&pb[off]))
		info.Paths = append(info.Paths, decodePathRecord(bytesOf(&rec.PathRec)))
	}
	return info, nil
}

// queryDeviceLocked learns the ID's device from QUERY(ADDR) and finds it
// among the uverbs devices (docs/abi.md §4.7: by node GUID and ibdev_index as
// librdmacm's ucma_get_device does, through the process's device cache,
// devices.go). An ID bound to a wildcard address has no device yet
// (node_guid 0). It keeps the addresses too.
func (id *ID) queryDeviceLocked() error {
	a, err := id.queryAddrLocked()
	if err != nil {
		return err
	}
	id.local = decodeSockaddr(a.SrcAddr.Anon0[:a.SrcSize])
	id.remote = decodeSockaddr(a.DstAddr.Anon0[:a.DstSize])
	if a.NodeGUID == 0 {
		return nil
	}
	dev, err := devices.lookup(uverbs.GUID(beUint64(a.NodeGUID)), a.IBDevIndex)
	if err != nil {
		return &sys.OpError{Op: "query addr", Err: err}
	}
	id.dev = &dev
	id.port = a.PortNum
	if id.logging() {
		id.log("%s is on device %s port %d", id, dev.Name, a.PortNum)
	}
	return nil
}

// DeviceInfo returns the RDMA device the ID is bound to, or ok false when
// it has none yet (before ResolveAddr, or bound to a wildcard address). An
// ID opens no device; Conn.Device returns the one a connection opened.
//
// rdma-core: the verbs field of struct rdma_cm_id.
func (id *ID) DeviceInfo() (dev uverbs.DeviceInfo, ok bool) {
	dev, _, ok = id.device()
	return dev, ok
}

// Port returns the device port the ID is bound to, or 0 when it has no
// device yet.
//
// rdma-core: the port_num field of struct rdma_cm_id.
func (id *ID) Port() uint8 {
	_, port, _ := id.device()
	return port
}

// device returns the ID's device and port, ok false when it has none.
func (id *ID) device() (dev uverbs.DeviceInfo, port uint8, ok bool) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.requestDeviceLocked() != nil || id.dev == nil {
		return uverbs.DeviceInfo{}, 0, false
	}
	return *id.dev, id.port, true
}

// requestDeviceLocked finds the device of a connection request when it is
// first needed: the channel's reader, which makes the request's ID, does
// no device work.
func (id *ID) requestDeviceLocked() error {
	if id.dev != nil || id.state != stateRequest || id.closed {
		return nil
	}
	return id.queryDeviceLocked()
}

// SetOption sets an option of the ID: the ACK timeout of its QP, its type
// of service, or address reuse (SET_OPTION, level RDMA_OPTION_ID).
func (id *ID) setOption(name string, optname uint32, val []byte) error {
	op := "set_option " + name
	var pin runtime.Pinner
	pin.Pin(&val[0])
	defer pin.Unpin()
	return id.locked(op, func() error {
		body := abi.UcmSetOption{Optval: addrOf(val), ID: id.kid, Level: abi.RDMA_OPTION_ID, Optname: optname, Optlen: uint32(len(val))}
		id.log("set option %s = %v on %s", name, val, id)
		return id.command(op, abi.RDMA_USER_CM_CMD_SET_OPTION, bytesOf(&body), nil)
	})
}

// SetTOS sets the type of service of the ID's traffic (RDMA_OPTION_ID_TOS);
// call it before ResolveRoute.
//
// rdma-core: rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS).
func (id *ID) SetTOS(tos uint8) error {
	return id.setOption("tos", abi.RDMA_OPTION_ID_TOS, []byte{tos})
}

// SetReuseAddr lets the ID bind to an address in use (RDMA_OPTION_ID_REUSEADDR);
// call it before Bind.
//
// rdma-core: rdma_set_option with RDMA_OPTION_ID_REUSEADDR.
func (id *ID) SetReuseAddr(on bool) error {
	v := make([]byte, 4) // an int
	if on {
		binary.NativeEndian.PutUint32(v, 1)
	}
	return id.setOption("reuseaddr", abi.RDMA_OPTION_ID_REUSEADDR, v)
}

// SetACKTimeout sets the ACK timeout of the ID's QP to 4.096 µs × 2^t
// instead of the one derived from the packet lifetime (19 on 6.1, 17 on
// 6.12 for RoCE: docs/abi.md §4.9). Set it before the QP is moved to RTS
// (before Connect or Accept).
//
// rdma-core: rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT).
func (id *ID) SetACKTimeout(t uint8) error {
	return id.setOption("ack_timeout", abi.RDMA_OPTION_ID_ACK_TIMEOUT, []byte{t})
}
