package testutil

import (
	"bytes"
	"testing"
)

func TestRandomBytes(t *testing.T) {
	a, b := RandomBytes(1<<20+3), RandomBytes(1<<20+3)
	if len(a) != 1<<20+3 {
		t.Fatalf("%d bytes, want %d", len(a), 1<<20+3)
	}
	if bytes.Equal(a, b) {
		t.Fatal("two calls gave the same bytes")
	}
	if bytes.Count(a, []byte{0}) > len(a)/128 {
		t.Fatalf("%d zero bytes in %d: not random", bytes.Count(a, []byte{0}), len(a))
	}
}
