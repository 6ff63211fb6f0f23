package tutorial

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/cmdline"
	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// Every command line of issue 7, as written, and what it means.
func TestIssueCommandLines(t *testing.T) {
	cases := []struct {
		server                 bool
		line                   string
		proto, mode, addr, msg string
		port                   int
	}{
		{true, "-a 10.9.0.1 write", "geek", "write", "10.9.0.1", "", 22222},
		{false, "write 10.9.0.1 22222", "geek", "write", "10.9.0.1", geekMessage(true, os.Getpid()), 22222},
		{true, "-a 10.9.0.1 -p 22223 send", "geek", "send", "10.9.0.1", "", 22223},
		{false, "send 10.9.0.1 22223", "geek", "send", "10.9.0.1", geekMessage(true, os.Getpid()), 22223},
		{true, "--proto rdma-example -a 10.9.0.1", "rdma-example", "write-read", "10.9.0.1", "", 20886},
		{false, "--proto rdma-example -a 10.9.0.1 -s hello\x00world\x00789", "rdma-example", "write-read", "10.9.0.1", "hello world 789", 20886},
		{true, "--proto roce-lab -a 10.9.0.1", "roce-lab", "write", "10.9.0.1", "", 7471},
		{false, "--proto roce-lab -s client-wrote-this write 10.9.0.1 7471", "roce-lab", "write", "10.9.0.1", "client-wrote-this", 7471},
		{true, "--proto roce-lab -a 10.9.0.1 imm", "roce-lab", "imm", "10.9.0.1", "", 7472},
		{false, "--proto roce-lab -s imm\x00payload\x0042 imm 10.9.0.1 7472", "roce-lab", "imm", "10.9.0.1", "imm payload 42", 7472},
		// More than the issue asks: defaults, flags after the words, -p.
		{true, "", "geek", "write", "", "", 22222},
		{false, "10.9.0.1", "geek", "write", "10.9.0.1", geekMessage(true, os.Getpid()), 22222},
		{false, "read 10.9.0.1 -v -p 1234", "geek", "read", "10.9.0.1", geekMessage(true, os.Getpid()), 1234},
		{false, "--proto=roce-lab imm -a 10.9.0.1", "roce-lab", "imm", "10.9.0.1", "client-wrote-with-imm", 7472},
		{false, "--proto rdma-example 10.9.0.1 20000", "rdma-example", "write-read", "10.9.0.1", "hello world", 20000},
	}
	for _, c := range cases {
		// Words split on spaces; NUL stands for a space inside a word.
		args := strings.Fields(c.line)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "\x00", " ")
		}
		o, err := ParseArgs(c.server, args)
		if err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if o.Proto.Name != c.proto || o.Mode.Name != c.mode || o.Addr != c.addr || o.Port != c.port || o.Message != c.msg || o.Server != c.server {
			t.Errorf("%q: got proto %s mode %s addr %q port %d msg %q", c.line, o.Proto.Name, o.Mode.Name, o.Addr, o.Port, o.Message)
		}
	}
}

func TestBadCommandLines(t *testing.T) {
	cases := []struct {
		server bool
		args   []string
		msg    string
	}{
		{true, []string{"--proto", "geeks"}, `unknown protocol "geeks": use --proto geek, --proto rdma-example, --proto roce-lab`},
		{true, []string{"imm"}, `--proto geek has no mode "imm"; its modes: write, read, send`},
		{true, []string{"write", "10.9.0.1"}, `rdma-server takes the address with -a`},
		{false, []string{"write"}, "give the server's address"},
		{false, []string{"--proto", "roce-lab", "imm"}, "rdma-client --proto roce-lab imm ADDR [PORT]"},
		{false, []string{"-a", "10.0.0.1", "write", "10.0.0.2"}, "two server addresses"},
		{false, []string{"-p", "1", "write", "10.0.0.2", "2"}, "two ports"},
		{false, []string{"write", "10.0.0.2", "x"}, `port "x": not a number`},
		{false, []string{"write", "10.0.0.2", "70000"}, "port 70000: give 1 to 65535"},
		{true, []string{"-p", "0"}, "port 0: give 1 to 65535"},
		{false, []string{"write", "10.0.0.2", "1", "2"}, `unexpected "2"`},
		{false, []string{"-x"}, "flag provided but not defined: -x"},
		{true, []string{"-s", "x"}, "flag provided but not defined: -s"},
		{false, []string{"-s", strings.Repeat("x", 1024), "10.0.0.1"}, "-s is 1024 bytes; with its terminating NUL it must fit the peer's 1024-byte buffer (--proto geek)"},
		{false, []string{"--proto", "roce-lab", "-s", strings.Repeat("x", 4096), "10.0.0.1"}, "the peer's 4096-byte buffer"},
		{false, []string{"--proto", "rdma-example", "-s", "", "10.0.0.1"}, "at least one byte"},
		{false, []string{"--proto", "rdma-example", "-s", strings.Repeat("x", maxRDMAExampleLen+1), "10.0.0.1"}, "registers at most 1048576"},
	}
	for _, c := range cases {
		_, err := ParseArgs(c.server, c.args)
		if _, ok := err.(*cmdline.UsageError); !ok || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("server=%v %.60q: error %v, want a usage error with %q", c.server, c.args, err, c.msg)
		}
	}
	// The longest strings that fit.
	for _, args := range [][]string{
		{"-s", strings.Repeat("x", 1023), "10.0.0.1"},
		{"--proto", "roce-lab", "-s", strings.Repeat("x", 4095), "10.0.0.1"},
		{"--proto", "rdma-example", "-s", strings.Repeat("x", maxRDMAExampleLen), "10.0.0.1"},
	} {
		if _, err := ParseArgs(false, args); err != nil {
			t.Errorf("%.40q: %v", args, err)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, server := range []bool{true, false} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), server, []string{"-h"}, &out, &errb); code != ExitOK || errb.Len() != 0 {
			t.Fatalf("-h: exit %d, stderr %q", code, errb.String())
		}
		h := out.String()
		want := []string{"--proto P", "-a ADDR", "-p PORT", "-v ", "MODE", "rdma-link add rxe0 netdev eth0"}
		for _, p := range Protocols {
			want = append(want, p.Name+": ", p.Source)
			for _, m := range p.Modes {
				want = append(want, m.Name)
			}
		}
		for _, ex := range examples {
			if server {
				want = append(want, ex[0])
			} else {
				want = append(want, ex[1], "-s STRING", "[ADDR [PORT]]")
			}
		}
		for _, w := range want {
			if !strings.Contains(h, w) {
				t.Errorf("server=%v: -h has no %q", server, w)
			}
		}
	}
}

func TestUsageExit(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(context.Background(), false, []string{"write"}, &out, &errb); code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	if !strings.HasPrefix(errb.String(), "rdma-client: give the server's address") || strings.Count(errb.String(), "\n") != 1 || out.Len() != 0 {
		t.Errorf("stderr %q stdout %q", errb.String(), out.String())
	}
}

// No RDMA device: one line saying how to make one, exit 1, on any machine.
func TestNoDevice(t *testing.T) {
	e := machine
	check := func(t *testing.T, server bool, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if code := e.main(ctx, server, args, &out, &errb); code != ExitFailed {
			t.Errorf("%q: exit %d, want %d", args, code, ExitFailed)
		}
		if !strings.Contains(errb.String(), "rdma-link add rxe0 netdev eth0") || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("%q: stderr %q, want one line saying how to make a device", args, errb.String())
		}
	}
	for _, err := range []error{uverbs.ErrNoDevice, rdmacm.ErrNoCM} {
		e.devices = func() ([]uverbs.DeviceInfo, error) { return nil, err }
		check(t, true, "-a", "10.0.0.1")
		check(t, false, "write", "10.0.0.1")
	}
	e = machine
	if !testutil.HaveRDMA() {
		check(t, true)
		check(t, false, "--proto", "roce-lab", "10.0.0.1")
	}
}

func TestTraceFormat(t *testing.T) {
	var b bytes.Buffer
	tr := NewTrace(&b, "server")
	tr.out.now = func() time.Time { return time.Date(2026, 1, 2, 7, 4, 56, 582_000_000, time.UTC) }
	tr.Slow("create CM channel + listen")
	tr.With("10.77.0.2:4242").Fast("%s", sendWRText(&uverbs.SendWR{ID: 1, Op: uverbs.OpWriteImm, Flags: uverbs.SendSignaled, Imm: 15,
		SGEs: []uverbs.SGE{{Addr: 0xaaaac32b7000, Length: 18, LKey: 0x79b}}, RemoteAddr: 0xaaaaf5121000, RKey: 0x43b}))
	tr.Data("readback %s", printable([]byte("client-wrote-this\x00junk")))
	tr.Fast("%s", wcText(&uverbs.WC{ID: 2, Status: uverbs.WCRemoteAccessError, QPN: 0x11}))
	tr.Fast("%s", wcText(&uverbs.WC{ID: 100, Opcode: uverbs.WCOpRecvRDMAWithImm, ByteLen: 15, Imm: 15, Flags: uverbs.WCWithImm, QPN: 0x12}))
	tr.Fast("%s", recvWRText(&uverbs.RecvWR{ID: 100, SGEs: []uverbs.SGE{{Addr: 0x1000, Length: 64, LKey: 0x5}}}))
	want := `[07:04:56.582 #0001 server] SLOW  create CM channel + listen
[07:04:56.582 #0002 10.77.0.2:4242] FAST  post RDMA_WRITE_WITH_IMM wr_id=1 sge={addr=0xaaaac32b7000 len=18 lkey=0x79b} remote_addr=0xaaaaf5121000 rkey=0x43b imm_data=15 flags=SIGNALED
[07:04:56.582 #0003 server] DATA  readback "client-wrote-this"
[07:04:56.582 #0004 server] FAST  WC wr_id=2 status=IBV_WC_REM_ACCESS_ERR (remote access error) qp_num=0x11
[07:04:56.582 #0005 server] FAST  WC wr_id=100 status=IBV_WC_SUCCESS (success) opcode=RECV_RDMA_WITH_IMM byte_len=15 imm_data=15 qp_num=0x12
[07:04:56.582 #0006 server] FAST  post RECV wr_id=100 sge={addr=0x1000 len=64 lkey=0x5}
`
	if b.String() != want {
		t.Errorf("trace\n%s\nwant\n%s", b.String(), want)
	}
	off := NewTrace(nil, "x")
	off.Slow("nothing")
	if off.Enabled() {
		t.Error("a trace without output is enabled")
	}
}
