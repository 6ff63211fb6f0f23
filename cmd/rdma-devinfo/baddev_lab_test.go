package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

// -d with a device that does not exist fails with the devices that do.
func TestNoSuchDevice(t *testing.T) {
	dev := testutil.LoopbackDevice(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"-d", "nosuchdev"}, &out, &errOut); code != 1 {
		t.Errorf("exit status %d, want 1\n%s%s", code, out.String(), errOut.String())
	}
	for _, w := range []string{`"nosuchdev" not found; available:`, dev} {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("stderr %q does not say %q", errOut.String(), w)
		}
	}
}
