package main

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

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
