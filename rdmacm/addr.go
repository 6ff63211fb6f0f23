package rdmacm

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/unix"
)

// The CM takes addresses as struct sockaddr_in / sockaddr_in6 inside a
// struct __kernel_sockaddr_storage, with the port in network order.
const (
	sizeofSockaddrIn  = 16
	sizeofSockaddrIn6 = 28
	afIB              = 27 // AF_IB: struct sockaddr_ib, what QUERY(GID) answers with
)

// encodeSockaddr writes ap into st and returns the size of its family's
// sockaddr. IPv4-mapped IPv6 addresses are written as IPv4, as the kernel
// compares families (kernel: core/cma.c cma_addr_cmp).
func encodeSockaddr(st *abi.KernelSockaddrStorage, ap netip.AddrPort) (uint16, error) {
	b := st.Anon0[:]
	clear(b)
	a := ap.Addr().Unmap()
	switch {
	case a.Is4():
		binary.NativeEndian.PutUint16(b[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		ip := a.As4()
		copy(b[4:8], ip[:])
		return sizeofSockaddrIn, nil
	case a.Is6():
		binary.NativeEndian.PutUint16(b[0:], unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		ip := a.As16()
		copy(b[8:24], ip[:])
		if z := a.Zone(); z != "" {
			id, err := zoneIndex(z)
			if err != nil {
				return 0, err
			}
			binary.NativeEndian.PutUint32(b[24:], id)
		}
		return sizeofSockaddrIn6, nil
	}
	return 0, fmt.Errorf("no address given: %w", unix.EINVAL)
}

func zoneIndex(z string) (uint32, error) {
	if n, err := strconv.ParseUint(z, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(z)
	if err != nil {
		return 0, fmt.Errorf("IPv6 zone %q: %w", z, err)
	}
	return uint32(ifi.Index), nil
}

// decodeSockaddr reads an AF_INET or AF_INET6 address; anything else gives
// the zero AddrPort.
func decodeSockaddr(b []byte) netip.AddrPort {
	if len(b) < sizeofSockaddrIn {
		return netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.NativeEndian.Uint16(b[0:]) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case unix.AF_INET6:
		if len(b) < sizeofSockaddrIn6 {
			return netip.AddrPort{}
		}
		a := netip.AddrFrom16([16]byte(b[8:24]))
		if id := binary.NativeEndian.Uint32(b[24:]); id != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(id), 10))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}

// decodeSockaddrIB reads the GID of a struct sockaddr_ib (family u16, pkey
// be16, flowinfo be32, sib_addr 16 bytes, ...; <rdma/ib.h>).
func decodeSockaddrIB(b []byte) (gid [16]byte, ok bool) {
	if len(b) < 24 || binary.NativeEndian.Uint16(b[0:]) != afIB {
		return gid, false
	}
	copy(gid[:], b[8:24])
	return gid, true
}

// ParseAddress resolves "host:port" (a literal IPv4 or IPv6 address, or a
// name looked up with the system resolver) to an address and port. An
// empty host ("":port or ":7471") is the wildcard address, for Listen.
//
// rdma-core: rdma_getaddrinfo.
func ParseAddress(ctx context.Context, address string) (netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: want host:port (e.g. 10.0.0.1:7471 or [fe80::1%%eth0]:7471): %w", address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		p, lerr := net.DefaultResolver.LookupPort(ctx, "tcp", portStr)
		if lerr != nil {
			return netip.AddrPort{}, fmt.Errorf("address %q: port %q is not a number from 0 to 65535", address, portStr)
		}
		port = uint64(p)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)), nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a, uint16(port)), nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", address, err)
	}
	if len(addrs) == 0 {
		return netip.AddrPort{}, fmt.Errorf("address %q: host %q has no address", address, host)
	}
	return netip.AddrPortFrom(addrs[0].Unmap(), uint16(port)), nil
}
