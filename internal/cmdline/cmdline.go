package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// UsageError is a mistake on the command line: Exit prints it with the
// program's usage and exits with status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with the formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{fmt.Sprintf(format, a...)}
}

// Parse parses args with fs, letting operands (the arguments that are not
// flags) stand between flags as getopt allows, and returns the operands in
// their order. It returns flag.ErrHelp for -h and a *UsageError for any
// other mistake.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return operands, err
			}
			return operands, &UsageError{err.Error()}
		}
		if fs.NArg() == 0 {
			return operands, nil
		}
		operands = append(operands, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// Run runs a program: main with a context that SIGINT and SIGTERM cancel,
// then exit with the status main returns.
func Run(main func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := main(ctx)
	stop()
	os.Exit(code)
}

// Status reports how a program whose run returned err ended and returns
// its exit status: 0 for nil; usage on stdout for flag.ErrHelp (0); the
// mistake and usage on stderr for a *UsageError (2); "prog: err" on stderr
// otherwise (1).
func Status(prog, usage string, err error) int {
	var uerr *UsageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(os.Stdout, usage)
		return 0
	case errors.As(err, &uerr):
		fmt.Fprintf(os.Stderr, "%s: %v\n\n%s", prog, err, usage)
		return 2
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
	return 1
}

// NewFlagSet returns a flag set that reports mistakes as errors and prints
// nothing: the program prints its own usage (Exit).
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// IntFlag defines an int flag under a short and a long name, as the
// getopt_long programs the tools copy have them ("-p" and "--port").
func IntFlag(fs *flag.FlagSet, short, long string, p *int, def int) {
	fs.IntVar(p, short, def, "")
	fs.IntVar(p, long, def, "")
}

// BoolFlag defines a bool flag under a short and a long name.
func BoolFlag(fs *flag.FlagSet, short, long string, p *bool) {
	fs.BoolVar(p, short, false, "")
	fs.BoolVar(p, long, false, "")
}

// StringFlag defines a string flag under a short and a long name.
func StringFlag(fs *flag.FlagSet, short, long string, p *string, def string) {
	fs.StringVar(p, short, def, "")
	fs.StringVar(p, long, def, "")
}

// ParseHost parses args as Parse does and returns the one operand a
// client takes (the server's host), or "" for a server.
func ParseHost(fs *flag.FlagSet, args []string) (string, error) {
	hosts, err := Parse(fs, args)
	if err != nil {
		return "", err
	}
	switch len(hosts) {
	case 0:
		return "", nil
	case 1:
		return hosts[0], nil
	}
	return "", Usagef("one server name at most, got %q", hosts)
}
