package uverbs

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// AH is an address handle: the destination of UD send work requests
// (SendWR.AH).
//
// Close is idempotent and safe on a nil *AH. Posting with a closed AH is
// refused.
//
// rdma-core: struct ibv_ah.
type AH struct {
	// drv is what the providers read of the AH when they encode a UD
	// send: rxe its AH number, mlx5 its address vector (made by mlx5's
	// Context.CreateAH) and a non-zero stand-in number, so that the
	// checks both share accept the AH. It comes first: a *AH is a
	// *provider.AH (provider.go, sendWRs).
	drv    provider.AH
	pd     *PD
	h      uint64
	handle uint32
	attr   AHAttr
	mu     sync.Mutex
	closed atomic.Bool
}

// CreateAH creates an address handle (write() command CREATE_AH). On RoCE
// the kernel resolves the destination's MAC address here, so an unreachable
// address fails now (for example with EHOSTUNREACH or ENETUNREACH).
// Port 0 means port 1.
//
// rdma-core: ibv_create_ah.
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	const op = "create_ah"
	if pd == nil {
		return nil, &OpError{Op: op, Err: errNilParent("PD")}
	}
	if err := pd.ctx.requireAH(op); err != nil {
		return nil, err
	}
	if attr.Port == 0 {
		attr.Port = 1
	}
	if err := attr.check(); err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	c := pd.ctx
	r, err := c.objects(op)
	if err != nil {
		return nil, err
	}
	if err := pd.hold(op); err != nil {
		return nil, err
	}
	ah := &AH{pd: pd, h: newHandle(), attr: attr}
	req := abi.UverbsCreateAH{UserHandle: ah.h, PDHandle: pd.handle, Attr: attr.toAHAttr()}
	if err := ah.create(op, c, &req); err != nil {
		pd.kids.unhold()
		return nil, err
	}
	pd.kids.adopt(ah, kindAH)
	if err := r.add(op, ah.h, kindAH, ah); err != nil {
		ah.close(true)
		return nil, err
	}
	return ah, nil
}

// CreateAHForIP creates an address handle for the RoCE v2 address ip on
// port: the destination GID is ip (IPv4 as ::ffff:a.b.c.d), and the source
// GID is the port's RoCE v2 GID of the local address the kernel's routing
// table picks to reach ip (Device.GIDIndexForIP), or else the port's first
// RoCE v2 GID of the same IP family.
func (pd *PD) CreateAHForIP(port uint8, ip netip.Addr) (*AH, error) {
	const op = "create_ah"
	if pd == nil {
		return nil, &OpError{Op: op, Err: errNilParent("PD")}
	}
	if err := pd.ctx.requireAH(op); err != nil {
		return nil, err
	}
	if !ip.IsValid() {
		return nil, &OpError{Op: op, Err: fmt.Errorf("no destination IP address given (the zero netip.Addr)")}
	}
	if port < 1 {
		return nil, &OpError{Op: op, Err: fmt.Errorf("port %d out of range: ports are numbered from 1", port)}
	}
	idx, err := pd.ctx.sourceGIDIndex(port, ip)
	if err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	return pd.CreateAH(AHAttr{DGID: GIDFromIP(ip), SGIDIndex: idx, HopLimit: 64, Port: port})
}

// sourceGIDIndex picks the GID index to send to ip from.
func (c *Device) sourceGIDIndex(port uint8, ip netip.Addr) (int, error) {
	if src := routeSource(ip); src.IsValid() {
		if idx, err := c.GIDIndexForIP(port, src); err == nil {
			return idx, nil
		}
	}
	entries, err := c.GIDs(port)
	if err != nil {
		return -1, err
	}
	v4 := ip.Unmap().Is4()
	for _, e := range entries {
		if e.Type == GIDTypeRoCEv2 && e.GID.Addr().Is4In6() == v4 && e.Index <= 255 {
			return e.Index, nil
		}
	}
	return -1, fmt.Errorf("%s port %d has no RoCE v2 GID for an %s destination: give the port's network device an address of that family", c.dev.Name, port, map[bool]string{true: "IPv4", false: "IPv6"}[v4])
}

// routeSource returns the local address the kernel would send to ip from,
// by connecting a UDP socket (which sends nothing), or the zero Addr.
func routeSource(ip netip.Addr) netip.Addr {
	conn, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip.Unmap(), 4791)))
	if err != nil {
		return netip.Addr{}
	}
	defer conn.Close()
	if la, ok := conn.LocalAddr().(*net.UDPAddr); ok {
		return la.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// Attr returns the address the AH was created with.
func (ah *AH) Attr() AHAttr { return ah.attr }

// PD returns the AH's protection domain.
//
// rdma-core: the pd of struct ibv_ah.
func (ah *AH) PD() *PD { return ah.pd }

// Close destroys the address handle (DESTROY_AH). Do not close an AH that
// posted work requests still use: rxe resolves the AH number when it sends.
//
// rdma-core: ibv_destroy_ah.
func (ah *AH) Close() error {
	if ah == nil {
		return nil
	}
	return ah.close(false)
}

func (ah *AH) close(bool) error {
	ah.mu.Lock()
	defer ah.mu.Unlock()
	if ah.closed.Load() {
		return nil
	}
	ah.closed.Store(true)
	err := ah.destroy()
	ah.pd.kids.drop(ah)
	ah.pd.ctx.forget(ah.h)
	return ignoreClosedContext(err)
}

func (ah *AH) destroy() error {
	req := abi.UverbsDestroyAH{AHHandle: ah.handle}
	return ah.pd.ctx.write("destroy_ah", abi.IB_USER_VERBS_CMD_DESTROY_AH, bytesOf(&req), nil)
}

// SenderIP returns the IP address of the sender of a UD receive, read from
// the 40-byte header area at the start of the receive buffer (grh). For
// RoCE v2 over IPv4 the kernel leaves the first 20 bytes zero and puts the
// IPv4 header in the last 20 (kernel: sw/rxe/rxe_resp.c copy of the
// network header into union rdma_network_hdr); over IPv6 the area is the
// IPv6 header. It also returns the address the datagram was sent to.
//
// rdma-core: the header parsing of ibv_init_ah_from_wc.
func SenderIP(wc *WC, grh []byte) (src, dst netip.Addr, err error) {
	if wc.Flags&WCGRH == 0 {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("the completion has no GRH: only UD receives carry the sender's address")
	}
	if len(grh) < 40 {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("the GRH area is %d bytes, want the first 40 bytes of the receive buffer", len(grh))
	}
	if grh[20]>>4 == 4 && isZero(grh[:20]) {
		return netip.AddrFrom4([4]byte(grh[32:36])), netip.AddrFrom4([4]byte(grh[36:40])), nil
	}
	if grh[0]>>4 == 6 {
		return netip.AddrFrom16([16]byte(grh[8:24])), netip.AddrFrom16([16]byte(grh[24:40])), nil
	}
	return netip.Addr{}, netip.Addr{}, fmt.Errorf("the GRH area holds neither an IPv4 nor an IPv6 header")
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// CreateAHFromWC creates an address handle that answers the sender of a UD
// receive on port: the destination is the sender's address from the
// receive buffer's header area (grh, see SenderIP), the source GID the
// local one the datagram was sent to. Send to wc.SrcQP with the QKey the
// protocol uses.
//
// rdma-core: ibv_create_ah_from_wc.
func (pd *PD) CreateAHFromWC(port uint8, wc *WC, grh []byte) (*AH, error) {
	const op = "create_ah"
	if pd == nil {
		return nil, &OpError{Op: op, Err: errNilParent("PD")}
	}
	if err := pd.ctx.requireAH(op); err != nil {
		return nil, err
	}
	src, dst, err := SenderIP(wc, grh)
	if err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	idx, err := pd.ctx.GIDIndexForIP(port, dst)
	if err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	return pd.CreateAH(AHAttr{DGID: GIDFromIP(src), SGIDIndex: idx, HopLimit: 64, Port: port})
}

// requireAH refuses address handles on an iWARP device (siw): iWARP has
// only RC QPs, connected through the RDMA CM, and no UD, which is what
// address handles are for (kernel: siw_verbs.c siw_create_qp takes RC
// only).
func (c *Device) requireAH(op string) error {
	if c.dev.Transport() == TransportIWARP {
		return &OpError{Op: op, Err: fmt.Errorf("device %s is iWARP: it has only RC QPs, connected through the RDMA CM, and no address handles (they are for UD QPs): %w", c.dev.Name, ErrNotSupported)}
	}
	return nil
}
