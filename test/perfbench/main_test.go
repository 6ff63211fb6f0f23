package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The client's table lines of perftest and rdma-perf, as printed.
func TestParse(t *testing.T) {
	bw := " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n" +
		" 4096       200              72.50              21.84  \t\t   0.005591\n" +
		"---------------------------------------------------------------------------------------\n"
	r, err := parse(cell{test: "write_bw", size: 4096}, []byte("header\n"+bw))
	if err != nil || r.bw != 21.84 {
		t.Fatalf("bw: %+v, %v", r, err)
	}
	lat := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n" +
		" 64      200          12.21          167.73      14.93    \t       37.45     \t15.72\t\t118.65 \t\t167.73\n"
	r, err = parse(cell{test: "send_lat", size: 64}, []byte(lat))
	if err != nil || r.typical != 14.93 || r.p999 != 167.73 {
		t.Fatalf("lat: %+v, %v", r, err)
	}
	// perftest prints inf and -nan when its clock reading fails.
	for _, bad := range []string{"no table\n", lat[:strings.Index(lat, "\n")+1] + " 64 200 inf inf inf inf 1 inf inf\n"} {
		if _, err := parse(cell{test: "send_lat", size: 64}, []byte(bad)); err == nil {
			t.Errorf("parse(%q) succeeded", bad)
		}
	}
}

func TestReplaceAndRatios(t *testing.T) {
	doc := "a\n" + perfBegin + "\nold\n" + perfEnd + "\nz\n"
	got, err := replace(doc, perfBegin, perfEnd, "new\n")
	if err != nil || got != "a\n"+perfBegin+"\nnew\n"+perfEnd+"\nz\n" {
		t.Fatalf("replace = %q, %v", got, err)
	}
	if _, err := replace("x", perfBegin, perfEnd, ""); err == nil {
		t.Fatal("replace without markers succeeded")
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Fatalf("median %v", m)
	}
	if ratio(0, 1) != "n/a" || ratio(3, 2) != "1.50" {
		t.Fatal("ratio")
	}
	l := line(cell{test: "read_lat", size: 65536, cm: true, events: true}, []result{{typical: 2, p999: 4}}, []result{{typical: 3, p999: 2}})
	if l != "| -R veth -e | read_lat | 64 KiB | 2.00 | 3.00 | 1.50 | 4.00 | 2.00 | 0.50 |" {
		t.Fatalf("line %q", l)
	}
}

// write finds every marker of the module's BENCHMARKS.md: each section
// file lands between its own markers, and the text outside them is kept.
func TestWriteBenchmarksMarkers(t *testing.T) {
	doc, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "BENCHMARKS.md")
	if err := os.WriteFile(md, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	secs := []struct{ flag, begin, end string }{
		{"-in", perfBegin, perfEnd}, {"-cmtime", cmBegin, cmEnd}, {"-rstream", rsBegin, rsEnd},
		{"-scale", scBegin, scEnd}, {"-connrate", crBegin, crEnd}, {"-nvmeof", nvBegin, nvEnd},
	}
	args := []string{"write"}
	for _, sec := range secs {
		f := filepath.Join(dir, sec.flag[1:]+".md")
		if err := os.WriteFile(f, []byte("new "+sec.flag+" section\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, sec.flag, f)
	}
	host := filepath.Join(dir, "host.txt")
	if err := os.WriteFile(host, []byte("goos: linux\npkg: x\nBenchmarkX-2 1 2 ns/op\nPASS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args = append(args, "-host", host, md)
	if err := writeCmd(args[1:]); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	out := string(got)
	for _, sec := range secs {
		if want := sec.begin + "\nnew " + sec.flag + " section\n" + sec.end; !strings.Contains(out, want) {
			t.Errorf("%s section not written between its markers", sec.flag)
		}
	}
	if want := hostBegin + "\n```\ngoos: linux\nBenchmarkX-2 1 2 ns/op\n```\n" + hostEnd; !strings.Contains(out, want) {
		t.Errorf("host benchmarks not written between their markers")
	}
	// What lies outside the markers is the same before and after.
	outside := func(s string) string {
		for _, m := range [][2]string{{perfBegin, perfEnd}, {cmBegin, cmEnd}, {rsBegin, rsEnd}, {scBegin, scEnd}, {crBegin, crEnd}, {nvBegin, nvEnd}, {hostBegin, hostEnd}} {
			s = s[:strings.Index(s, m[0])] + s[strings.Index(s, m[1]):]
		}
		return s
	}
	if outside(out) != outside(string(doc)) {
		t.Error("write changed text outside the markers")
	}
	// The host benchmarks alone are a valid request.
	if err := writeCmd([]string{"-host", host, md}); err != nil {
		t.Errorf("write -host alone: %v", err)
	}
}

func TestParseCmtime(t *testing.T) {
	out := []byte(`creating id
resolving address
step              total ms     max ms     min us  us / conn
create id    :        1.06       0.08      11.00      21.24
resolve addr :        8.58       7.54    4449.00     171.60
resolve route:        3.26       1.42      42.00      65.26
create qp    :       17.54       4.42     212.00     350.72
connect      :      136.21     128.18   30566.00    2724.26
disconnect   :       82.15      65.49   43272.00    1643.06
destroy      :        1.74       0.32      16.00      34.76
`)
	s, err := parseCmtime(out)
	if err != nil {
		t.Fatal(err)
	}
	if s["connect"] != 2724.26 || s["destroy"] != 34.76 {
		t.Errorf("parsed %v", s)
	}
	if want := 21.24 + 171.60 + 65.26 + 350.72 + 2724.26; s["set-up"] < want-0.01 || s["set-up"] > want+0.01 {
		t.Errorf("set-up %v, want %v", s["set-up"], want)
	}
	if _, err := parseCmtime(out[:200]); err == nil {
		t.Error("a table without all its rows parsed")
	}
}

// The scaling lines spread the same number of messages over 1, 8 and 64
// QPs, and pass -q only when there is more than one.
func TestScaleCells(t *testing.T) {
	cells := scaleCells()
	if len(cells) != 2*len(scaleQPs) {
		t.Fatalf("%d cells", len(cells))
	}
	for _, c := range cells {
		if c.iters()*c.qps != scaleMessages {
			t.Errorf("%s -q %d: -n %d, %d messages in all, want %d", c.test, c.qps, c.iters(), c.iters()*c.qps, scaleMessages)
		}
		if c.iters()%100 != 0 {
			t.Errorf("%s -q %d: -n %d is not a multiple of the CQ moderation (100)", c.test, c.qps, c.iters())
		}
	}
}

// The latency lines run send_lat, then write_lat, with every QP count on
// lat_many's C side, the same exchanges in all on every line.
func TestLatManyCells(t *testing.T) {
	cells := latManyCells("/x/lat_many")
	if len(cells) != 2*len(scaleQPs) {
		t.Fatalf("%d cells", len(cells))
	}
	for i, c := range cells {
		test := []string{"send_lat", "write_lat"}[i/len(scaleQPs)]
		if c.test != test || !c.lat() || c.size != 64 || c.qps != scaleQPs[i%len(scaleQPs)] || c.iters() != latManyExchanges || c.cprog != "/x/lat_many" {
			t.Errorf("cell %d: %+v", i, c)
		}
	}
	if cName(cells[0], false) != "C lat_many" || cName(cells[0], true) != "rdma-perf" || cName(cell{test: "send_bw"}, false) != "C perftest" {
		t.Error("cName")
	}
}

// lat_many prints perftest's latency line, which parse reads as
// perftest's, p99 included.
func TestParseLatMany(t *testing.T) {
	out := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n" +
		" 64      2000          20.51          311.40      31.25  \t       35.02     \t14.90\t\t98.75  \t\t250.00 \n"
	r, err := parse(cell{test: "send_lat", size: 64, cprog: "lat_many"}, []byte(out))
	if err != nil || r.typical != 31.25 || r.p99 != 98.75 || r.p999 != 250 {
		t.Fatalf("parse: %+v, %v", r, err)
	}
}

// The latency table: medians of the rounds, ours over C, and each
// program's typical over its own one-QP typical.
func TestWriteScaleLat(t *testing.T) {
	rows := []scaleRow{
		{c: cell{test: "send_lat", qps: 1}, cs: []result{{typical: 10, p99: 20}, {typical: 30, p99: 40}, {typical: 20, p99: 30}}, g: []result{{typical: 15, p99: 30}}},
		{c: cell{test: "send_lat", qps: 8}, cs: []result{{typical: 40, p99: 60}}, g: []result{{typical: 30, p99: 90}}},
		{c: cell{test: "send_lat", qps: 64}, cs: []result{{typical: 40, p99: 60}}}, // every Go run failed
		// "vs 1 QP" is over write_lat's own one-QP line.
		{c: cell{test: "write_lat", qps: 1}, cs: []result{{typical: 8, p99: 16}}, g: []result{{typical: 10, p99: 20}}},
		{c: cell{test: "write_lat", qps: 8}, cs: []result{{typical: 16, p99: 32}}, g: []result{{typical: 15, p99: 20}}},
	}
	var b bytes.Buffer
	writeScaleLat(&b, rows)
	want := "| test | QPs | C typical | ours typical | ours/C | C vs 1 QP | ours vs 1 QP | C p99 | ours p99 | p99 ours/C |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" +
		"| send_lat | 1 | 20.00 | 15.00 | 0.75 | 1.00 | 1.00 | 30.00 | 30.00 | 1.00 |\n" +
		"| send_lat | 8 | 40.00 | 30.00 | 0.75 | 2.00 | 2.00 | 60.00 | 90.00 | 1.50 |\n" +
		"| send_lat | 64 | 40.00 | n/a | n/a | 2.00 | n/a | 60.00 | n/a | n/a |\n" +
		"| write_lat | 1 | 8.00 | 10.00 | 1.25 | 1.00 | 1.00 | 16.00 | 20.00 | 1.25 |\n" +
		"| write_lat | 8 | 16.00 | 15.00 | 0.94 | 2.00 | 1.50 | 32.00 | 20.00 | 0.62 |\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
