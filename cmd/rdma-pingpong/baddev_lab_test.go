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
