//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fio 3.33's --output-format=json, cut to what parseFio reads and a few
// fields around it.
const fioOut = `{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "perfbench",
      "error" : 0,
      "read" : {
        "io_bytes" : 66564096,
        "bw_bytes" : 66497598,
        "iops" : 16234.765235,
        "runtime" : 1001,
        "total_ios" : 16251,
        "clat_ns" : {"min" : 27000, "percentile" : {"50.000000" : 45000, "99.000000" : 110000}},
        "lat_ns" : {
          "min" : 28320,
          "mean" : 61086.206757,
          "N" : 16251,
          "percentile" : {
            "50.000000" : 46336,
            "99.000000" : 112128
          }
        }
      }
    }
  ]
}`

func TestParseFio(t *testing.T) {
	f, err := parseFio([]byte(fioOut))
	if err != nil {
		t.Fatal(err)
	}
	want := ioFigures{ios: 16251, iops: 16234.765235, mibps: 66497598.0 / (1 << 20), p50: 46.336, p99: 112.128}
	if f != want {
		t.Errorf("parsed %+v, want %+v", f, want)
	}
	for name, out := range map[string]string{
		"no lat percentiles": strings.Replace(fioOut, `"lat_ns"`, `"lat_xx"`, 1),
		"error":              strings.Replace(fioOut, `"error" : 0`, `"error" : 5`, 1),
		"no reads":           strings.Replace(fioOut, `"total_ios" : 16251`, `"total_ios" : 0`, 1),
		"two jobs":           strings.Replace(fioOut, `"jobs" : [`, `"jobs" : [{"error" : 0},`, 1),
		"not JSON":           "fio: pid=1, err=2/file:filesetup.c",
	} {
		if f, err := parseFio([]byte(out)); err == nil {
			t.Errorf("%s: parsed %+v", name, f)
		}
	}
}

func TestParsePerfJSON(t *testing.T) {
	out := `{"rw":"randread","bs":4096,"qd":1,"ios":514,"seconds":2.0,"iops":257,"mib_per_s":1.0,"lat_us":{"avg":600,"p50":544,"p99":36812,"p99.9":40000,"max":41000},"allocs_per_io":4.07,"alloc_bytes_per_io":183}` + "\n"
	f, err := parsePerfJSON([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if want := (ioFigures{ios: 514, iops: 257, mibps: 1, p50: 544, p99: 36812, allocsPerIO: 4.07, bytesPerIO: 183}); f != want {
		t.Errorf("parsed %+v, want %+v", f, want)
	}
	for _, bad := range []string{
		"randread bs=4096 qd=1: 514 IOs in 2.00s", // the human-readable line
		strings.Replace(out, `"ios":514`, `"ios":0`, 1),
		strings.Replace(out, `"allocs_per_io"`, `"x"`, 1),
	} {
		if f, err := parsePerfJSON([]byte(bad)); err == nil {
			t.Errorf("%q: parsed %+v", bad, f)
		}
	}
}

// strace 6.1's -c table, with a note of a thread detached mid-call, as
// strace -p writes when interrupted.
const straceOut = `173   ???( <detached ...>
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 60.00    0.600000          60     10000           io_uring_enter
 30.00    0.300000          30      1000       100 futex
 10.00    0.100000         100        10           rt_sigreturn
------ ----------- ----------- --------- --------- ----------------
100.00    1.000000          90     11010       100 total
`

func TestParseStrace(t *testing.T) {
	m, err := parseStrace([]byte(straceOut))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 || m["io_uring_enter"] != 10000 || m["futex"] != 1000 || m["rt_sigreturn"] != 10 {
		t.Errorf("parsed %v", m)
	}
	// A row lost, or no total line: the sum does not match.
	for _, bad := range []string{
		strings.Replace(straceOut, " 30.00    0.300000          30      1000       100 futex\n", "", 1),
		straceOut[:strings.Index(straceOut, "100.00")],
		"",
	} {
		if m, err := parseStrace([]byte(bad)); err == nil {
			t.Errorf("parsed %v from %q", m, bad)
		}
	}
}

// The counts per I/O are the long run's less the short one's, over the
// difference in I/Os; a call only one of them made counts too.
func TestNVMeCost(t *testing.T) {
	runs := map[time.Duration]struct {
		ios    int
		counts map[string]int
	}{
		costShort: {1000, map[string]int{"execve": 1, "write": 1100, "futex": 500, "mmap": 40}},
		costLong:  {3000, map[string]int{"execve": 1, "write": 3100, "futex": 1500, "epoll_pwait": 20}},
	}
	total, each, err := nvmeCost(func(d time.Duration) (int, map[string]int, error) {
		return runs[d].ios, runs[d].counts, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// (1+3100+1500+20) - (1+1100+500+40) = 2980 over 2000 I/Os.
	if total != 1.49 {
		t.Errorf("total %v per I/O, want 1.49", total)
	}
	if each["write"] != 1 || each["futex"] != 0.5 || each["execve"] != 0 || each["epoll_pwait"] != 0.01 || each["mmap"] != -0.02 {
		t.Errorf("by name %v", each)
	}
	if got := topCalls(each, 2); got != "write 1.00, futex 0.50" {
		t.Errorf("topCalls %q", got)
	}
	if got := topCalls(each, 9); got != "write 1.00, futex 0.50, epoll_pwait 0.01" {
		t.Errorf("topCalls %q", got)
	}
	_, _, err = nvmeCost(func(d time.Duration) (int, map[string]int, error) { return 100, nil, nil })
	if err == nil {
		t.Error("runs of the same I/Os gave a cost")
	}
}

func TestNVMeTables(t *testing.T) {
	c := nvmeCell{"randread", 4096, 32}
	if c.name() != "4 KiB randread qd 32" {
		t.Errorf("name %q", c.name())
	}
	if got := strings.Join(fioArgs("/dev/nvme0n1", nvmeCell{"read", 128 << 10, 8}, 4*time.Second, "io_uring", "/x.json"), " "); got !=
		"fio --name=perfbench --filename=/dev/nvme0n1 --ioengine=io_uring --direct=1 --rw=read --bs=131072 --iodepth=8 --numjobs=1 --time_based=1 --runtime=4 --norandommap=1 --randrepeat=0 --lat_percentiles=1 --percentile_list=50:99 --output-format=json --output=/x.json" {
		t.Errorf("fio's arguments: %s", got)
	}
	k := []ioFigures{{iops: 100, mibps: 0.39, p50: 300, p99: 900}, {iops: 300, mibps: 1.17, p50: 100, p99: 700}, {iops: 200, mibps: 0.78, p50: 200, p99: 800}}
	o := []ioFigures{{iops: 150, mibps: 0.59, p50: 240, p99: 2000}}
	if got, want := nvmeLine(c, k, o), "| 4 KiB randread qd 32 | 200 | 150 | 0.75 | 0.78 | 0.59 | 200 | 240 | 1.20 | 800 | 2000 | 2.50 |"; got != want {
		t.Errorf("line\n%s\nwant\n%s", got, want)
	}
	if got, want := nvmeLine(c, k, nil), "| 4 KiB randread qd 32 | 200 | n/a | n/a | 0.78 | n/a | 200 | n/a | n/a | 800 | n/a | n/a |"; got != want {
		t.Errorf("line without our runs\n%s\nwant\n%s", got, want)
	}

	for _, who := range []string{costHost, costHost1} {
		k := nvmeKinds[hostKind(who)]
		if !k.ourHost || k.ourTarget || (k.procs == 1) != (who == costHost1) {
			t.Errorf("the cost row %q reads the runs of %+v", who, k)
		}
	}
	if hostKind(costFio) != -1 || hostKind(costTarget) != -1 {
		t.Error("fio's or our target's cost row reads a host's allocations")
	}

	got := [][len(nvmeKinds)][]ioFigures{{k, {{allocsPerIO: 4, bytesPerIO: 180}, {allocsPerIO: 4.2, bytesPerIO: 190}, {allocsPerIO: 5, bytesPerIO: 200}}, {{allocsPerIO: 1, bytesPerIO: 8}}, o}}
	costs := []nvmeCostRow{
		{cell: c, who: costFio, perIO: 1.5, each: map[string]float64{"io_uring_enter": 1, "futex": 0.5}},
		{cell: c, who: costHost, err: "strace: no"},
	}
	var b bytes.Buffer
	writeNVMeCosts(&b, []nvmeCell{c}, got, costs)
	want := "| I/O | program | system calls per I/O | the most frequent, per I/O | heap allocations per I/O |\n" +
		"|---|---|---:|---|---:|\n" +
		"| 4 KiB randread qd 32 | fio + kernel host | 1.50 | io_uring_enter 1.00, futex 0.50 |  |\n" +
		"| 4 KiB randread qd 32 | our host | n/a | failed (below) | 4.20 (190 B) |\n" +
		"| 4 KiB randread qd 32 | our host, GOMAXPROCS=1 | n/a |  | 1.00 (8 B) |\n" +
		"| 4 KiB randread qd 32 | our target, served to fio | n/a |  |  |\n" +
		"\nCounts that failed:\n\n- 4 KiB randread qd 32, our host: strace: no\n"
	if b.String() != want {
		t.Errorf("cost table\n%s\nwant\n%s", b.String(), want)
	}
}
