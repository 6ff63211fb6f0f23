package uverbs

import (
	"errors"
	"strings"
	"testing"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// getContextDevice answers GET_CONTEXT as the kernel does without driver
// data, and records what was asked.
type getContextDevice struct {
	fakeDoorbell
	cmds []uint32
}

func (d *getContextDevice) Write(op string, cmd uint32, in, out []byte) error {
	d.cmds = append(d.cmds, cmd)
	if cmd != abi.IB_USER_VERBS_CMD_GET_CONTEXT {
		return d.fakeDoorbell.Write(op, cmd, in, out)
	}
	resp := abi.UverbsGetContextResp{AsyncFD: 7, NumCompVectors: 2}
	copy(out, bytesOf(&resp))
	return nil
}

// Every driver with a data path has a provider; a device of another
// driver is opened with GET_CONTEXT alone (controlOnly), and its CQs, QPs
// and SRQs are refused at once, before any command, with ErrNotSupported
// naming the device and its driver.
func TestControlOnlyRefusesQueues(t *testing.T) {
	for _, d := range []DriverID{DriverRXE, DriverMLX5, DriverSIW} {
		if providers[d] == nil {
			t.Errorf("driver %v has no provider", d)
		}
	}
	if providers[DriverEFA] != nil {
		t.Fatalf("driver %v has a provider; pick a driver without one for this test", DriverEFA)
	}
	c := &Device{dev: DeviceInfo{Name: "efa_7", DriverID: DriverEFA}}
	dev := &getContextDevice{}
	var core abi.UverbsGetContextResp
	drv, err := openControlOnly(c)(dev, "get_context", &core)
	if err != nil || core.AsyncFD != 7 || core.NumCompVectors != 2 {
		t.Fatalf("open: %v, response %+v", err, core)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "efa_7") || !strings.Contains(err.Error(), DriverEFA.String()) {
			t.Errorf("%s: %v, want ErrNotSupported naming efa_7 and its driver", what, err)
		}
	}
	_, _, err = drv.CreateCQ(dev, "create_cq", abi.UverbsCreateCQ{CQE: 4}, 4)
	refused("CreateCQ", err)
	_, _, _, err = drv.CreateQP(dev, "create_qp", abi.UverbsCreateQP{}, provider.QPParams{Type: provider.QPTypeRC, MaxSendWR: 1, MaxRecvWR: 1})
	refused("CreateQP", err)
	_, _, _, err = drv.CreateSRQ(dev, "create_srq", abi.UverbsCreateSRQ{}, 4, 1)
	refused("CreateSRQ", err)
	if len(dev.cmds) != 1 {
		t.Errorf("commands issued: %v, want GET_CONTEXT alone", dev.cmds)
	}
}
