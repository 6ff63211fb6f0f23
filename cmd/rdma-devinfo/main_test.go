package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/goverbs/rdma/internal/testutil"
	"github.com/goverbs/rdma/uverbs"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// parseDevinfo turns ibv_devinfo-style output into key -> value. Keys are
// qualified by device and port ("rxe0/port 1/state"); a label line without
// value ("rc_odp_caps:") opens a group whose bare lines (flag names) are
// collected under "group[]"; "Unknown flags" lines are keyed by their group.
func parseDevinfo(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	dev, port, group := "", "", ""
	for _, line := range strings.Split(out, "\n") {
		s := strings.TrimSpace(line)
		if s == "" {
			continue
		}
		key, val, hasColon := strings.Cut(s, ":")
		val = strings.TrimSpace(val)
		switch {
		case hasColon && key == "hca_id":
			dev, port, group = val, "", ""
			continue
		case hasColon && key == "port":
			port, group = "port "+val, ""
			continue
		}
		prefix := dev + "/"
		if port != "" {
			prefix += port + "/"
		}
		switch {
		case hasColon && val == "":
			group = key
			m[prefix+key] = ""
		case hasColon && key == "Unknown flags":
			m[prefix+group+"/"+key] = val
		case hasColon:
			if !strings.HasPrefix(line, "\t\t\t\t\t") && !strings.HasPrefix(line, "\t\t") {
				group = key // a top-level value line also ends a flag list
			}
			m[prefix+key] = val
		default:
			k := prefix + group + "[]"
			if m[k] != "" {
				m[k] += ","
			}
			m[k] += s
		}
	}
	return m
}

// Fields ibv_devinfo prints that rdma-devinfo does not (each needs a reason).
var knownMissing = map[string]string{}

// For every device, the verbose output of rdma-devinfo matches rdma-core's
// ibv_devinfo field for field, GID lines included.
func TestMatchesIBVDevinfo(t *testing.T) {
	testutil.RequireRDMA(t)
	ibv, err := exec.LookPath("ibv_devinfo")
	if err != nil {
		if testutil.InLab() {
			t.Fatal("ibv_devinfo (rdma-core's ibverbs-utils) is not installed in the lab")
		}
		t.Skip("ibv_devinfo not installed")
	}
	devs, err := uverbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		// Only devices with a provider in uverbs: the lab's siw devices
		// (siw1, siw2) have none yet, and their get_context fails.
		if d.DriverID != uverbs.DriverRXE && d.DriverID != uverbs.DriverMLX5 {
			t.Logf("%s: driver %s has no provider in uverbs; not compared", d.Name, d.Driver)
			continue
		}
		for _, verbose := range []bool{true, false} {
			args := []string{"-d", d.Name}
			if verbose {
				args = append(args, "-v")
			}
			want, err := exec.Command(ibv, args...).Output()
			if err != nil {
				t.Fatalf("ibv_devinfo %v: %v", args, err)
			}
			var got, stderr bytes.Buffer
			if code := run(args, &got, &stderr); code != 0 {
				t.Fatalf("rdma-devinfo %v: exit %d: %s", args, code, stderr.String())
			}
			wm, gm := parseDevinfo(t, string(want)), parseDevinfo(t, got.String())
			if len(gm) < 10 {
				t.Fatalf("rdma-devinfo %v printed %d fields:\n%s", args, len(gm), got.String())
			}
			for k, v := range gm {
				w, ok := wm[k]
				switch {
				case !ok:
					t.Errorf("%v: we print %q = %q, ibv_devinfo has no such field", args, k, v)
				case w != v:
					t.Errorf("%v: %q = %q, ibv_devinfo says %q", args, k, v, w)
				}
			}
			for k, v := range wm {
				if _, ok := gm[k]; !ok {
					if _, known := knownMissing[k]; !known {
						t.Errorf("%v: ibv_devinfo prints %q = %q, rdma-devinfo does not", args, k, v)
					}
				}
			}
			if verbose && !strings.Contains(got.String(), "GID[  0]:") {
				t.Errorf("%v: no GID lines in\n%s", args, got.String())
			}
			if !t.Failed() && verbose {
				t.Logf("%s: %d fields match ibv_devinfo -v", d.Name, len(gm))
			}
			// Same text, line for line, as far as the fields go: also
			// the order and the tabs.
			if t.Failed() {
				t.Logf("ibv_devinfo:\n%s\nrdma-devinfo:\n%s", want, got.String())
			} else if string(want) != got.String() {
				t.Errorf("%v: fields match but the text differs:\n--- ibv_devinfo\n%s\n--- rdma-devinfo\n%s", args, want, got.String())
			}
		}
	}
}

func TestUnknownDevice(t *testing.T) {
	testutil.RequireRDMA(t)
	var out, errb bytes.Buffer
	if code := run([]string{"-d", "no_such_dev0"}, &out, &errb); code == 0 {
		t.Fatal("exit 0 for an unknown device")
	}
	if !strings.Contains(errb.String(), "available:") || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("stderr = %q, want one line listing the devices", errb.String())
	}
}

// Unit test of the parts of the format that the lab's rxe devices do not
// exercise: unknown capability bits, RoCE v1 GIDs, ibv_devinfo's skipping of
// GIDs with a zero interface ID.
func TestFormatDetails(t *testing.T) {
	r := &report{
		Dev: uverbs.DeviceInfo{Name: "rxe9", NodeType: uverbs.NodeCA, DriverID: uverbs.DriverRXE},
		Attr: uverbs.DeviceAttr{
			PhysPortCnt:    1,
			DeviceCapFlags: uverbs.DeviceBadPKeyCntr | 1<<30 | uverbs.DeviceFlushGlobal | uverbs.DeviceAtomicWrite | uverbs.DeviceRawScatterFCS,
			MaxSRQ:         0,
			FWVer:          0,
		},
		NumCompVectors: 1,
		Ports: []portReport{{
			Num: 1,
			Attr: uverbs.PortAttr{
				State: uverbs.PortActive, MaxMTU: uverbs.MTU4096, ActiveMTU: uverbs.MTU1024,
				LinkLayer: uverbs.LinkLayerEthernet, PhysState: uverbs.PhysTraining, ActiveWidth: 2, ActiveSpeed: 32, MaxVLNum: 3,
			},
			GIDs: []uverbs.GIDEntry{
				{Index: 0, GID: mustGID(t, "fe80::1"), Type: uverbs.GIDTypeRoCEv1},
				{Index: 3, GID: mustGID(t, "fe80::"), Type: uverbs.GIDTypeRoCEv2},
				{Index: 12, GID: mustGID(t, "10.1.2.3"), Type: uverbs.GIDTypeRoCEv2},
			},
		}},
	}
	var b bytes.Buffer
	writeReport(&b, r, true, 0)
	out := b.String()
	for _, want := range []string{
		"\tfw_ver:\t\t\t\t0.0.0\n",
		"\tdevice_cap_flags:\t\t0x40000002\n\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tUnknown flags: 0x40000000\n\tmax_sge:",
		"\tmax_srq:\t\t\t0\n\tmax_pkeys:",
		"\tdevice_cap_flags_ex:\t\t0x14440000002\n\t\t\t\t\tRAW_SCATTER_FCS\n\t\t\t\t\tUnknown flags: 0x14000000000\n",
		"\t\t\tactive_mtu:\t\t1024 (3)\n",
		"\t\t\tmax_vl_num:\t\t4 (3)\n",
		"\t\t\tactive_width:\t\t4X (2)\n",
		"\t\t\tactive_speed:\t\t25.0 Gbps (32)\n",
		"\t\t\tphys_state:\t\tPORT_CONFIGURATION TRAINNING (4)\n",
		"\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001, RoCE v1\n",
		"\t\t\tGID[ 12]:\t\t::ffff:10.1.2.3, RoCE v2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "GID[  3]") {
		t.Error("a GID with a zero interface ID was printed")
	}
}

func mustGID(t *testing.T, s string) uverbs.GID {
	g, err := uverbs.ParseGID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNoDeviceMessage(t *testing.T) {
	check := func(t *testing.T, devices func() ([]uverbs.DeviceInfo, error)) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := runWith(devices, nil, &out, &errb); code == 0 {
			t.Fatal("exit 0 without a device")
		}
		if !strings.Contains(errb.String(), "rdma-link add rxe0 netdev eth0") || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("stderr = %q, want one line saying how to create a device", errb.String())
		}
	}
	// The error discovery returns when there is no device, on any machine.
	t.Run("no_device_error", func(t *testing.T) {
		check(t, func() ([]uverbs.DeviceInfo, error) { return nil, uverbs.ErrNoDevice })
	})
	// The real discovery, on a machine that really has no RDMA device.
	if !testutil.HaveRDMA() {
		if _, err := os.Stat("/sys/class/infiniband_verbs"); err != nil {
			t.Run("real_discovery", func(t *testing.T) { check(t, uverbs.Devices) })
		}
	}
}
