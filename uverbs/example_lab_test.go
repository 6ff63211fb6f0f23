package uverbs_test

import (
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

// TestLabExamples runs the examples that need a device, which have no
// Output comment (go test would run them on machines without one), and
// checks what they print.
func TestLabExamples(t *testing.T) {
	testutil.RequireRDMA(t)
	for _, ex := range []struct {
		name string
		run  func()
		want string
	}{
		{"Open", ExampleOpen, "rxe0 node GUID true\nport 1 ACTIVE Ethernet\n"},
		{"PD_Close", ExamplePD_Close, "PD.Close with an MR open: busy true\nPD still usable: true\nPD.Close after its MRs: <nil>\n"},
		{"rdmaWrite", Example_rdmaWrite, "hello\n"},
	} {
		t.Run(ex.name, func(t *testing.T) {
			if got := testutil.Stdout(t, ex.run); got != ex.want {
				t.Errorf("Example%s printed\n%s\nwant\n%s", ex.name, got, ex.want)
			}
		})
	}
}
