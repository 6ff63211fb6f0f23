package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

func TestParse(t *testing.T) {
	o, err := parse([]string{"-s", "10.0.0.1", "-b", "10.0.0.2", "-c", "7", "-p", "9000", "-r", "3", "-t", "500"})
	if err != nil || o.server != "10.0.0.1" || o.bind != "10.0.0.2" || o.conns != 7 || o.port != 9000 || o.retries != 3 || o.timeout.Milliseconds() != 500 {
		t.Errorf("parse: %+v, %v", o, err)
	}
	o, err = parse(nil)
	if err != nil || o.server != "" || o.conns != 100 || o.port != 7471 || o.retries != 2 || o.timeout.Milliseconds() != 2000 {
		t.Errorf("defaults: %+v, %v", o, err)
	}
}

// A bad command line prints cmtime's usage and exits with 1, as cmtime does.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-x"}, {"-c", "0"}, {"-p", "70000"}, {"-c", "many"}, {"extra"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 1 || !strings.HasPrefix(out.String(), "usage: cmtime") {
			t.Errorf("%q: exit %d, stdout %q", args, code, out.String())
		}
	}
}

// The leak tracer fails the binary if a test leaves an fd or a mapping open.
func TestMain(m *testing.M) { testutil.Main(m) }
