package rdmacm

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/uverbs"

	"github.com/goverbs/rdma/internal/abi"
)

func TestSockaddrRoundTrip(t *testing.T) {
	for _, s := range []string{"10.77.0.1:7471", "[fe80::1%1]:20886", "[2001:db8::5]:1", "0.0.0.0:0", "[::ffff:10.0.0.1]:22222"} {
		ap := netip.MustParseAddrPort(s)
		var st abi.KernelSockaddrStorage
		size, err := encodeSockaddr(&st, ap)
		if err != nil {
			t.Fatal(err)
		}
		got := decodeSockaddr(st.Anon0[:size])
		want := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if got != want {
			t.Errorf("%s: decoded %v, want %v", s, got, want)
		}
		if a := ap.Addr().Unmap(); a.Is4() && size != 16 || a.Is6() && size != 28 {
			t.Errorf("%s: size %d", s, size)
		}
	}
	// struct sockaddr_in: family 2 in host order, port and address in
	// network order (<netinet/in.h>).
	var st abi.KernelSockaddrStorage
	encodeSockaddr(&st, netip.MustParseAddrPort("10.77.0.1:7471"))
	want := []byte{2, 0, 0x1d, 0x2f, 10, 77, 0, 1}
	if got := st.Anon0[:8]; string(got) != string(want) {
		t.Errorf("sockaddr_in bytes % x, want % x", got, want)
	}
	if _, err := encodeSockaddr(&st, netip.AddrPort{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("zero address: %v", err)
	}
}

func TestParseAddress(t *testing.T) {
	ctx := context.Background()
	for in, want := range map[string]string{
		"10.0.0.1:7471": "10.0.0.1:7471",
		":7471":         "0.0.0.0:7471",
		"[::1]:1":       "[::1]:1",
		"localhost:9":   "127.0.0.1:9",
	} {
		got, err := ParseAddress(ctx, in)
		if err != nil || got.String() != want {
			t.Errorf("ParseAddress(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.1:99999", "10.0.0.1:nope-no-such-service"} {
		if _, err := ParseAddress(ctx, bad); err == nil {
			t.Errorf("ParseAddress(%q) gave no error", bad)
		}
	}
}

// TestDecodeEvent decodes events laid out as the kernel writes struct
// rdma_ucm_event_resp (offsets from abi-offsets: conn private data at 28,
// its length at 284).
func TestDecodeEvent(t *testing.T) {
	var r abi.UcmEventResp
	b := unsafe.Slice((*byte)(unsafe.Pointer(&r)), unsafe.Sizeof(r))
	binary.NativeEndian.PutUint32(b[12:], uint32(EventRejected))
	binary.NativeEndian.PutUint32(b[16:], 28)
	copy(b[abi.UcmEventRespOffParamConnPrivateData:], "no thanks")
	b[abi.UcmEventRespOffParamConnPrivateDataLen] = 148
	e := decodeEvent(&r, false)
	if e.Type != EventRejected || e.Status != 28 || len(e.PrivateData) != 148 || !strings.HasPrefix(string(e.PrivateData), "no thanks\x00") {
		t.Fatalf("decoded %+v", e)
	}
	err := eventError("connect", e)
	var rej *RejectError
	if !errors.As(err, &rej) || !errors.Is(err, ErrRejected) || errors.Is(err, ErrConnRefused) {
		t.Fatalf("reject error %v", err)
	}

	// UNREACHABLE with -ETIMEDOUT.
	r = abi.UcmEventResp{Event: uint32(EventUnreachable), Status: uint32(0xffffff92)} // -110
	e = decodeEvent(&r, false)
	err = eventError("connect", e)
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, ErrConnRefused) {
		t.Fatalf("unreachable: %v", err)
	}

	// UD ESTABLISHED: QPN, QKey and the address vector.
	r = abi.UcmEventResp{Event: uint32(EventEstablished)}
	p := (*abi.UcmUDParam)(unsafe.Pointer(&r.Param[0]))
	p.QPNum, p.QKey = 0x11, udpQKey
	p.AHAttr.GRH.DGID[15] = 7
	p.AHAttr.PortNum = 1
	e = decodeEvent(&r, true)
	if e.RemoteQPN != 0x11 || e.QKey != udpQKey || e.AH.DGID[15] != 7 || e.AH.Port != 1 {
		t.Fatalf("UD event %+v", e)
	}
}

func TestEventNames(t *testing.T) {
	if s := EventEstablished.String(); s != "RDMA_CM_EVENT_ESTABLISHED" {
		t.Errorf("%q", s)
	}
	if s := EventTimewaitExit.String(); s != "RDMA_CM_EVENT_TIMEWAIT_EXIT" {
		t.Errorf("%q", s)
	}
	if s := EventType(99).String(); !strings.HasPrefix(s, "UNKNOWN EVENT") {
		t.Errorf("%q", s)
	}
}

// TestNoCM: without /dev/infiniband/rdma_cm the error says what to do.
func TestNoCM(t *testing.T) {
	old := devicePath
	devicePath = t.TempDir() + "/rdma_cm"
	defer func() { devicePath = old }()
	_, err := Dial(context.Background(), "10.0.0.1:1", nil)
	if !errors.Is(err, uverbs.ErrNoDevice) || !strings.Contains(err.Error(), "rdma-link add") {
		t.Fatalf("no CM: %v", err)
	}
}
