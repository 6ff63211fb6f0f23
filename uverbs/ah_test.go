package uverbs

import (
	"net"
	"testing"
)

func TestSenderIP(t *testing.T) {
	v4 := make([]byte, 40)
	v4[20] = 0x45
	copy(v4[32:], net.IPv4(10, 77, 0, 2).To4())
	copy(v4[36:], net.IPv4(10, 77, 0, 1).To4())
	src, dst, err := SenderIP(&WC{Flags: WCGRH}, v4)
	if err != nil || !src.Equal(net.IPv4(10, 77, 0, 2)) || !dst.Equal(net.IPv4(10, 77, 0, 1)) {
		t.Fatalf("IPv4 header: %v %v %v", src, dst, err)
	}
	v6 := make([]byte, 40)
	v6[0] = 0x60
	copy(v6[8:], net.ParseIP("fe80::1"))
	copy(v6[24:], net.ParseIP("fe80::2"))
	src, dst, err = SenderIP(&WC{Flags: WCGRH}, v6)
	if err != nil || !src.Equal(net.ParseIP("fe80::1")) || !dst.Equal(net.ParseIP("fe80::2")) {
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
