package uverbs

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

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
		if providers[d].Open == nil {
			t.Errorf("driver %v has no provider", d)
		}
	}
	if providers[DriverEFA].Open != nil {
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

// ahContext is a provider context whose CreateAH records the parameters
// it is given and succeeds without a command; ahPortInfoContext is one
// that asks for the port's link (provider.AHPortInfo).
type ahContext struct {
	controlOnly
	got   []provider.AHParams
	calls int
}

func (c *ahContext) CreateAH(_ provider.Device, _ string, _ abi.UverbsCreateAH, a provider.AHParams) (provider.AH, uint32, error) {
	c.calls++
	c.got = append(c.got, a)
	return provider.AH{Num: 1}, 5, nil
}

type ahPortInfoContext struct{ ahContext }

func (*ahPortInfoContext) AHPortInfo() {}

// CreateAH queries the port (and the source GID) only for a provider that
// reads the port's link (provider.AHPortInfo); the others go straight to
// CREATE_AH, whose attributes the kernel judges. The queries' errors name
// create_ah and say what was being queried. The Device's commands go to
// /dev/full, so any query fails.
func TestCreateAHQueriesOnlyForAHPortInfo(t *testing.T) {
	c, _ := fakeCmdContext(t)
	plain := &ahContext{}
	c.drv = plain
	attr := AHAttr{Port: 1, DGID: GIDFromIP(netip.MustParseAddr("10.77.0.2")), SGIDIndex: 200, HopLimit: 64}
	ah := &AH{attr: attr}
	if err := ah.create("create_ah", c, &abi.UverbsCreateAH{}); err != nil {
		t.Fatalf("create_ah on a provider without AHPortInfo: %v; want no port or GID query", err)
	}
	if plain.calls != 1 || ah.handle != 5 {
		t.Fatalf("provider CreateAH called %d times, handle %d; want once, 5", plain.calls, ah.handle)
	}
	if g := plain.got[0]; g.Ethernet || g.GRHRequired || g.RoCEv2 || !g.IsGlobal || g.SGIDIndex != 200 {
		t.Errorf("parameters %+v: want the attributes and no port link", g)
	}

	info := &ahPortInfoContext{}
	c.drv = info
	err := (&AH{attr: attr}).create("create_ah", c, &abi.UverbsCreateAH{})
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "create_ah" || !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), "querying port 1") {
		t.Errorf("create_ah with the port query refused: %v; want an OpError create_ah matching ENOSPC saying it queried port 1", err)
	}
	if info.calls != 0 {
		t.Errorf("provider CreateAH called %d times after the port query failed", info.calls)
	}
}

// A create that finds the Device's doorbells closed (it raced
// Device.Close) fails with the closed Device's error, naming the verb.
func TestProviderErrorDoorbellsClosed(t *testing.T) {
	var d provider.Doorbells
	d.Close()
	_, err := d.New(1, "test doorbells")
	err = providerError("create_qp", err)
	var oe *OpError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &oe) || oe.Op != "create_qp" {
		t.Errorf("create_qp with the doorbells closed: %v; want an OpError create_qp matching ErrClosed", err)
	}
	if err := providerError("create_qp", unix.EINVAL); errors.Is(err, ErrClosed) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("create_qp refused with EINVAL: %v; want EINVAL, not ErrClosed", err)
	}
}
