package tutorial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/version"
)

// Exit codes of rdma-server and rdma-client.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitInterrupted = 130 // 128 + SIGINT
)

// Main runs rdma-server (server) or rdma-client with the command-line
// arguments args and returns the exit code. Results go to stdout, the -v
// trace and errors to stderr; an error is one line.
func Main(ctx context.Context, server bool, args []string, stdout, stderr io.Writer) int {
	return machine.main(ctx, server, args, stdout, stderr)
}

func (e system) main(ctx context.Context, server bool, args []string, stdout, stderr io.Writer) int {
	prog := "rdma-client"
	if server {
		prog = "rdma-server"
	}
	o, err := ParseArgs(server, args)
	if errors.Is(err, errHelp) {
		Usage(stdout, server)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (%s -h explains the flags)\n", prog, err, prog)
		return ExitUsage
	}
	o.sys = e
	if server {
		err = Server(ctx, o, stdout, stderr)
	} else {
		err = Client(ctx, o, stdout, stderr)
	}
	switch {
	case err == nil:
		return ExitOK
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "%s: interrupted\n", prog)
		return ExitInterrupted
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	return ExitFailed
}

// Run is the whole program: Main with the process's arguments, standard
// streams and a context that SIGINT and SIGTERM end, then exit.
func Run(server bool) {
	if server {
		version.Handle("rdma-server")
	} else {
		version.Handle("rdma-client")
	}
	cmdline.Run(func(ctx context.Context) int { return Main(ctx, server, os.Args[1:], os.Stdout, os.Stderr) })
}
