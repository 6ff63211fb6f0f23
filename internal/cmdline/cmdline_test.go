package cmdline

import (
	"errors"
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args     []string
		operands []string
		n        int
		v        bool
	}{
		{args: nil},
		{args: []string{"-n", "5", "host"}, operands: []string{"host"}, n: 5},
		{args: []string{"host", "-n", "5", "-v"}, operands: []string{"host"}, n: 5, v: true},
		{args: []string{"a", "-v", "b"}, operands: []string{"a", "b"}, v: true},
		{args: []string{"-n", "1", "--", "-v"}, operands: []string{"-v"}, n: 1},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		n := fs.Int("n", 0, "")
		v := fs.Bool("v", false, "")
		got, err := Parse(fs, c.args)
		if err != nil || !slices.Equal(got, c.operands) || *n != c.n || *v != c.v {
			t.Errorf("Parse(%q) = %q, %v; n=%d v=%v, want %q n=%d v=%v", c.args, got, err, *n, *v, c.operands, c.n, c.v)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var uerr *UsageError
	if _, err := Parse(fs, []string{"host", "-x"}); !errors.As(err, &uerr) || uerr.Msg != "flag provided but not defined: -x" {
		t.Errorf("an unknown flag after an operand: %v, want a *UsageError naming -x", err)
	}
	if _, err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

func TestStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{Usagef("-n %d: too few", 0), 2},
		{errors.New("no device"), 1},
	} {
		if got := Status("t", "usage\n", c.err); got != c.want {
			t.Errorf("Status(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
