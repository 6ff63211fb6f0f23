package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestCompareWQEs(t *testing.T) {
	off := offsets{ssn: 176, iova: 152}
	slot := func(fill func(b []byte)) []byte {
		b := make([]byte, 2*512)
		for s := 0; s < 2; s++ {
			fill(b[s*512 : (s+1)*512])
		}
		return b
	}
	base := func(b []byte) { b[0], b[12], b[208] = 1, 2, 3 }
	c := slot(func(b []byte) { base(b); b[176] = 9; b[152] = 0x40 })
	g := slot(base)
	// Two WQEs of a list: ssn aside, equal.
	if err := compareWQEs("write_list32", append(c, make([]byte, 30*1024)...)[:32*512], append(g, make([]byte, 30*1024)...)[:32*512], off); err == nil || !strings.Contains(err.Error(), "byte 152") {
		t.Errorf("a WRITE's iova must be compared: %v", err)
	}
	if err := compareWQEs("ud_send", c[:512], g[:512], off); err != nil {
		t.Errorf("ssn and a SEND's iova are left out: %v", err)
	}
	g[208+512] = 4
	if err := compareWQEs("ud_send", c[:512], g[:512], off); err != nil {
		t.Errorf("only the first slot counts for a single post: %v", err)
	}
	if err := compareWQEs("ud_send", c[512:], g[512:], off); err == nil || !strings.Contains(err.Error(), "byte 208 of slot 0") {
		t.Errorf("a payload difference must fail: %v", err)
	}
	// Receive WQEs are compared whole.
	r1, r2 := make([]byte, 64), make([]byte, 64)
	r2[176%64] = 1
	if err := compareWQEs("recv", r1, r2, off); err == nil {
		t.Error("a receive WQE differing at any byte must fail")
	}
	if err := compareWQEs("recv", r1, r2[:32], off); err == nil {
		t.Error("different lengths must fail")
	}
}

func TestParse(t *testing.T) {
	var h, g strings.Builder
	for i, r := range rows {
		h.WriteString("row " + r.name + " 12.5\n")
		if i == 0 {
			g.WriteString("goos: linux\n")
		}
		g.WriteString("BenchmarkNative/" + r.name + "-2   \t 100\t 400.0 ns/op\t 25.00 ns/wr\t 0 B/op\t 0 allocs/op\n")
	}
	hr, err := parseHarness([]byte(h.String()))
	if err != nil || hr["poll_16"] != 12.5 {
		t.Errorf("parseHarness: %v %v", hr, err)
	}
	gr, err := parseGoBench([]byte(g.String()))
	if err != nil || gr["write_list32"] != 25 {
		t.Errorf("parseGoBench: %v %v", gr, err)
	}
	if _, err := parseHarness([]byte("row write 1\n")); err == nil {
		t.Error("missing rows must fail")
	}
	if _, err := parseOffsets([]byte("ssn_offset 176\n")); err == nil {
		t.Error("a missing iova offset must fail")
	}
	if o, err := parseOffsets([]byte("ssn_offset 176\niova_offset 152\n")); err != nil || o != (offsets{176, 152}) {
		t.Errorf("parseOffsets: %v %v", o, err)
	}
}

func TestStubSource(t *testing.T) {
	s := stubSource([]byte("                 U __errno_location\n                 U ibv_cmd_create_qp\n                 U verbs_register_driver_34\n                 U __verbs_log\n                 U memcpy\n"))
	for _, want := range []string{"void ibv_cmd_create_qp(void) { fputs(", "void verbs_register_driver_34(void) {}", "void __verbs_log(void) { fputs("} {
		if !strings.Contains(s, want) {
			t.Errorf("stubs lack %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "memcpy") || strings.Contains(s, "errno") {
		t.Errorf("libc symbols must not be stubbed:\n%s", s)
	}
}

func TestMedianReplace(t *testing.T) {
	if m := median([]float64{5, 1, 3, 2, 4}); m != 3 {
		t.Errorf("median %v", m)
	}
	doc := "a\n<!-- b -->\nold\n<!-- e -->\nz"
	got, err := replace(doc, "<!-- b -->", "<!-- e -->", "new\n")
	if err != nil || got != "a\n<!-- b -->\nnew\n<!-- e -->\nz" {
		t.Errorf("replace: %q %v", got, err)
	}
	if _, err := replace("x", "<!-- b -->", "<!-- e -->", ""); err == nil {
		t.Error("missing markers must fail")
	}
}

// The mlx5 harness's output: each row's "case" line, then its "bench"
// figure; a missing row is an error.
func TestParseMLX5Harness(t *testing.T) {
	var h strings.Builder
	for i, r := range rows {
		fmt.Fprintf(&h, "case %s\nbench %d.5\nend\n", r.name, i+1)
	}
	res, err := parseMLX5Harness([]byte(h.String()))
	if err != nil || len(res) != len(rows) || res["write"] != 1.5 || res["poll_empty"] != float64(len(rows))+0.5 {
		t.Fatalf("parseMLX5Harness: %v %v", res, err)
	}
	if _, err := parseMLX5Harness([]byte("case write\nbench 1\nend\n")); err == nil {
		t.Fatal("parseMLX5Harness accepted output without every row")
	}
}
