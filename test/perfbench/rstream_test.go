package main

import (
	"strings"
	"testing"
)

// The client's output of rdma-core's rstream and of cmd/rstream in custom
// mode, as printed.
func TestParseRstream(t *testing.T) {
	const header = "name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n"
	c := header + "custom    4k      1k      1       7.8m        0.26s      0.25     129.70\n"
	r, err := parseRstream([]byte(c))
	if err != nil || r != (rstreamRow{secs: 0.26, gbps: 0.25, usec: 129.70}) {
		t.Fatalf("C row: %+v, %v", r, err)
	}
	bw, err := r.figure(rstreamCell{size: 4096})
	if err != nil || bw < 252.64 || bw > 252.65 { // 4096*8 bits / 129.70 µs
		t.Errorf("bandwidth %v Mb/s, %v", bw, err)
	}
	if lat, err := r.figure(rstreamCell{size: 4096, lat: true}); err != nil || lat != 259.40 {
		t.Errorf("round trip %v µs, %v", lat, err)
	}
	// Ours, a latency run, with a keepalive line before the row.
	g := header + "Keepalive: ON\n  time: 5\ncustom    64      1       8k      1000k       1.39s      0.01      86.99\n"
	if r, err := parseRstream([]byte(g)); err != nil || r.usec != 86.99 || r.secs != 1.39 {
		t.Errorf("Go row: %+v, %v", r, err)
	}

	for name, out := range map[string]string{
		// The C program's clock gave 0 µs: Gb/sec is inf.
		"inf":       header + "custom    64      1       1       128         0.00s       inf       0.00\n",
		"nan":       header + "custom    64      1       1       128         0.00s      -nan       -nan\n",
		"no s":      header + "custom    64      1       1       128         0.00      0.01       3.00\n",
		"cut short": header + "custom    64      1       1       128         0.10s      0.01\n",
		"garbage":   header + "custom    64      1       1       128         x.10s      0.01       3.00\n",
		"negative":  header + "custom    64      1       1       128         0.10s     -0.01       3.00\n",
		"no row":    header + "rrecv: Connection reset by peer\n",
		"empty":     "",
	} {
		if r, err := parseRstream([]byte(out)); err == nil {
			t.Errorf("%s: parsed %+v", name, r)
		}
	}
	// A finite row whose time is 0 gives no figure.
	r, err = parseRstream([]byte(header + "custom    64      1       1       128         0.00s      0.00       0.00\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, lat := range []bool{false, true} {
		if v, err := r.figure(rstreamCell{size: 64, lat: lat}); err == nil {
			t.Errorf("figure(lat=%v) of a zero time = %v", lat, v)
		}
	}
}

func TestRstreamLine(t *testing.T) {
	c := rstreamCell{size: 1 << 20, n: 40}
	if got := strings.Join(c.args(true, 7000), " "); got != "-p 7000 -S 1048576 -C 40 -I 1 -T b -T s" {
		t.Errorf("bw args %q", got)
	}
	c = rstreamCell{size: 64, lat: true, n: 8000, scale: 0.01}
	if got := strings.Join(c.args(false, 7001), " "); got != "-p 7001 -S 64 -C 1 -I 80 -T b" {
		t.Errorf("lat args %q", got)
	}
	// A kind with no run that succeeded is n/a, and so are its ratios.
	l := rstreamLine(rstreamCell{size: 65536, lat: true}, []float64{100, 300, 200}, []float64{220}, nil, []float64{50})
	if l != "| 64 KiB | lat | 200.00 | 220.00 | 1.10 | n/a | 50.00 | 4.40 |" {
		t.Errorf("line %q", l)
	}
	l = rstreamLine(rstreamCell{size: 64}, []float64{10}, nil, []float64{40}, []float64{30})
	if l != "| 64 B | bw | 10.00 | n/a | n/a | 40.00 | 30.00 | n/a |" {
		t.Errorf("line %q", l)
	}
}
