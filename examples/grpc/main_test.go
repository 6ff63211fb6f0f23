package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// This module cannot import github.com/goverbs/rdma/internal/testutil, so
// TestMain checks for leaks from outside instead: every file descriptor
// opened during the run (RDMA CM and uverbs devices, completion channels,
// anything else) and every mapping of an RDMA device must be gone once the
// tests end. gRPC closes some connections from its own goroutines after
// Close and Stop return, so the check waits for them, for a while.
func TestMain(m *testing.M) {
	// Start the runtime's poller first: its descriptors stay open for good.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before := openFDs()
	code := m.Run()
	var leaks []string
	for end := time.Now().Add(60 * time.Second); ; {
		leaks = leaks[:0]
		for fd, what := range openFDs() {
			if _, ok := before[fd]; !ok {
				leaks = append(leaks, fmt.Sprintf("fd %s (%s) still open", fd, what))
			}
		}
		leaks = append(leaks, deviceMappings()...)
		if len(leaks) == 0 || time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(leaks) > 0 {
		slices.Sort(leaks)
		fmt.Fprintf(os.Stderr, "FAIL: %d kernel resource(s) leaked by the tests:\n\t%s\n", len(leaks), strings.Join(leaks, "\n\t"))
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// openFDs returns this process's open descriptors and what each refers to.
func openFDs() map[string]string {
	fds := map[string]string{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fds
	}
	for _, e := range ents {
		what, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the descriptor ReadDir itself used
		}
		fds[e.Name()] = what
	}
	return fds
}

// deviceMappings returns the mappings of RDMA device files (queues and
// doorbells a device context maps).
func deviceMappings() []string {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, "/dev/infiniband/") {
			out = append(out, "mapping still present: "+strings.TrimSpace(line))
		}
	}
	return out
}

const howToRun = "run `make test`, which runs these tests in the rxe lab (a QEMU VM with rdma_rxe)"

// labAddr returns the address of the lab's first veth end (rxe1 on veth0,
// 10.77.0.1): the server listens there and the client dials it. Outside
// the lab the test is skipped; inside it, a lab without its veth pair fails.
func labAddr(t testing.TB) string {
	t.Helper()
	if os.Getenv("GOVERBS_LAB") != "1" {
		t.Skip("needs an RDMA device; " + howToRun)
	}
	v := os.Getenv("GOVERBS_LAB_VETH") // dev:netdev:addr,dev:netdev:addr
	ends := strings.Split(v, ",")
	if f := strings.Split(ends[0], ":"); len(ends) == 2 && len(f) == 3 && f[2] != "" {
		return f[2]
	}
	t.Fatalf("GOVERBS_LAB_VETH=%q is not two dev:netdev:addr entries", v)
	return ""
}
