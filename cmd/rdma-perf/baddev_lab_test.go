package main

import (
	"context"
	"io"
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

// A device, port or GID index that does not exist is refused at once by
// the server side, before it waits for a client, as perftest refuses them
// at start-up; the device error names the devices that exist.
func TestBadDeviceRefusedAtOnce(t *testing.T) {
	dev := testutil.LoopbackDevice(t)
	testutil.CheckRefusedAtOnce(t, 19600, "Waiting for client", []testutil.Refusal{
		{Name: "no such device", Args: []string{"write_bw", "-d", "nosuchdev"}, Want: []string{`"nosuchdev" not found; available:`, dev}},
		{Name: "no such device with -R", Args: []string{"send_bw", "-R", "-d", "nosuchdev"}, Want: []string{`"nosuchdev" not found; available:`, dev}},
		{Name: "no such port", Args: []string{"write_bw", "-d", dev, "-i", "2"}, Want: []string{"port 2 of " + dev}},
		{Name: "no such GID index", Args: []string{"send_lat", "-d", dev, "-x", "200"}, Want: []string{"GID index 200 of " + dev + " port 1"}},
	}, func(ctx context.Context, args []string, out io.Writer) error {
		return run(ctx, args, out, io.Discard)
	})
}
