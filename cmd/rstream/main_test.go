package main

import (
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func TestSizeStr(t *testing.T) {
	for size, want := range map[int64]string{64: "64", 192: "192", 1024: "1k", 1536: "1.5k", 4096: "4k", 65536: "64k", 98304: "96k", 1 << 20: "1m", 3 << 19: "1.5m", 200000000: "190m", 1 << 31: "2g"} {
		if got := sizeStr(size, 31); got != want {
			t.Errorf("sizeStr(%d) = %q, want %q", size, got, want)
		}
	}
	if got := sizeStr(1536, 4); got != "1.5k" {
		t.Errorf("test name part %q", got)
	}
	for n, want := range map[int64]string{1: "1", 999: "999", 1000: "1k", 100000: "100k", 2000000: "2m", 3000000000: "3b"} {
		if got := cntStr(n); got != want {
			t.Errorf("cntStr(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	o, err := parse([]string{"-s", "10.0.0.1", "-S", "4096", "-T", "b", "-T", "verify", "-p", "7000"})
	if err != nil || !o.custom || o.size != 4096 || o.busy || !o.verify || o.port != "7000" || o.server != "10.0.0.1" {
		t.Fatalf("parse: %+v, %v", o, err)
	}
	if o, err = parse(nil); err != nil || o.custom || !o.busy || o.size != 1000 || o.count != 1000 || o.iterations != 1 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"-T", "bv"}, {"-T", "f"}, {"-f", "gid"}, {"-S", "0"}, {"-C", "x"}, {"-p", "70000"}, {"extra"}} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}
