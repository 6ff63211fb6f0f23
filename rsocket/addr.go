package rsocket

import (
	"fmt"
	"net/netip"
)

// Network is the network name of every Addr: "rdma". Dial and Listen also
// accept "rdma4" and "rdma6" to ask for one address family, and "tcp",
// "tcp4" and "tcp6" as the same three: rsocket streams live in the CM's TCP
// port space, and callers such as http.Transport ask for "tcp".
const Network = "rdma"

// Addr is the address of an rsocket endpoint: the IP address of the RDMA
// device's netdev (RoCE) and the CM port, which is a port space of its own
// (RDMA_PS_TCP), apart from TCP's.
type Addr struct {
	netip.AddrPort
}

// Network returns "rdma".
func (a *Addr) Network() string { return Network }

// String returns "ip:port", "[ipv6]:port".
func (a *Addr) String() string {
	if a == nil {
		return "<nil>"
	}
	return a.AddrPort.String()
}

// ipFamily checks an address against the network asked for.
func ipFamily(network string, ap netip.AddrPort) error {
	switch network {
	case "rdma", "tcp":
		return nil
	case "rdma4", "tcp4":
		if ap.Addr().Unmap().Is4() || !ap.Addr().IsValid() {
			return nil
		}
		return fmt.Errorf("%v is not an IPv4 address (network rdma4)", ap.Addr())
	case "rdma6", "tcp6":
		if ap.Addr().Is6() && !ap.Addr().Is4In6() || !ap.Addr().IsValid() {
			return nil
		}
		return fmt.Errorf("%v is not an IPv6 address (network rdma6)", ap.Addr())
	}
	return fmt.Errorf("unknown network %q: use rdma, rdma4 or rdma6 (or tcp, tcp4, tcp6)", network)
}
