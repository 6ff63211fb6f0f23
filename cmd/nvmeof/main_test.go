package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func TestParse(t *testing.T) {
	o, err := parse([]string{"perf", "-a", "10.0.0.1", "-n", "nqn.x", "-rw", "read", "-bs", "131072", "-qd", "8", "-t", "3s", "-queues", "2"})
	if err != nil || o.cmd != "perf" || o.addr != "10.0.0.1" || o.port != 4420 || o.nqn != "nqn.x" || o.rw != "read" ||
		o.bs != 131072 || o.qd != 8 || o.dur.Seconds() != 3 || o.queues != 2 || o.nsid != 1 {
		t.Errorf("parse: %+v, %v", o, err)
	}
	if _, err := parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// Each mistake is a usage error that says what to give.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"format"}, `unknown command "format"`},
		{[]string{"discover"}, "-a: the target's address is required"},
		{[]string{"id-ctrl", "-a", "10.0.0.1"}, "-n: the subsystem's NQN is required"},
		{[]string{"read", "-a", "10.0.0.1", "-n", "x"}, "read: -o FILE is required"},
		{[]string{"write", "-a", "10.0.0.1", "-n", "x"}, "write: -i FILE is required"},
		{[]string{"perf", "-a", "10.0.0.1", "-n", "x", "-rw", "trim"}, `-rw "trim"`},
		{[]string{"perf", "-a", "10.0.0.1", "-n", "x", "-qd", "0"}, "must be positive"},
		{[]string{"serve", "-a", "10.0.0.1", "-n", "x"}, "give one of -file PATH and -mem BYTES"},
		{[]string{"serve", "-a", "10.0.0.1", "-n", "x", "-file", "f", "-mem", "4096"}, "give one of"},
		{[]string{"list", "-a", "10.0.0.1", "-n", "x", "-N", "0"}, "-N 0: namespace IDs start at 1"},
		{[]string{"list", "-a", "10.0.0.1", "-n", "x", "-s", "0"}, "-s 0: not a port"},
		{[]string{"list", "-a", "10.0.0.1", "-n", "x", "extra"}, `unexpected argument "extra"`},
	} {
		err := run(context.Background(), c.args, nil)
		var uerr *cmdline.UsageError
		if !errors.As(err, &uerr) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

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
