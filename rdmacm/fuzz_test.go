package rdmacm

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/abi"
)

// What arrives from outside the process: the CM's event responses (whose
// private data and addresses a peer chooses) and the sockaddrs and path
// records of its query answers. The decoders must take any bytes.

// eventBytes lays out an event response with the given type, status and
// private data length, as the kernel would.
func eventBytes(event uint32, status int32, ud bool, pdLen uint8) []byte {
	var r abi.UcmEventResp
	r.Event, r.Status = event, uint32(status)
	off := abi.UcmEventRespOffParamConnPrivateDataLen
	if ud {
		off = abi.UcmEventRespOffParamUDPrivateDataLen
	}
	b := bytesOf(&r)
	b[off] = pdLen
	return append([]byte(nil), b...)
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(eventBytes(abi.RDMA_CM_EVENT_CONNECT_REQUEST, 0, false, 56), false)
	f.Add(eventBytes(abi.RDMA_CM_EVENT_ESTABLISHED, 0, true, 180), true)
	f.Add(eventBytes(abi.RDMA_CM_EVENT_REJECTED, 28, false, 148), false)
	f.Add(eventBytes(abi.RDMA_CM_EVENT_CONNECT_RESPONSE, 0, false, 255), false)
	f.Add(eventBytes(abi.RDMA_CM_EVENT_UNREACHABLE, -110, true, 0), true)
	f.Add(eventBytes(99, 0, false, 7), false)
	f.Fuzz(func(t *testing.T, raw []byte, ud bool) {
		var r abi.UcmEventResp
		copy(bytesOf(&r), raw)
		e := decodeEvent(&r, ud)
		if e.Request != nil {
			t.Fatal("the decoder made a request ID")
		}
		if len(e.PrivateData) > len(abi.UcmConnParam{}.PrivateData) {
			t.Fatalf("%d bytes of private data from a %d-byte field", len(e.PrivateData), len(abi.UcmConnParam{}.PrivateData))
		}
		// Only the events that carry connection or UD parameters have
		// private data, and exactly as much as the kernel says.
		if len(e.PrivateData) > 0 {
			off := abi.UcmEventRespOffParamConnPrivateDataLen
			if ud && (e.Type == EventEstablished || e.Type == EventConnectRequest) {
				off = abi.UcmEventRespOffParamUDPrivateDataLen
			}
			if got := bytesOf(&r)[off]; int(got) != len(e.PrivateData) {
				t.Fatalf("private data: %d bytes, the kernel said %d", len(e.PrivateData), got)
			}
		}
		_ = e.Type.String()
		if e.Type == EventRejected {
			_ = eventError("connect", e).Error()
		}
	})
}

func FuzzDecodeSockaddr(f *testing.F) {
	for _, s := range []string{"10.77.0.1:7471", "[fe80::1%3]:20886", "[2001:db8::5]:1"} {
		var st abi.KernelSockaddrStorage
		n, _ := encodeSockaddr(&st, netip.MustParseAddrPort(s))
		f.Add(append([]byte(nil), st.Anon0[:n]...))
	}
	f.Add([]byte{byte(afIB), 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		ap := decodeSockaddr(b)
		decodeSockaddrIB(b)
		if !ap.IsValid() {
			return
		}
		family := binary.NativeEndian.Uint16(b)
		if family != unix.AF_INET && family != unix.AF_INET6 {
			t.Fatalf("family %d decoded to %v", family, ap)
		}
		// What decodes, encodes back to the same address (a zone that is
		// an interface index stays one).
		var st abi.KernelSockaddrStorage
		n, err := encodeSockaddr(&st, ap)
		if err != nil {
			if ap.Addr().Zone() != "" {
				return // a numeric zone of no interface here
			}
			t.Fatalf("%v decoded but does not encode: %v", ap, err)
		}
		if got := decodeSockaddr(st.Anon0[:n]); got != netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) {
			t.Fatalf("%v -> %v after a round trip", ap, got)
		}
	})
}

func FuzzDecodePathRecord(f *testing.F) {
	f.Add(make([]byte, 64))
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := make([]byte, unsafe.Sizeof(abi.IBPathRecData{}.PathRec))
		copy(b, raw)
		p := decodePathRecord(b)
		if p.SL > 15 || p.MTU > 63 || p.Rate > 63 || p.PacketLifeTime > 63 {
			t.Fatalf("fields out of their bit widths: %+v", p)
		}
	})
}
