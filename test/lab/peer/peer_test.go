package peer_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goverbs/rdma/test/lab/peer"
)

// These tests run in the primary guest of the two-guest lab; the lab's
// self-tests (test/rxelab) run them there. Elsewhere they skip:
//
//	go test -c -o /tmp/peer.test ./test/lab/peer
//	bin/rxelab -guests 2 -- /tmp/peer.test -test.v

// helperEnv selects the helper role of this test binary when it runs itself
// in the peer.
const helperEnv = "GOVERBS_PEER_TEST_HELPER"

const helperPort = "7471"

// TestHelperStream is not a test: run in the peer with helperEnv=stream, it
// accepts one TCP connection on the peer's address and writes to it until
// it fails.
func TestHelperStream(t *testing.T) {
	if os.Getenv(helperEnv) != "stream" {
		return // only as the helper
	}
	l, err := net.Listen("tcp", net.JoinHostPort(peer.LocalAddr(), helperPort))
	require.NoError(t, err)
	fmt.Println("listening")
	c, err := l.Accept()
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

// TestCommand: a command in the peer sees the peer's side of the lab and
// its status, stdout and stderr come back.
func TestCommand(t *testing.T) {
	peer.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.Equal(t, "10.78.0.2", peer.Addr())
	require.Equal(t, "10.78.0.1", peer.LocalAddr())

	out, err := peer.Command(ctx, "sh", "-c",
		`echo "$GOVERBS_LAB_ROLE $GOVERBS_LAB_LOCAL_DEV $GOVERBS_LAB_LOCAL_ADDR $GOVERBS_LAB_PEER_ADDR $(pwd)"; cat /sys/class/infiniband/$GOVERBS_LAB_LOCAL_DEV/ports/1/gids/1`).Output()
	require.NoError(t, err)
	wd, _ := os.Getwd()
	require.Equal(t, "peer "+peer.Dev()+" 10.78.0.2 10.78.0.1 "+wd+"\n0000:0000:0000:0000:0000:ffff:0a4e:0002\n", string(out))

	var stdout, stderr strings.Builder
	cmd := peer.Command(ctx, "sh", "-c", "echo out; echo err >&2; exit 3")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *peer.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 3, ee.Code)
	require.Equal(t, "out\n", stdout.String())
	require.Equal(t, "err\n", stderr.String())

	err = peer.Command(ctx, "/nonexistent/command").Start()
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 127, ee.Code)

	// A context that ends kills the command.
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	defer cancelShort()
	start := time.Now()
	err = peer.Command(short, "sleep", "600").Run()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Minute)

	// And so does a signal.
	sleep := peer.Command(ctx, "sleep", "600")
	require.NoError(t, sleep.Start())
	require.NoError(t, sleep.Signal(syscall.SIGTERM))
	err = sleep.Wait()
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 128+int(syscall.SIGTERM), ee.Code)
}

// TestPowerOffMidTransfer is the pattern for host-loss tests: this test
// binary runs itself in the peer as a TCP server that streams data, reads
// from it, and powers the peer off mid-transfer. The stream then stops (no
// FIN, no RST: the host is gone), the server's Wait reports ErrGone, and
// the peer's address no longer answers at all.
func TestPowerOffMidTransfer(t *testing.T) {
	peer.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	srv := peer.Command(ctx, os.Args[0], "-test.run=^TestHelperStream$")
	srv.Env = append(os.Environ(), helperEnv+"=stream")
	pr, pw := io.Pipe()
	srv.Stdout = pw
	require.NoError(t, srv.Start())
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "listening\n", line)
	go io.Copy(io.Discard, pr) // the rest of the helper's output

	// While the peer is up, a closed port is refused at once.
	_, err = net.DialTimeout("tcp", net.JoinHostPort(peer.Addr(), "9"), 30*time.Second)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)

	c, err := net.Dial("tcp", net.JoinHostPort(peer.Addr(), helperPort))
	require.NoError(t, err)
	defer c.Close()
	buf := make([]byte, 64<<10)
	var got int
	for got < 4<<20 {
		n, err := c.Read(buf)
		require.NoError(t, err)
		got += n
	}

	require.NoError(t, peer.PowerOff(ctx))
	require.NoError(t, peer.PowerOff(ctx), "powering off an off peer succeeds")
	err = srv.Wait()
	require.ErrorIs(t, err, peer.ErrGone)

	// What was in flight may still arrive; then the stream stops without an
	// end: reads time out rather than returning EOF or a reset.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	for {
		_, err = c.Read(buf)
		if err != nil {
			break
		}
	}
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "read after power off: %v, want a timeout", err)

	// Nobody answers at the peer's address any more.
	_, err = net.DialTimeout("tcp", net.JoinHostPort(peer.Addr(), "9"), 5*time.Second)
	require.Error(t, err)
	require.NotErrorIs(t, err, syscall.ECONNREFUSED)

	err = peer.Command(ctx, "true").Run()
	require.ErrorIs(t, err, peer.ErrGone)
}
