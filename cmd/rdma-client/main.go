package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/goverbs/rdma/cmd/internal/tutorial"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := tutorial.Main(ctx, false, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
