package testutil

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Side is one peer of a test that pairs one of our programs, run in the
// test's process, with rdma-core's or perftest's tool, run as a process.
type Side struct {
	Who  string // "ours" or "theirs"
	Role string // "server" or "client"
	Out  *SyncBuffer
	Err  *SyncBuffer
	Done chan error // receives how the side ended, once
}

// StartSide starts one side: ours (who == "ours") calls run in a goroutine,
// theirs runs tool with args. When the test ends the side is cancelled and
// waited for, up to a minute.
func StartSide(t testing.TB, ctx context.Context, who, role string, run func(ctx context.Context, stdout, stderr io.Writer) error, tool string, args []string) *Side {
	t.Helper()
	s := &Side{Who: who, Role: role, Out: &SyncBuffer{}, Err: &SyncBuffer{}, Done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(time.Minute):
			t.Errorf("%s %s still running a minute after being stopped", who, role)
		}
	})
	if who == "ours" {
		go func() {
			defer close(finished)
			s.Done <- run(ctx, s.Out, s.Err)
		}()
		return s
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdout, cmd.Stderr = s.Out, s.Err
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		close(finished)
		t.Fatal(err)
	}
	go func() {
		defer close(finished)
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%s %s: %w", tool, strings.Join(args, " "), err)
		}
		s.Done <- err
	}()
	return s
}

// StartProcess starts cmd and returns a channel that receives its exit
// code. When the test ends the process is killed and waited for.
func StartProcess(t testing.TB, cmd *exec.Cmd) <-chan int {
	t.Helper()
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		cmd.Wait()
		done <- cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	return done
}
