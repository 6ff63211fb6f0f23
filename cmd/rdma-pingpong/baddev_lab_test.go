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
// the server side, before it waits for a client (as ibv_rc_pingpong does);
// the device error names the devices that exist. A server that waited
// instead is cancelled after the timeout and fails the test.
func TestBadDeviceRefusedAtOnce(t *testing.T) {
	dev := testutil.LoopbackDevice(t)
	for i, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no such device", []string{"-d", "nosuchdev"}, []string{`"nosuchdev" not found; available:`, dev}},
		{"no such port", []string{"-d", dev, "-i", "2"}, []string{"port 2 of " + dev}},
		{"no such GID index", []string{"-d", dev, "-g", "200"}, []string{"GID index 200 of " + dev + " port 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			err := run(ctx, append(c.args, "-p", strconv.Itoa(19650+i)), &out)
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
		})
	}
}
