package main

import (
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

// A device, port or GID index that does not exist is refused at once by
// the server side, before it waits for a client (as ibv_rc_pingpong does);
// the device error names the devices that exist.
func TestBadDeviceRefusedAtOnce(t *testing.T) {
	dev := testutil.LoopbackDevice(t)
	testutil.CheckRefusedAtOnce(t, 19650, "", []testutil.Refusal{
		{Name: "no such device", Args: []string{"-d", "nosuchdev"}, Want: []string{`"nosuchdev" not found; available:`, dev}},
		{Name: "no such port", Args: []string{"-d", dev, "-i", "2"}, Want: []string{"port 2 of " + dev}},
		{Name: "no such GID index", Args: []string{"-d", dev, "-g", "200"}, Want: []string{"GID index 200 of " + dev + " port 1"}},
	}, run)
}

// An iWARP device (siw) is refused at once in both roles, in rc and ud,
// with advice to use a program that connects through the CM: iWARP QPs are
// connected only by the iWARP CM, never by this out-of-band exchange.
func TestIWARPDeviceRefusedAtOnce(t *testing.T) {
	siw := testutil.SiwPair(t)[0].Device
	want := []string{siw + " is an iWARP device", "use rping or rdma-perf -R"}
	testutil.CheckRefusedAtOnce(t, 19660, "", []testutil.Refusal{
		{Name: "rc server", Args: []string{"-d", siw}, Want: want},
		{Name: "rc client", Args: []string{"-d", siw, "127.0.0.1"}, Want: want},
		{Name: "ud server", Args: []string{"ud", "-d", siw}, Want: want},
		{Name: "ud client", Args: []string{"ud", "-d", siw, "127.0.0.1"}, Want: want},
	}, run)
}
