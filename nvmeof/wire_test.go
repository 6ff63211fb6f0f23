package nvmeof

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

// The layouts below are checked against the kernel's structures
// (include/linux/nvme.h, include/linux/nvme-rdma.h) byte by byte.

func TestCMRequest(t *testing.T) {
	b := cmRequest(3, 33)
	want := "0000" + "0300" + "2100" + "2000" + "000000000000000000000000000000000000000000000000"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("cm request\n got %s\nwant %s", got, want)
	}
}

func TestCMAccept(t *testing.T) {
	rep := make([]byte, 32)
	binary.LittleEndian.PutUint16(rep[2:], 32)
	if n, err := parseCMAccept(rep); err != nil || n != 32 {
		t.Fatalf("parseCMAccept = %d, %v", n, err)
	}
	rep[0] = 1
	if _, err := parseCMAccept(rep); !errors.Is(err, ErrProtocol) {
		t.Fatalf("record format 1: %v", err)
	}
	if _, err := parseCMAccept(rep[:3]); !errors.Is(err, ErrProtocol) {
		t.Fatalf("3 bytes: %v", err)
	}
	if r, ok := cmRejectReason([]byte{0, 0, 4, 0}); !ok || r != "invalid host send queue size (status 4)" {
		t.Fatalf("reject reason %q %v", r, ok)
	}
	if _, ok := cmRejectReason([]byte{1, 0, 4, 0}); ok {
		t.Fatal("a reject with record format 1 was read")
	}
}

func TestConnectCommand(t *testing.T) {
	c := connectCommand(2, 33, 5000)
	c.setCID(7)
	c.setKeyedSGL(0x1122334455667788, 1024, 0xaabbccdd)
	want := "7f40" + "0700" + "01" + "00000000000000000000000000000000000000" + // opcode, flags (SGL), cid, fctype, rsvd
		"8877665544332211" + "000400" + "ddccbbaa" + "40" + // keyed SGL: address, length, key, type
		"0000" + "0200" + "2000" + "00" + "00" + "88130000" + "000000000000000000000000"
	if got := hex.EncodeToString(c[:]); got != want {
		t.Fatalf("connect\n got %s\nwant %s", got, want)
	}
	var d [connectDataSize]byte
	connectData(d[:], [16]byte{1, 2}, 0xffff, "nqn.sub", "nqn.host")
	if d[0] != 1 || d[1] != 2 || binary.LittleEndian.Uint16(d[16:]) != 0xffff ||
		string(d[256:263]) != "nqn.sub" || d[263] != 0 || string(d[512:520]) != "nqn.host" {
		t.Fatalf("connect data wrong: % x", d[:32])
	}
}

func TestPropertyCommands(t *testing.T) {
	g := propertyGet(propCAP)
	if g[0] != 0x7f || g[4] != fctPropertyGet || g[40] != 1 || binary.LittleEndian.Uint32(g[44:]) != 0 {
		t.Fatalf("property get CAP: % x", g[:])
	}
	if g := propertyGet(propCSTS); g[40] != 0 || binary.LittleEndian.Uint32(g[44:]) != 0x1c {
		t.Fatalf("property get CSTS: % x", g[:])
	}
	s := propertySet(propCC, 0x460001)
	if s[4] != fctPropertySet || s[40] != 0 || binary.LittleEndian.Uint32(s[44:]) != 0x14 || binary.LittleEndian.Uint64(s[48:]) != 0x460001 {
		t.Fatalf("property set: % x", s[:])
	}
}

func TestIOCommands(t *testing.T) {
	c := rwCommand(opWrite, 1, 0x100000002, 8)
	c.setInlineSGL(4096)
	if c[0] != 1 || c[1] != flagSGL || binary.LittleEndian.Uint32(c[4:]) != 1 ||
		binary.LittleEndian.Uint64(c[40:]) != 0x100000002 || binary.LittleEndian.Uint16(c[48:]) != 7 {
		t.Fatalf("write: % x", c[:])
	}
	if binary.LittleEndian.Uint64(c[24:]) != 0 || binary.LittleEndian.Uint32(c[32:]) != 4096 || c[39] != 0x01 {
		t.Fatalf("in-capsule SGL: % x", c[24:40])
	}
	l := getLogPage(logDiscovery, 4096, 4096)
	if l[40] != 0x70 || binary.LittleEndian.Uint16(l[42:]) != 1023 || binary.LittleEndian.Uint32(l[48:]) != 4096 {
		t.Fatalf("get log page: % x", l[40:56])
	}
	q := setNumQueues(4)
	if q[0] != opSetFeature || q[40] != 7 || binary.LittleEndian.Uint32(q[44:]) != 0x30003 {
		t.Fatalf("set features: % x", q[40:48])
	}
}

func TestCompletion(t *testing.T) {
	b, _ := hex.DecodeString("2a00000000000000" + "0500" + "0100" + "0700" + "0503") // status 0x0305>>1 = 0x182
	c, err := parseCompletion(b)
	if err != nil || c.result != 42 || c.sqHead != 5 || c.sqID != 1 || c.cid != 7 || c.status != 0x182 {
		t.Fatalf("parseCompletion = %+v, %v", c, err)
	}
	e := statusError("connect queue 0", c.status)
	if e.Type != 1 || e.Code != 0x82 || e.DoNotRetry {
		t.Fatalf("status error %+v", e)
	}
	if got := e.Error(); got != "nvmeof: connect queue 0: invalid parameters (the host, subsystem or controller given is not known or not allowed) (status type 0x1, code 0x82)" {
		t.Fatalf("message %q", got)
	}
	if got := statusError("write zeroes", 0x183).Error(); got != "nvmeof: write zeroes: not supported on this namespace (the kernel's target: ONCS not supported) (status type 0x1, code 0x83)" {
		t.Fatalf("an I/O command's 0x183: %q", got)
	}
	if _, err := parseCompletion(b[:15]); !errors.Is(err, ErrProtocol) {
		t.Fatalf("15-byte response: %v", err)
	}
}

func TestIdentifyParsing(t *testing.T) {
	b := make([]byte, identifySize)
	copy(b[4:], "SN123               ")
	copy(b[24:], "Linux")
	b[77] = 8
	binary.LittleEndian.PutUint16(b[78:], 3)
	binary.LittleEndian.PutUint32(b[80:], 0x20000)
	binary.LittleEndian.PutUint32(b[516:], 1024)
	binary.LittleEndian.PutUint16(b[520:], 1<<3)
	copy(b[768:], "nqn.test")
	binary.LittleEndian.PutUint32(b[1792:], 260)
	ci, err := parseIdentifyController(b)
	if err != nil || ci.SerialNumber != "SN123" || ci.ModelNumber != "Linux" || ci.ControllerID != 3 ||
		ci.MaxDataTransfer != 1<<20 || ci.Namespaces != 1024 || !ci.WriteZeroes() ||
		ci.SubsystemNQN != "nqn.test" || ci.IOCommandCapsuleSize != 4160 {
		t.Fatalf("controller %+v %v", ci, err)
	}
	n := make([]byte, identifySize)
	binary.LittleEndian.PutUint64(n[0:], 1000)
	n[26] = 1
	n[128+4+2] = 12
	ni, err := parseIdentifyNamespace(1, n)
	if err != nil || ni.Size != 1000 || ni.BlockSize != 4096 {
		t.Fatalf("namespace %+v %v", ni, err)
	}
	n[128+4+2] = 40
	if _, err := parseIdentifyNamespace(1, n); !errors.Is(err, ErrProtocol) {
		t.Fatalf("2^40-byte blocks: %v", err)
	}
}

func TestDiscoveryEntry(t *testing.T) {
	b := make([]byte, discoveryEntrySize)
	b[0], b[1], b[2] = 1, 1, 2
	binary.LittleEndian.PutUint16(b[4:], 1)
	binary.LittleEndian.PutUint16(b[6:], 0xffff)
	copy(b[32:], "4420")
	copy(b[256:], "nqn.sub")
	copy(b[512:], "10.77.0.1")
	b[768], b[769], b[770] = 1, 4, 1
	e := parseDiscoveryEntry(b)
	if e.Transport() != "rdma" || e.Family() != "ipv4" || e.Subtype() != "nvme subsystem" || e.ServiceID != "4420" ||
		e.SubsystemNQN != "nqn.sub" || e.Address != "10.77.0.1" || e.RDMAProvider() != "roce-v2" || e.RDMACM() != "rdma-cm" {
		t.Fatalf("entry %+v", e)
	}
}

func TestUUID(t *testing.T) {
	id, ok := parseUUID("4c4c4544-0035-3010-8044-b4c04f4c3232")
	if !ok || formatUUID(id) != "4c4c4544-0035-3010-8044-b4c04f4c3232" {
		t.Fatalf("uuid round trip: %x %v", id, ok)
	}
	if _, ok := parseUUID("4c4c4544003530108044b4c04f4c3232"); ok {
		t.Fatal("a UUID without dashes was taken")
	}
}

// The decoders meet the target's bytes: none may panic, whatever they are.
func FuzzDecoders(f *testing.F) {
	f.Add(make([]byte, 16))
	f.Add(make([]byte, identifySize))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseCompletion(b)
		parseCMAccept(b)
		cmRejectReason(b)
		if len(b) >= identifySize {
			parseIdentifyController(b)
			parseIdentifyNamespace(1, b)
		}
		if len(b) >= discoveryEntrySize {
			parseDiscoveryEntry(b[:discoveryEntrySize])
		}
	})
}
