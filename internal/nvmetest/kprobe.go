//go:build linux

package nvmetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Calls counts the calls of kernel functions, each through a kprobe event
// of its own (Documentation/trace/kprobetrace.rst): while the event is
// enabled, kprobe_profile gives its hits (kernel: trace_kprobe.c
// probes_profile_seq_show). It tells what the kernel did where nothing
// else does: e.g. whether nvme-rdma posted a LOCAL_INV of its own
// (nvme_rdma_inv_rkey_done, its completion) or a driver invalidated a key
// (rxe_invalidate_mr, siw_invalidate_stag).
type Calls struct {
	dir    string
	events map[string]string // function → event name
}

const kprobeGroup = "goverbs"

// tracingDir returns tracefs's directory, mounting tracefs at
// /sys/kernel/tracing if it is not mounted (the lab's guest mounts
// nothing there).
func tracingDir() (string, error) {
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(filepath.Join(d, "kprobe_events")); err == nil {
			return d, nil
		}
	}
	d := "/sys/kernel/tracing"
	if err := unix.Mount("nodev", d, "tracefs", 0, ""); err != nil {
		return "", fmt.Errorf("mounting tracefs at %s: %w", d, err)
	}
	if _, err := os.Stat(filepath.Join(d, "kprobe_events")); err != nil {
		return "", fmt.Errorf("tracefs has no kprobe events (CONFIG_KPROBE_EVENTS): %w", err)
	}
	return d, nil
}

// CountCalls places a kprobe on each function ("module:function", or
// "function" for one built in) and enables it; the probes are removed when
// the test ends. An error says what is missing: tracefs, kprobe events, or
// a function (a module not loaded, a function inlined).
func CountCalls(t testing.TB, funcs ...string) (*Calls, error) {
	dir, err := tracingDir()
	if err != nil {
		return nil, err
	}
	c := &Calls{dir: dir, events: map[string]string{}}
	t.Cleanup(c.remove)
	for i, f := range funcs {
		ev := fmt.Sprintf("gv%d_%d", os.Getpid(), i)
		if err := appendFile(filepath.Join(dir, "kprobe_events"), fmt.Sprintf("p:%s/%s %s\n", kprobeGroup, ev, f)); err != nil {
			return nil, fmt.Errorf("kprobe on %s: %w", f, err)
		}
		c.events[f] = ev
		if err := os.WriteFile(filepath.Join(dir, "events", kprobeGroup, ev, "enable"), []byte("1"), 0); err != nil {
			return nil, fmt.Errorf("enabling the kprobe on %s: %w", f, err)
		}
	}
	return c, nil
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Hits returns how many times each function was called since CountCalls.
func (c *Calls) Hits() (map[string]uint64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "kprobe_profile"))
	if err != nil {
		return nil, err
	}
	byEvent := map[string]uint64{}
	for _, l := range strings.Split(string(b), "\n") {
		// "  NAME  HITS  MISSES"
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		byEvent[f[0]] = n
	}
	out := map[string]uint64{}
	for fn, ev := range c.events {
		n, ok := byEvent[ev]
		if !ok {
			return nil, fmt.Errorf("kprobe_profile has no line for %s (%s)", fn, ev)
		}
		out[fn] = n
	}
	return out, nil
}

// remove disables and deletes the probes.
func (c *Calls) remove() {
	var errs []error
	for _, ev := range c.events {
		if err := os.WriteFile(filepath.Join(c.dir, "events", kprobeGroup, ev, "enable"), []byte("0"), 0); err != nil {
			errs = append(errs, err)
		}
		if err := appendFile(filepath.Join(c.dir, "kprobe_events"), fmt.Sprintf("-:%s/%s\n", kprobeGroup, ev)); err != nil {
			errs = append(errs, err)
		}
	}
	c.events = nil
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "nvmetest: removing kprobes: %v\n", err)
	}
}
