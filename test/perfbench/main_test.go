package main

import (
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
