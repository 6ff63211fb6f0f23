package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// perf's figures, as printed and as -json prints them.
func TestPerfReport(t *testing.T) {
	r := perfResult{rw: "randread", bs: 4096, qd: 2, dur: 2 * time.Second, ios: 100, allocs: 250, allocBytes: 4000}
	for i := 1; i <= 100; i++ {
		r.lat = append(r.lat, time.Duration(i)*time.Microsecond)
	}
	p := r.report()
	if p.IOPS != 50 || p.MiBps != 50*4096.0/(1<<20) || p.Lat.Avg != 50.5 || p.Lat.P50 != 51 || p.Lat.P99 != 100 || p.Lat.Max != 100 {
		t.Errorf("report %+v", p)
	}
	if p.AllocsPerIO != 2.5 || p.AllocBytesPerIO != 40 {
		t.Errorf("allocations per I/O %v, %v bytes", p.AllocsPerIO, p.AllocBytesPerIO)
	}
	want := "randread bs=4096 qd=2: 100 IOs in 2.00s: 50 IOPS, 0.2 MiB/s; latency us: avg 50.5 p50 51.0 p99 100.0 p99.9 100.0 max 100.0"
	if s := r.String(); s != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"ios":100`, `"iops":50`, `"lat_us":{"avg":50.5,"p50":51,"p99":100,"p99.9":100,"max":100}`, `"allocs_per_io":2.5`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("%s lacks %s", b, k)
		}
	}
	// No I/O: zeros, not NaN, which JSON cannot carry.
	if _, err := json.Marshal(perfResult{rw: "read", dur: time.Second}.report()); err != nil {
		t.Errorf("an empty run: %v", err)
	}
	o, err := parse([]string{"perf", "-a", "10.0.0.1", "-n", "nqn.x", "-json"})
	if err != nil || !o.json {
		t.Errorf("parse -json: %+v, %v", o, err)
	}
}
