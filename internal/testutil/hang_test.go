package testutil

import "testing"

func TestProcNetAddr(t *testing.T) {
	for in, want := range map[string]string{
		"01004F0A:1F90": "10.79.0.1:8080",
		"0100007F:0016": "127.0.0.1:22",
		"bogus":         "bogus",
	} {
		if got := procNetAddr(in); got != want {
			t.Errorf("procNetAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
