package tutorial

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// unhex reads a byte dump written as hex with spaces and newlines.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The geek MSG_MR as struct message lays it out on x86_64 (checked with
// gcc against rdma-core 44's infiniband/verbs.h: sizeof 56, addr at 24,
// length at 32, handle at 40, lkey at 44, rkey at 48).
func TestGeekMsgGolden(t *testing.T) {
	m := geekMsg{Type: geekMsgMR, MR: geekMR{Addr: 0x00007f1122334000, Length: 1024, Handle: 0x0a, LKey: 0x1234, RKey: 0x5678}}
	got := make([]byte, geekMsgLen)
	for i := range got {
		got[i] = 0xee // encode must clear the padding and the pointers
	}
	m.encode(got)
	want := unhex(t, `
		00000000 00000000  0000000000000000  0000000000000000
		0040332211 7f0000  0004000000000000  0a000000 34120000
		78560000 00000000`)
	if !bytes.Equal(got, want) {
		t.Fatalf("MSG_MR\n got % x\nwant % x", got, want)
	}
	back, err := decodeGeekMsg(got)
	if err != nil || back != m {
		t.Fatalf("decode: %+v, %v; want %+v", back, err, m)
	}

	done := make([]byte, geekMsgLen)
	geekMsg{Type: geekMsgDone}.encode(done)
	doneWant := append([]byte{1, 0, 0, 0}, make([]byte, 52)...)
	if !bytes.Equal(done, doneWant) {
		t.Fatalf("MSG_DONE % x, want % x", done, doneWant)
	}

	// What a C peer sends: the pointers at 8 and 16 are set and ignored.
	c := bytes.Clone(doneWant)
	copy(c[8:], []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	if back, err := decodeGeekMsg(c); err != nil || back.Type != geekMsgDone {
		t.Errorf("decode with pointers: %+v %v", back, err)
	}
	for _, bad := range [][]byte{make([]byte, 55), append([]byte{2}, make([]byte, 55)...)} {
		if _, err := decodeGeekMsg(bad); err == nil || !strings.Contains(err.Error(), "--proto geek") {
			t.Errorf("decode % x: %v, want an error naming the protocol", bad[:4], err)
		}
	}
}

// struct rdma_buffer_attr: packed {u64 address; u32 length; u32 stag},
// host order (little-endian on x86_64), 16 bytes.
func TestRDMAExampleAttrGolden(t *testing.T) {
	a := rdmaExampleAttr{Addr: 0x0000_7f00_1234_5000, Length: 15, STag: 0x75d}
	got := make([]byte, rdmaExampleAttrLen)
	a.encode(got)
	want := unhex(t, "0050341200 7f0000 0f000000 5d070000")
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	if back, err := decodeRDMAExampleAttr(got); err != nil || back != a {
		t.Fatalf("decode: %+v %v", back, err)
	}
	if _, err := decodeRDMAExampleAttr(got[:15]); err == nil {
		t.Error("15 bytes decoded")
	}
}

// struct remote_buf_info: packed {be64 addr; be32 rkey}, 12 bytes.
func TestRoceLabInfoGolden(t *testing.T) {
	i := roceLabInfo{Addr: 0x0000_aaaa_f512_1000, RKey: 0x43b}
	got := i.encode()
	want := unhex(t, "0000aaaaf5121000 0000043b")
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	// It arrives zero padded to the ACCEPT's 196 bytes.
	if back, err := decodeRoceLabInfo(pad(got, 196)); err != nil || back != i {
		t.Fatalf("decode: %+v %v", back, err)
	}
	if _, err := decodeRoceLabInfo(got[:11]); err == nil {
		t.Error("11 bytes decoded")
	}
	if _, err := decodeRoceLabInfo(make([]byte, 196)); err == nil || !strings.Contains(err.Error(), "--proto roce-lab") {
		t.Errorf("all-zero private data: %v", err)
	}
}

func TestGeekMessages(t *testing.T) {
	if got := geekMessage(true, 42); got != "message from active/client side with pid 42" {
		t.Error(got)
	}
	if got := geekMessage(false, 7); got != "message from passive/server side with pid 7" {
		t.Error(got)
	}
	if cstring([]byte("ab\x00cd")) != "ab" || cstring([]byte("abc")) != "abc" {
		t.Error("cstring")
	}
}
