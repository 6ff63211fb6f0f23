package uverbs

import (
	"net/netip"
	"testing"
)

func TestSenderIP(t *testing.T) {
	v4 := make([]byte, 40)
	v4[20] = 0x45
	copy(v4[32:], []byte{10, 77, 0, 2})
	copy(v4[36:], []byte{10, 77, 0, 1})
	src, dst, err := SenderIP(&WC{Flags: WCGRH}, v4)
	if err != nil || src != netip.MustParseAddr("10.77.0.2") || dst != netip.MustParseAddr("10.77.0.1") {
		t.Fatalf("IPv4 header: %v %v %v", src, dst, err)
	}
	v6 := make([]byte, 40)
	v6[0] = 0x60
	a1, a2 := netip.MustParseAddr("fe80::1"), netip.MustParseAddr("fe80::2")
	copy(v6[8:], a1.AsSlice())
	copy(v6[24:], a2.AsSlice())
	src, dst, err = SenderIP(&WC{Flags: WCGRH}, v6)
	if err != nil || src != a1 || dst != a2 {
		t.Fatalf("IPv6 header: %v %v %v", src, dst, err)
	}
	if _, _, err := SenderIP(&WC{}, v4); err == nil {
		t.Error("a completion without WCGRH gave an address")
	}
	if _, _, err := SenderIP(&WC{Flags: WCGRH}, v4[:39]); err == nil {
		t.Error("a short header area gave an address")
	}
	if _, _, err := SenderIP(&WC{Flags: WCGRH}, make([]byte, 40)); err == nil {
		t.Error("an empty header area gave an address")
	}
}
