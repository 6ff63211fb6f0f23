//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goverbs/rdma/internal/nvmetest"
)

// nvmeofCmd compares NVMe over RDMA hosts and targets in the lab, all on
// the first veth end's address (rxe1): the kernel's target (nvmet_rdma,
// through internal/nvmetest) and ours (cmd/nvmeof serve) each serve a
// namespace in a file on the guest's tmpfs; the kernel's host (nvme_rdma)
// is connected to both, and fio reads its block devices with O_DIRECT.
// Each line is a kind of I/O; in each round every line runs its four
// kinds in turn (nvmeKinds): fio on the kernel's host against the kernel's
// target, our host (nvmeof perf) against the kernel's target, as it starts
// and with GOMAXPROCS=1, and fio on the kernel's host against our target.
// The tables have the medians. After the rounds, the system calls per I/O
// of fio, of our host (both ways) and of our target, counted by strace -f
// -c (nvmeCost).
func nvmeofCmd(args []string) error {
	var f struct {
		bin, out, engine, only, hostCPU string
		rounds                          int
		dur, budget                     time.Duration
	}
	fs := flag.NewFlagSet("nvmeof", flag.ContinueOnError)
	fs.StringVar(&f.bin, "nvmeof", "", "path of the nvmeof binary (cmd/nvmeof)")
	fs.StringVar(&f.out, "out", "", "Markdown section to write")
	fs.IntVar(&f.rounds, "rounds", 5, "rounds per line (the tables have their medians)")
	fs.DurationVar(&f.dur, "t", 4*time.Second, "I/O time of each run, whole seconds")
	fs.DurationVar(&f.budget, "budget", 9*time.Minute, "start no round that would end after this")
	fs.StringVar(&f.engine, "engine", "io_uring", "fio's ioengine (io_uring or libaio)")
	fs.StringVar(&f.only, "only", "", "run only lines whose name (e.g. \"4 KiB randread qd 1\") contains this")
	fs.StringVar(&f.hostCPU, "host-cpu", "", "the machine running the lab, for the section's first line")
	if err := fs.Parse(args); err != nil || f.bin == "" || f.out == "" || f.rounds < 1 || f.dur < time.Second || f.dur%time.Second != 0 {
		return fmt.Errorf("usage: perfbench nvmeof -nvmeof PATH -out FILE [-rounds N] [-t 4s] [-budget D] [-engine io_uring|libaio] [-only S] [-host-cpu S] (%v)", err)
	}
	_, addr, err := firstVethEnd()
	if err != nil {
		return err
	}
	var cells []nvmeCell
	for _, c := range nvmeCells {
		if f.only == "" || strings.Contains(c.name(), f.only) {
			cells = append(cells, c)
		}
	}
	kernel, _ := exec.Command("uname", "-r").Output()
	fioVersion, _ := exec.Command("fio", "--version").Output()
	start := time.Now()

	b, err := startNVMeBench(addr, f.bin)
	if err != nil {
		return err
	}
	defer func() {
		if err := b.close(); err != nil {
			fmt.Fprintln(os.Stderr, "perfbench nvmeof: tearing down:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "kernel target %s at %v (%s), ours %s at %v (%s); set up in %v\n",
		b.kt.NQN, b.kt.Addr, b.kdev, nvmeOursNQN, b.oursAddr, b.odev, time.Since(start).Round(time.Second))

	// Rounds outside, as rstream: a round cut by the budget leaves every
	// line with the same number of runs.
	got := make([][len(nvmeKinds)][]ioFigures, len(cells))
	var failed []string
	rounds := 0
	roundsStart := time.Now()
	for rounds < f.rounds {
		began := time.Now()
		if spent := time.Since(roundsStart); rounds > 0 && spent+spent/time.Duration(rounds) > f.budget {
			fmt.Fprintf(os.Stderr, "stopping after %d rounds: the next would end after -budget %v\n", rounds, f.budget)
			break
		}
		for i, c := range cells {
			for k, kind := range nvmeKinds {
				v, err := b.run(kind, c, f.dur, f.engine)
				if err != nil {
					failed = append(failed, fmt.Sprintf("%s, %s: %v", c.name(), kind.name, err))
					fmt.Fprintln(os.Stderr, failed[len(failed)-1])
					continue
				}
				fmt.Fprintf(os.Stderr, "%s, %s: %.0f IOPS, %.1f MiB/s, p50 %.0f µs, p99 %.0f µs\n", c.name(), kind.name, v.iops, v.mibps, v.p50, v.p99)
				got[i][k] = append(got[i][k], v)
			}
		}
		rounds++
		fmt.Fprintf(os.Stderr, "round %d took %v\n", rounds, time.Since(began).Round(time.Second))
	}

	costStart := time.Now()
	var costs []nvmeCostRow
	strace, straceErr := exec.LookPath("strace")
	if straceErr == nil {
		for _, c := range cells {
			for _, who := range nvmeCostKinds {
				row := nvmeCostRow{cell: c, who: who}
				row.perIO, row.each, err = nvmeCost(func(d time.Duration) (int, map[string]int, error) {
					return b.traced(strace, who, c, d, f.engine)
				})
				if err != nil {
					row.err = err.Error()
					fmt.Fprintf(os.Stderr, "cost, %s, %s: %v\n", c.name(), who, err)
				}
				costs = append(costs, row)
			}
		}
	}

	var out bytes.Buffer
	host := ""
	if f.hostCPU != "" {
		host = "; host: " + f.hostCPU
	}
	fmt.Fprintf(&out, "Kernel %s in one lab guest (QEMU TCG, 2 vCPUs, rxe%s), %s; %d rounds per line (the four kinds in turn), took %s (system call counts %s).",
		strings.TrimSpace(string(kernel)), host, start.UTC().Format("2006-01-02 15:04 MST"), rounds,
		time.Since(start).Round(time.Second), time.Since(costStart).Round(time.Second))
	if rounds < f.rounds {
		fmt.Fprintf(&out, " Stopped after %d of %d rounds by the time budget (%v).", rounds, f.rounds, f.budget)
	}
	fmt.Fprintf(&out, "\n\nSettings: each target serves one namespace of %d MiB, a file on the guest's tmpfs with the same pseudo-random bytes, in 4096-byte blocks: the kernel's (nvmet, `buffered_io`) at %v and ours (`nvmeof serve -file F -block 4096`: up to 4 I/O queues of 128 entries, 8 data buffers of 128 KiB and one of 4 KiB per entry, per queue) at %v, both on rxe1. The kernel's host is connected to both with nvme connect's defaults (an I/O queue per CPU, 128 entries); fio (%s) reads its block device with `--ioengine=%s --direct=1 --numjobs=1 --time_based --runtime=%d --norandommap --randrepeat=0 --lat_percentiles=1`; our host runs `nvmeof perf -rw RW -bs BS -qd QD -t %v -json` (one I/O queue of 32 entries, a goroutine per command in flight), connecting anew each run, as it starts (GOMAXPROCS: the guest's 2 CPUs) and with GOMAXPROCS=1 in its environment. Same -rw, -bs and -qd on both sides, nothing pinned. Latency is from submission to completion (fio's lat, ours around each ReadAt), in µs; bandwidth in MiB/s. Each figure is the median of the rounds' runs.\n\n",
		nvmeNSSize>>20, b.kt.Addr, b.oursAddr, strings.TrimSpace(string(fioVersion)), f.engine, int(f.dur.Seconds()), f.dur)
	fmt.Fprintln(&out, "Hosts, against the kernel's target: fio on the kernel's host (kernel) and our host (ours).")
	fmt.Fprintln(&out)
	writeNVMeTable(&out, cells, got, kindKernel, kindHost)
	fmt.Fprintln(&out, "\nThe same, our host with GOMAXPROCS=1: at most one thread runs Go code at a time, so no idle thread is woken to look for work each time one goroutine readies another (docs/nvmeof.md §9).")
	fmt.Fprintln(&out)
	writeNVMeTable(&out, cells, got, kindKernel, kindHost1)
	fmt.Fprintln(&out, "\nTargets, served to fio on the kernel's host: the kernel's target (kernel) and ours.")
	fmt.Fprintln(&out)
	writeNVMeTable(&out, cells, got, kindKernel, kindTarget)
	fmt.Fprintln(&out, "\nRatios are ours over the kernel's: at or above 1.00 for IOPS and MiB/s, at or below 1.00 for latency, ours is as fast. n/a: no run of that kind succeeded.")

	fmt.Fprintf(&out, "\nCost per I/O. System calls: `strace -f -c` of each program (our target attached with -p), every thread, over a run of %v less one of %v (the difference cancels start-up, connection and exit), divided by the difference in I/Os; strace slows every system call, so the programs batch differently than in the tables. The kernel's target makes none: it runs in the kernel. Heap allocations: our host's runtime.MemStats over the I/O of the table's runs (median), as `nvmeof perf -json` reports them.\n\n",
		costLong, costShort)
	if straceErr != nil {
		fmt.Fprintf(&out, "No system call counts: %v.\n\n", straceErr)
	}
	writeNVMeCosts(&out, cells, got, costs)

	if len(failed) > 0 {
		fmt.Fprintf(&out, "\nRuns that failed (left out of the medians):\n\n")
		for _, f := range failed {
			fmt.Fprintf(&out, "- %s\n", f)
		}
	}
	return os.WriteFile(f.out, out.Bytes(), 0o644)
}

const (
	// nvmeNSSize is each target's namespace.
	nvmeNSSize = 256 << 20
	// nvmeOursNQN is our target's subsystem.
	nvmeOursNQN = "nqn.2014-08.org.goverbs:nvmebench"
	// nvmeRunSlack bounds a run beyond its I/O time: start-up, our host's
	// connection, fio's exit.
	nvmeRunSlack = 2 * time.Minute
	// The runs whose difference gives the system calls per I/O.
	costShort = 2 * time.Second
	costLong  = 6 * time.Second
)

// nvmeCell is one line: what is read, how much at a time, how many in
// flight.
type nvmeCell struct {
	rw     string // fio's --rw and perf's -rw
	bs, qd int
}

// The lines: 4 KiB random reads one at a time (latency) and 32 at a time
// (IOPS), 128 KiB sequential reads 8 at a time (bandwidth).
var nvmeCells = []nvmeCell{{"randread", 4096, 1}, {"randread", 4096, 32}, {"read", 128 << 10, 8}}

func (c nvmeCell) name() string {
	return fmt.Sprintf("%d KiB %s qd %d", c.bs>>10, c.rw, c.qd)
}

// nvmeKind is who reads from which target; procs, when not 0, is our
// host's GOMAXPROCS.
type nvmeKind struct {
	name               string
	ourHost, ourTarget bool
	procs              int
}

// The kinds, in the order they run in a round, and their indexes.
const (
	kindKernel = iota
	kindHost
	kindHost1
	kindTarget
)

var nvmeKinds = [...]nvmeKind{
	{"fio + kernel host, kernel target", false, false, 0},
	{"our host, kernel target", true, false, 0},
	{"our host with GOMAXPROCS=1, kernel target", true, false, 1},
	{"fio + kernel host, our target", false, true, 0},
}

// ioFigures is one run's result.
type ioFigures struct {
	ios                     int
	iops, mibps             float64
	p50, p99                float64 // µs
	allocsPerIO, bytesPerIO float64 // our host only
}

// nvmeBench is what the runs share: both targets, and the kernel's host
// connected to each.
type nvmeBench struct {
	addr     string
	bin      string
	dir      string // temporary files, on tmpfs
	kt       *nvmetest.KernelTarget
	ours     *exec.Cmd
	oursOut  *bytes.Buffer
	oursEnd  chan error
	oursAddr netip.AddrPort
	hosts    []*nvmetest.KernelHost
	kdev     string // the kernel's host on the kernel's target
	odev     string // and on ours
}

// startNVMeBench sets everything up; on failure what was set up is undone.
func startNVMeBench(addr, bin string) (b *nvmeBench, err error) {
	b = &nvmeBench{addr: addr, bin: bin}
	defer func() {
		if err != nil {
			if cerr := b.close(); cerr != nil {
				err = fmt.Errorf("%w\nand tearing down: %v", err, cerr)
			}
			b = nil
		}
	}()
	if b.dir, err = os.MkdirTemp("/dev/shm", "perfbench-nvmeof-"); err != nil {
		return b, err
	}
	if b.kt, err = nvmetest.Start(nvmetest.TargetConfig{Addr: addr, Size: nvmeNSSize}); err != nil {
		return b, err
	}
	oursFile := filepath.Join(b.dir, "ours.img")
	for _, p := range []string{b.kt.Files[0], oursFile} {
		if err := fillFile(p, nvmeNSSize); err != nil {
			return b, err
		}
	}
	b.oursAddr = netip.AddrPortFrom(b.kt.Addr.Addr(), b.kt.Addr.Port()+1)
	if err := b.serve(oursFile); err != nil {
		return b, err
	}
	hk, err := nvmetest.ConnectHost(b.kt.Addr, b.kt.NQN)
	if err != nil {
		return b, err
	}
	b.hosts = append(b.hosts, hk)
	ho, err := nvmetest.ConnectHost(b.oursAddr, nvmeOursNQN)
	if err != nil {
		return b, err
	}
	b.hosts = append(b.hosts, ho)
	b.kdev, b.odev = hk.Namespaces[0], ho.Namespaces[0]
	return b, nil
}

// fillFile writes size bytes of the same pseudo-random data into p: a
// MiB repeated, each copy with its offset in its first 8 bytes.
func fillFile(p string, size int64) error {
	buf := make([]byte, 1<<20)
	r := rand.NewChaCha8([32]byte{'n', 'v', 'm', 'e'})
	r.Read(buf)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	for off := int64(0); off < size && err == nil; off += int64(len(buf)) {
		binary.LittleEndian.PutUint64(buf, uint64(off))
		_, err = f.WriteAt(buf[:min(int64(len(buf)), size-off)], off)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// serve starts our target and waits for its "serving" line.
func (b *nvmeBench) serve(file string) error {
	b.ours = exec.Command(b.bin, "serve", "-a", b.addr, "-s", strconv.Itoa(int(b.oursAddr.Port())),
		"-n", nvmeOursNQN, "-file", file, "-block", "4096")
	b.oursOut = new(bytes.Buffer)
	b.ours.Stderr = b.oursOut
	stdout, err := b.ours.StdoutPipe()
	if err != nil {
		return err
	}
	if err := b.ours.Start(); err != nil {
		b.ours = nil
		return err
	}
	b.oursEnd = make(chan error, 1)
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if !ok && strings.HasPrefix(sc.Text(), "serving ") {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
		b.oursEnd <- b.ours.Wait()
	}()
	select {
	case ok := <-ready:
		if ok {
			return nil
		}
		return fmt.Errorf("nvmeof serve ended before serving: %s", strings.TrimSpace(b.oursOut.String()))
	case <-time.After(time.Minute):
		return fmt.Errorf("nvmeof serve did not serve within a minute: %s", strings.TrimSpace(b.oursOut.String()))
	}
}

// close disconnects the kernel's host, stops our target and removes the
// kernel's, and the files.
func (b *nvmeBench) close() error {
	var errs []error
	for i := len(b.hosts) - 1; i >= 0; i-- {
		errs = append(errs, b.hosts[i].Disconnect())
	}
	b.hosts = nil
	if b.ours != nil {
		_ = b.ours.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-b.oursEnd:
			if err != nil {
				errs = append(errs, fmt.Errorf("nvmeof serve: %v: %s", err, strings.TrimSpace(b.oursOut.String())))
			}
		case <-time.After(30 * time.Second):
			_ = b.ours.Process.Kill()
			errs = append(errs, fmt.Errorf("nvmeof serve did not end within 30 s of SIGTERM"))
			<-b.oursEnd
		}
		b.ours = nil
	}
	if b.kt != nil {
		errs = append(errs, b.kt.Close())
		b.kt = nil
	}
	if b.dir != "" {
		errs = append(errs, os.RemoveAll(b.dir))
	}
	return errors.Join(errs...)
}

// run is one run of a kind on a line.
func (b *nvmeBench) run(kind nvmeKind, c nvmeCell, dur time.Duration, engine string) (ioFigures, error) {
	if kind.ourHost {
		out, err := b.perf(nil, kind.procs, c, dur)
		if err != nil {
			return ioFigures{}, err
		}
		return parsePerfJSON(out)
	}
	dev := b.kdev
	if kind.ourTarget {
		dev = b.odev
	}
	out, err := b.fio(nil, dev, c, dur, engine)
	if err != nil {
		return ioFigures{}, err
	}
	return parseFio(out)
}

// runBounded runs argv, under prefix (strace) if given, bounded by dur and
// nvmeRunSlack, with env added to its environment, and returns its
// standard output.
func runBounded(prefix, env []string, dur time.Duration, argv ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dur+nvmeRunSlack)
	defer cancel()
	argv = append(append([]string{}, prefix...), argv...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("did not finish within %v (%v)", dur+nvmeRunSlack, err)
		}
		return nil, fmt.Errorf("%s: %v: %s", filepath.Base(argv[len(prefix)]), err, tail(append(out, stderr.Bytes()...)))
	}
	return out, nil
}

// perf runs our host against the kernel's target, with GOMAXPROCS=procs
// unless 0: one JSON line.
func (b *nvmeBench) perf(prefix []string, procs int, c nvmeCell, dur time.Duration) ([]byte, error) {
	var env []string
	if procs > 0 {
		env = []string{"GOMAXPROCS=" + strconv.Itoa(procs)}
	}
	return runBounded(prefix, env, dur, b.bin, "perf", "-a", b.addr, "-s", strconv.Itoa(int(b.kt.Addr.Port())), "-n", b.kt.NQN,
		"-rw", c.rw, "-bs", strconv.Itoa(c.bs), "-qd", strconv.Itoa(c.qd), "-t", dur.String(), "-json")
}

// fioArgs is fio's command line for a line on dev, its JSON into out.
func fioArgs(dev string, c nvmeCell, dur time.Duration, engine, out string) []string {
	return []string{"fio", "--name=perfbench", "--filename=" + dev, "--ioengine=" + engine, "--direct=1",
		"--rw=" + c.rw, "--bs=" + strconv.Itoa(c.bs), "--iodepth=" + strconv.Itoa(c.qd), "--numjobs=1",
		"--time_based=1", "--runtime=" + strconv.Itoa(int(dur.Seconds())), "--norandommap=1", "--randrepeat=0",
		"--lat_percentiles=1", "--percentile_list=50:99", "--output-format=json", "--output=" + out}
}

// fio runs fio on dev and returns its JSON.
func (b *nvmeBench) fio(prefix []string, dev string, c nvmeCell, dur time.Duration, engine string) ([]byte, error) {
	out := filepath.Join(b.dir, "fio.json")
	os.Remove(out)
	if _, err := runBounded(prefix, nil, dur, fioArgs(dev, c, dur, engine, out)...); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// fioJSON is what parseFio reads of fio's --output-format=json.
type fioJSON struct {
	Jobs []struct {
		Error int `json:"error"`
		Read  struct {
			BWBytes  float64 `json:"bw_bytes"`
			IOPS     float64 `json:"iops"`
			TotalIOs int     `json:"total_ios"`
			Lat      struct {
				Percentile map[string]float64 `json:"percentile"`
			} `json:"lat_ns"`
		} `json:"read"`
	} `json:"jobs"`
}

// parseFio reads fio's JSON of one job: IOPS, bandwidth and the p50 and
// p99 of lat (submission to completion, --lat_percentiles).
func parseFio(out []byte) (ioFigures, error) {
	var j fioJSON
	if err := json.Unmarshal(out, &j); err != nil {
		return ioFigures{}, fmt.Errorf("fio's JSON: %v: %s", err, tail(out))
	}
	if len(j.Jobs) != 1 {
		return ioFigures{}, fmt.Errorf("fio's JSON has %d jobs, want 1", len(j.Jobs))
	}
	job := j.Jobs[0]
	if job.Error != 0 {
		return ioFigures{}, fmt.Errorf("fio's job ended with error %d", job.Error)
	}
	r := job.Read
	f := ioFigures{ios: r.TotalIOs, iops: r.IOPS, mibps: r.BWBytes / (1 << 20)}
	have := 0
	for k, v := range r.Lat.Percentile {
		p, err := strconv.ParseFloat(k, 64)
		if err != nil {
			return ioFigures{}, fmt.Errorf("fio's lat_ns percentile %q", k)
		}
		switch p {
		case 50:
			f.p50, have = v/1e3, have+1
		case 99:
			f.p99, have = v/1e3, have+1
		}
	}
	if f.ios <= 0 || f.iops <= 0 || have != 2 {
		return ioFigures{}, fmt.Errorf("fio's JSON has no reads, or lacks lat_ns's 50th and 99th percentiles (read: %d I/Os, %.0f IOPS)", f.ios, f.iops)
	}
	return f, nil
}

// perfJSON is what parsePerfJSON reads of nvmeof perf -json.
type perfJSON struct {
	IOs   int     `json:"ios"`
	IOPS  float64 `json:"iops"`
	MiBps float64 `json:"mib_per_s"`
	Lat   struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"lat_us"`
	AllocsPerIO     *float64 `json:"allocs_per_io"`
	AllocBytesPerIO *float64 `json:"alloc_bytes_per_io"`
}

// parsePerfJSON reads nvmeof perf -json's line.
func parsePerfJSON(out []byte) (ioFigures, error) {
	var p perfJSON
	if err := json.Unmarshal(bytes.TrimSpace(out), &p); err != nil {
		return ioFigures{}, fmt.Errorf("nvmeof perf -json: %v: %s", err, tail(out))
	}
	if p.IOs <= 0 || p.IOPS <= 0 || p.AllocsPerIO == nil || p.AllocBytesPerIO == nil {
		return ioFigures{}, fmt.Errorf("nvmeof perf -json: no I/O, or no allocation counts: %s", tail(out))
	}
	return ioFigures{ios: p.IOs, iops: p.IOPS, mibps: p.MiBps, p50: p.Lat.P50, p99: p.Lat.P99,
		allocsPerIO: *p.AllocsPerIO, bytesPerIO: *p.AllocBytesPerIO}, nil
}

// writeNVMeTable writes the table of kind ours against kind base.
func writeNVMeTable(w io.Writer, cells []nvmeCell, got [][len(nvmeKinds)][]ioFigures, base, ours int) {
	fmt.Fprintln(w, "| I/O | IOPS kernel | IOPS ours | ours/kernel | MiB/s kernel | MiB/s ours | p50 kernel | p50 ours | ours/kernel | p99 kernel | p99 ours | ours/kernel |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, c := range cells {
		fmt.Fprintln(w, nvmeLine(c, got[i][base], got[i][ours]))
	}
}

func nvmeLine(c nvmeCell, k, o []ioFigures) string {
	m := func(rs []ioFigures, f func(ioFigures) float64) float64 {
		var v []float64
		for _, r := range rs {
			v = append(v, f(r))
		}
		return median(v)
	}
	iops := func(r ioFigures) float64 { return r.iops }
	bw := func(r ioFigures) float64 { return r.mibps }
	p50 := func(r ioFigures) float64 { return r.p50 }
	p99 := func(r ioFigures) float64 { return r.p99 }
	ki, oi := m(k, iops), m(o, iops)
	k50, o50 := m(k, p50), m(o, p50)
	k99, o99 := m(k, p99), m(o, p99)
	whole := func(v float64) string {
		if v == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", c.name(),
		whole(ki), whole(oi), ratio(oi, ki), num(m(k, bw)), num(m(o, bw)),
		whole(k50), whole(o50), ratio(o50, k50), whole(k99), whole(o99), ratio(o99, k99))
}

// The programs whose system calls are counted, in the cost table's order.
const (
	costFio    = "fio + kernel host"
	costHost   = "our host"
	costHost1  = "our host, GOMAXPROCS=1"
	costTarget = "our target, served to fio"
)

var nvmeCostKinds = []string{costFio, costHost, costHost1, costTarget}

// nvmeCostRow is one program's system calls per I/O on a line.
type nvmeCostRow struct {
	cell  nvmeCell
	who   string
	perIO float64            // all system calls
	each  map[string]float64 // by name
	err   string
}

// nvmeCost runs a program for costShort and costLong and returns its
// system calls per I/O, in all and by name, from the differences, so that
// what it does once (start-up, connection, exit) cancels out.
func nvmeCost(run func(time.Duration) (int, map[string]int, error)) (float64, map[string]float64, error) {
	ios1, c1, err := run(costShort)
	if err != nil {
		return 0, nil, err
	}
	ios2, c2, err := run(costLong)
	if err != nil {
		return 0, nil, err
	}
	if ios2 <= ios1 {
		return 0, nil, fmt.Errorf("the %v run did %d I/Os, the %v run %d: no difference to divide by", costLong, ios2, costShort, ios1)
	}
	d := float64(ios2 - ios1)
	each := map[string]float64{}
	total := 0
	for name, n := range c2 {
		each[name] = float64(n-c1[name]) / d
		total += n
	}
	for name, n := range c1 {
		if _, ok := c2[name]; !ok {
			each[name] = float64(-n) / d
		}
		total -= n
	}
	return float64(total) / d, each, nil
}

// traced is one run of who on line c for d under strace -f -c: its I/Os
// and system calls by name.
func (b *nvmeBench) traced(strace, who string, c nvmeCell, d time.Duration, engine string) (int, map[string]int, error) {
	counts := filepath.Join(b.dir, "strace.txt")
	os.Remove(counts)
	prefix := []string{strace, "-f", "-c", "-o", counts, "--"}
	var (
		r   ioFigures
		err error
	)
	switch who {
	case costFio:
		var out []byte
		if out, err = b.fio(prefix, b.kdev, c, d, engine); err == nil {
			r, err = parseFio(out)
		}
	case costHost, costHost1:
		var out []byte
		if out, err = b.perf(prefix, nvmeKinds[hostKind(who)].procs, c, d); err == nil {
			r, err = parsePerfJSON(out)
		}
	case costTarget:
		r, err = b.tracedTarget(strace, counts, c, d, engine)
	}
	if err != nil {
		return 0, nil, err
	}
	txt, err := os.ReadFile(counts)
	if err != nil {
		return 0, nil, err
	}
	m, err := parseStrace(txt)
	return r.ios, m, err
}

// tracedTarget attaches strace to our target, runs fio against it, and
// detaches.
func (b *nvmeBench) tracedTarget(strace, counts string, c nvmeCell, d time.Duration, engine string) (ioFigures, error) {
	pid := b.ours.Process.Pid
	st := exec.Command(strace, "-f", "-c", "-o", counts, "-p", strconv.Itoa(pid))
	var stOut bytes.Buffer
	st.Stdout, st.Stderr = &stOut, &stOut
	if err := st.Start(); err != nil {
		return ioFigures{}, err
	}
	ended := make(chan error, 1)
	go func() { ended <- st.Wait() }()
	// SIGINT makes strace detach and write its table; it then dies of
	// the signal, so its exit status says nothing: the table does.
	stop := func() error {
		_ = st.Process.Signal(syscall.SIGINT)
		select {
		case <-ended:
			return nil
		case <-time.After(time.Minute):
			_ = st.Process.Kill()
			<-ended
			return fmt.Errorf("strace -p %d did not detach within a minute of SIGINT: %s", pid, tail(stOut.Bytes()))
		}
	}
	if err := waitTraced(pid, time.Minute); err != nil {
		stop()
		return ioFigures{}, fmt.Errorf("%v: %s", err, tail(stOut.Bytes()))
	}
	out, err := b.fio(nil, b.odev, c, d, engine)
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("strace -p %d: %v: %s", pid, serr, tail(stOut.Bytes()))
	}
	if err != nil {
		return ioFigures{}, err
	}
	return parseFio(out)
}

// waitTraced waits until every thread of pid has a tracer.
func waitTraced(pid int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		all := len(tasks) > 0
		for _, t := range tasks {
			b, _ := os.ReadFile(t)
			if !strings.Contains(string(b), "\nTracerPid:\t") || strings.Contains(string(b), "\nTracerPid:\t0\n") {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("strace did not attach to every thread of %d within %v", pid, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// straceRow is a line of strace -c's table: "% time", seconds,
// usecs/call, calls, errors (blank when none), then the system call's
// name, or "total" on the last line.
var straceRow = regexp.MustCompile(`^\s*\d+\.\d+\s+\d+\.\d+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\S+)\s*$`)

// parseStrace reads strace -c's table: calls by system call. Other lines
// (strace's notes on threads it detached from mid-call) are skipped; the
// rows must add up to the total line.
func parseStrace(txt []byte) (map[string]int, error) {
	m := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(txt))
	total := -1
	for sc.Scan() {
		r := straceRow.FindStringSubmatch(sc.Text())
		if r == nil {
			continue
		}
		n, err := strconv.Atoi(r[1])
		if err != nil {
			return nil, fmt.Errorf("strace -c's line %q", sc.Text())
		}
		if r[2] == "total" {
			total = n
			continue
		}
		m[r[2]] += n
	}
	sum := 0
	for _, n := range m {
		sum += n
	}
	if total < 0 || sum != total {
		return nil, fmt.Errorf("strace -c's table: its lines add up to %d, its total line says %d (-1: none): %s", sum, total, tail(txt))
	}
	return m, nil
}

// writeNVMeCosts writes the cost table: per line, fio's, our host's (as
// it starts and with GOMAXPROCS=1) and our target's system calls per I/O
// with the most frequent, and our host's heap allocations per I/O.
func writeNVMeCosts(w io.Writer, cells []nvmeCell, got [][len(nvmeKinds)][]ioFigures, costs []nvmeCostRow) {
	fmt.Fprintln(w, "| I/O | program | system calls per I/O | the most frequent, per I/O | heap allocations per I/O |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|")
	for i, c := range cells {
		for _, who := range nvmeCostKinds {
			calls, top := "n/a", ""
			for _, r := range costs {
				if r.cell != c || r.who != who {
					continue
				}
				if r.err != "" {
					top = "failed (below)"
					continue
				}
				calls = fmt.Sprintf("%.2f", r.perIO)
				top = topCalls(r.each, 4)
			}
			allocs := ""
			if kind := hostKind(who); kind >= 0 {
				var a, bs []float64
				for _, r := range got[i][kind] {
					a, bs = append(a, r.allocsPerIO), append(bs, r.bytesPerIO)
				}
				allocs = "n/a"
				if len(a) > 0 {
					allocs = fmt.Sprintf("%.2f (%.0f B)", median(a), median(bs))
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", c.name(), who, calls, top, allocs)
		}
	}
	var failed []string
	for _, r := range costs {
		if r.err != "" {
			failed = append(failed, fmt.Sprintf("%s, %s: %s", r.cell.name(), r.who, r.err))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nCounts that failed:\n\n")
		for _, f := range failed {
			fmt.Fprintf(w, "- %s\n", f)
		}
	}
}

// hostKind is the index in nvmeKinds of our host's runs that the cost
// table's program who names, or -1 for another program.
func hostKind(who string) int {
	switch who {
	case costHost:
		return kindHost
	case costHost1:
		return kindHost1
	}
	return -1
}

// topCalls names the n system calls with the most calls per I/O, of those
// that round to at least 0.01.
func topCalls(each map[string]float64, n int) string {
	names := make([]string, 0, len(each))
	for name, v := range each {
		if v >= 0.005 {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if each[names[i]] != each[names[j]] {
			return each[names[i]] > each[names[j]]
		}
		return names[i] < names[j]
	})
	var s []string
	for _, name := range names[:min(n, len(names))] {
		s = append(s, fmt.Sprintf("%s %.2f", name, each[name]))
	}
	return strings.Join(s, ", ")
}
