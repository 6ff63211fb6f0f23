package main

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func TestParseArgs(t *testing.T) {
	def := options{size: defaultSize, port: defaultPort}
	with := func(f func(*options)) options {
		o := def
		f(&o)
		return o
	}
	good := []struct {
		args []string
		want options
	}{
		{[]string{"-s"}, with(func(o *options) { o.server = true })},
		{[]string{"-c", "-a", "10.0.0.1"}, with(func(o *options) { o.addr = "10.0.0.1" })},
		// getopt: grouped flags, attached values, a value that looks like a flag.
		{[]string{"-cvVd", "-a10.0.0.1", "-C10", "-S", "100", "-p", "7999", "-I", "10.0.0.2"}, with(func(o *options) {
			o.addr, o.source, o.count, o.size, o.port = "10.0.0.1", "10.0.0.2", 10, 100, 7999
			o.verbose, o.validate, o.debug = true, true, true
		})},
		{[]string{"-sPa", "::0"}, with(func(o *options) { o.server, o.persistent, o.addr = true, true, "::0" })},
		{[]string{"-s", "-S", "23"}, with(func(o *options) { o.server, o.size = true, 23 })},
		{[]string{"-s", "-S", "65535", "--"}, with(func(o *options) { o.server, o.size = true, 65535 })},
		{[]string{"-s", "-C", "0"}, with(func(o *options) { o.server = true })},
	}
	for _, c := range good {
		got, err := parseArgs(c.args)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if got.devices == nil {
			t.Errorf("%q: no device lister", c.args)
		}
		got.devices = nil // funcs do not compare
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %+v, want %+v", c.args, got, c.want)
		}
	}
	bad := []struct {
		args []string
		msg  string
	}{
		{nil, "give -s (server) or -c (client)"},
		{[]string{"-c"}, "-a addr"},
		{[]string{"-s", "-S", "22"}, "Invalid size 22 (valid range is 23 to 65535)"},
		{[]string{"-s", "-S65536"}, "Invalid size 65536"},
		{[]string{"-c", "-a", "x", "-C", "-1"}, "Invalid count -1"},
		{[]string{"-c", "-a", "x", "-C", "ten"}, "not a number"},
		{[]string{"-s", "-p", "70000"}, "not a port"},
		{[]string{"-s", "-c"}, "give one"},
		{[]string{"-s", "-x"}, "unknown option -x"},
		{[]string{"-s", "-q"}, "not supported"},
		{[]string{"-s", "-a"}, "needs a value"},
		{[]string{"-s", "extra"}, `unexpected argument "extra"`},
		{[]string{"-c", "-P", "-a", "x"}, "-P is for the server"},
		{[]string{"-s", "-I", "x"}, "-I is for the client"},
	}
	for _, c := range bad {
		_, err := parseArgs(c.args)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: error %v, want one with %q", c.args, err, c.msg)
		}
	}
}

func TestUsageExit(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-s", "-S", "1"}, &out, &errb); code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	if errb.String() != "rping: Invalid size 1 (valid range is 23 to 65535)\n" {
		t.Errorf("stderr %q", errb.String())
	}
	if !strings.HasPrefix(out.String(), "rping -s [-vVd]") {
		t.Errorf("stdout has no usage: %q", out.String())
	}
}

// The first pings of `rping -c -v -S 64` and `-S 23` (rdma-core 44, in the lab).
func TestFillPing(t *testing.T) {
	cases := []struct {
		size, ping int
		start      byte
		want       string
	}{
		{64, 0, 'A', "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr"},
		{64, 2, 'C', "rdma-ping-2: CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst"},
		// The letters run round from 'z' to 'A'.
		{64, 57, 'z', "rdma-ping-57: zABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnop"},
		{23, 0, 'A', "rdma-ping-0: ABCDEFGHI"},
		// A number too long for the buffer is cut, as snprintf does.
		{23, 1234567890, 'A', "rdma-ping-1234567890: "},
	}
	for _, c := range cases {
		buf := bytes.Repeat([]byte{0xff}, c.size)
		fillPing(buf, c.ping, c.start)
		if buf[c.size-1] != 0 {
			t.Errorf("size %d ping %d: last byte %#x, want 0", c.size, c.ping, buf[c.size-1])
		}
		if got := string(cstr(buf)); got != c.want {
			t.Errorf("size %d ping %d:\n got %q\nwant %q", c.size, c.ping, got, c.want)
		}
	}
	start := byte('A')
	for range 58 {
		start = nextStart(start)
	}
	if start != 'A' {
		t.Errorf("after 58 pings the first letter is %q, want 'A' again", start)
	}
}

func TestRDMAInfo(t *testing.T) {
	var b [infoLen]byte
	rdmaInfo{addr: 0x0102030405060708, rkey: 0x090a0b0c, size: 64}.put(b[:])
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 64}
	if !bytes.Equal(b[:], want) {
		t.Errorf("encoded % x, want % x (network byte order)", b, want)
	}
	if got := getInfo(b[:]); got != (rdmaInfo{0x0102030405060708, 0x090a0b0c, 64}) {
		t.Errorf("decoded %+v", got)
	}
}

func TestNoDeviceMessage(t *testing.T) {
	var devices func() ([]uverbs.DeviceInfo, error) // nil: the machine's
	check := func(t *testing.T, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		o, err := parseArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		if devices != nil {
			o.devices = devices
		}
		if code := execute(context.Background(), o, &out, &errb); code != exitNoDevice {
			t.Errorf("exit code %d, want %d (ENODEV, as rping)", code, exitNoDevice)
		}
		if !strings.Contains(errb.String(), "rdma-link add rxe0 netdev eth0") || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("stderr = %q, want one line saying how to create a device", errb.String())
		}
	}
	// The error device discovery returns when there is none, on any machine.
	t.Run("no_device_error", func(t *testing.T) {
		devices = func() ([]uverbs.DeviceInfo, error) { return nil, uverbs.ErrNoDevice }
		check(t, "-s")
		check(t, "-c", "-a", "10.0.0.1")
	})
	// The CM's error when it is missing.
	t.Run("no_cm_error", func(t *testing.T) {
		devices = func() ([]uverbs.DeviceInfo, error) { return nil, rdmacm.ErrNoCM }
		check(t, "-s")
	})
	// The real discovery, on a machine that really has no RDMA device.
	devices = nil
	if !testutil.HaveRDMA() {
		if _, err := os.Stat("/sys/class/infiniband_verbs"); err != nil {
			t.Run("real_discovery", func(t *testing.T) {
				check(t, "-s")
				check(t, "-c", "-a", "10.0.0.1")
			})
		}
	}
}
