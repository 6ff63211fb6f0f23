package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/rdma/internal/testutil"
)

// A device, port or GID index that does not exist is refused at once by
// the server side, before it waits for a client, as perftest refuses them
// at start-up; the device error names the devices that exist. A server
// that waited instead is cancelled after the timeout and fails the test.
func TestBadDeviceRefusedAtOnce(t *testing.T) {
	dev := testutil.LoopbackDevice(t)
	for i, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no such device", []string{"write_bw", "-d", "nosuchdev"}, []string{`"nosuchdev" not found; available:`, dev}},
		{"no such device with -R", []string{"send_bw", "-R", "-d", "nosuchdev"}, []string{`"nosuchdev" not found; available:`, dev}},
		{"no such port", []string{"write_bw", "-d", dev, "-i", "2"}, []string{"port 2 of " + dev}},
		{"no such GID index", []string{"send_lat", "-d", dev, "-x", "200"}, []string{"GID index 200 of " + dev + " port 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out, errOut bytes.Buffer
			err := run(ctx, append(c.args, "-p", strconv.Itoa(19600+i)), &out, &errOut)
			switch {
			case ctx.Err() != nil:
				t.Fatalf("the server waited for a client instead of refusing: %v\n%s", err, out.String())
			case err == nil:
				t.Fatalf("no error\n%s", out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(out.String(), "Waiting for client") {
				t.Errorf("printed that it waits for a client before refusing:\n%s", out.String())
			}
		})
	}
}
