package tutorial

import (
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) {
	childMain() // the lab tests run clients as processes of this binary
	testutil.Main(m)
}
