//go:build linux

package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/goverbs/rdma/test/lab/internal/proto"
)

// ErrNoPeer: the program does not run in the primary guest of the
// two-guest lab.
var ErrNoPeer = errors.New("peer: no peer guest; run in the two-guest lab (rxelab -guests 2)")

// ErrGone: the peer guest is off (PowerOff, or it died), so the command
// did not run or did not finish.
var ErrGone = errors.New("peer: the peer guest is off")

// Available reports whether the program runs in the primary guest of the
// two-guest lab.
func Available() bool { return os.Getenv(proto.EnvPeerSock) != "" }

// Require fails t in a lab without a peer guest (the test cannot show what
// it is for there, and must not pass by skipping) and skips it outside the
// lab.
func Require(t testing.TB) {
	t.Helper()
	if Available() {
		return
	}
	const how = "needs the two-guest lab: go test -exec \"rxelab -guests 2\" (make lab runs the tests named TestTwoGuest* there)"
	if os.Getenv(proto.EnvLab) == "1" {
		t.Fatal(how)
	}
	t.Skip(how)
}

// Addr is the peer guest's IPv4 address on the guests' network.
func Addr() string { return os.Getenv(proto.EnvPeerAddr) }

// Dev is the peer guest's rxe device on the guests' network.
func Dev() string { return os.Getenv(proto.EnvPeerDev) }

// LocalAddr is this guest's IPv4 address on the guests' network.
func LocalAddr() string { return os.Getenv(proto.EnvLocalAddr) }

// LocalDev is this guest's rxe device on the guests' network.
func LocalDev() string { return os.Getenv(proto.EnvLocalDev) }

func dial() (net.Conn, error) {
	p := os.Getenv(proto.EnvPeerSock)
	if p == "" {
		return nil, ErrNoPeer
	}
	c, err := net.Dial("unix", p)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	return c, nil
}

// PowerOff stops the peer guest at once, without a shutdown: the host kills
// its QEMU. The peer's network link goes dead and its commands end with
// ErrGone. Powering off a peer that is off already succeeds.
func PowerOff(ctx context.Context) error {
	c, err := dial()
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := proto.NewWriter(c).Send(proto.Frame{Type: proto.PowerOff}); err != nil {
		return fmt.Errorf("peer: power off: %w", err)
	}
	for {
		f, err := proto.Read(c)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("peer: power off: %w", ctx.Err())
			}
			return fmt.Errorf("peer: power off: %w", err)
		}
		if f.Type == proto.Exit {
			var st proto.Status
			if err := json.Unmarshal(f.Body, &st); err != nil {
				return fmt.Errorf("peer: power off: %w", err)
			}
			if st.Code != 0 {
				return fmt.Errorf("peer: power off: %s", st.Error)
			}
			return nil
		}
	}
}

// Cmd is a command to run in the peer guest, like exec.Cmd.
type Cmd struct {
	Args   []string
	Dir    string    // default: the current directory
	Env    []string  // default: os.Environ(); the lab's GOVERBS_LAB* are the peer's own
	Stdout io.Writer // default: discarded
	Stderr io.Writer // default: discarded

	ctx     context.Context
	conn    net.Conn
	ctl     *proto.Writer
	begun   chan struct{} // closed on Begin
	done    chan struct{} // closed when status and readErr are set
	status  proto.Status
	readErr error
	stopCtx func() bool
	waited  bool
}

// Command returns the command name with args, to run in the peer guest.
// If ctx ends before the command does, the command is killed (SIGKILL).
func Command(ctx context.Context, name string, args ...string) *Cmd {
	return &Cmd{Args: append([]string{name}, args...), ctx: ctx}
}

// Start starts the command in the peer and returns once it runs.
func (c *Cmd) Start() error {
	if c.conn != nil {
		return errors.New("peer: already started")
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	req := proto.Command{Args: c.Args, Dir: c.Dir, Env: c.Env}
	if req.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		req.Dir = wd
	}
	if req.Env == nil {
		req.Env = os.Environ()
	}
	conn, err := dial()
	if err != nil {
		return err
	}
	c.conn, c.ctl = conn, proto.NewWriter(conn)
	c.begun, c.done = make(chan struct{}), make(chan struct{})
	if err := c.ctl.SendJSON(proto.Request, 0, req); err != nil {
		conn.Close()
		return fmt.Errorf("peer: %w", err)
	}
	go c.read()
	c.stopCtx = context.AfterFunc(c.ctx, func() { _ = c.Signal(syscall.SIGKILL) })
	select {
	case <-c.begun:
		return nil
	case <-c.done:
		// No Begin: the command did not start (or the socket broke).
		return c.wait()
	}
}

func (c *Cmd) read() {
	defer close(c.done)
	out, errw := c.Stdout, c.Stderr
	if out == nil {
		out = io.Discard
	}
	if errw == nil {
		errw = io.Discard
	}
	begun := false
	for {
		f, err := proto.Read(c.conn)
		if err != nil {
			c.readErr = err
			return
		}
		switch f.Type {
		case proto.Begin:
			if !begun {
				begun = true
				close(c.begun)
			}
		case proto.Stdout:
			_, _ = out.Write(f.Body)
		case proto.Stderr:
			_, _ = errw.Write(f.Body)
		case proto.Exit:
			c.readErr = json.Unmarshal(f.Body, &c.status)
			return
		}
	}
}

// Signal sends sig to the command in the peer.
func (c *Cmd) Signal(sig syscall.Signal) error {
	if c.ctl == nil {
		return errors.New("peer: not started")
	}
	return c.ctl.Send(proto.Frame{Type: proto.Signal, Body: []byte{byte(sig)}})
}

// Wait waits for the command to exit. A status other than 0 is an
// *ExitError; a peer that went off first gives an error that Is ErrGone; a
// command killed because its context ended gives the context's error.
func (c *Cmd) Wait() error {
	if c.conn == nil {
		return errors.New("peer: not started")
	}
	if c.waited {
		return errors.New("peer: Wait was already called")
	}
	c.waited = true
	<-c.done
	return c.wait()
}

func (c *Cmd) wait() error {
	if c.stopCtx != nil {
		c.stopCtx()
	}
	c.conn.Close()
	name := strings.Join(c.Args, " ")
	switch {
	case c.readErr != nil:
		return fmt.Errorf("peer: %s: lost the lab's socket: %w", name, c.readErr)
	case c.status.Gone:
		return fmt.Errorf("%w: %s: %s", ErrGone, name, c.status.Error)
	case c.status.Code == 0 && c.status.Error == "":
		return nil
	case c.status.Signal == "killed" && c.ctx.Err() != nil:
		return c.ctx.Err()
	}
	return &ExitError{Args: c.Args, Code: c.status.Code, Signal: c.status.Signal, Msg: c.status.Error}
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the command and returns its stdout.
func (c *Cmd) Output() ([]byte, error) {
	var b bytes.Buffer
	c.Stdout = &b
	err := c.Run()
	return b.Bytes(), err
}

// CombinedOutput runs the command and returns its stdout and stderr
// together, in the order they arrived.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	var b bytes.Buffer
	c.Stdout, c.Stderr = &b, &b
	err := c.Run()
	return b.Bytes(), err
}

// ExitError is a command in the peer that exited with a status other than
// 0, was killed by a signal, or could not start (Code 127: not found).
type ExitError struct {
	Args   []string
	Code   int    // exit status; 128+N when signal N killed it
	Signal string // the signal that killed it, if one did
	Msg    string // why it could not start or finish, if known
}

func (e *ExitError) Error() string {
	s := fmt.Sprintf("peer: %s: exit status %d", strings.Join(e.Args, " "), e.Code)
	if e.Signal != "" {
		s += " (" + e.Signal + ")"
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}
