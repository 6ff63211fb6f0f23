package nvmeof

import (
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }
