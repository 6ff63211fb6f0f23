package rxe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// dirtySlot returns a 512-byte slot (inside a mapping) filled with 0xAA, so
// that fields EncodeSend must zero are visibly stale otherwise.
func dirtySlot(t testing.TB) []byte {
	s := mapAnon(t, 4096)[:512:512]
	for i := range s {
		s[i] = 0xAA
	}
	return s
}

// checkZeroExcept fails if any byte of the first header bytes of s outside
// the given [off, off+n) ranges is non-zero, or if any byte after the header
// outside the ranges was written (is no longer dirtySlot's 0xAA): the
// encoders clear the header and write only the SGEs or inline bytes of the
// request, as librxe does (docs/abi.md §3.4).
func checkZeroExcept(t *testing.T, s []byte, header int, ranges ...[2]int) {
	t.Helper()
	mask := make([]bool, len(s))
	for _, r := range ranges {
		for i := r[0]; i < r[0]+r[1]; i++ {
			mask[i] = true
		}
	}
	for i, b := range s {
		switch {
		case mask[i]:
		case i < header && b != 0:
			t.Fatalf("byte %d is %#x, want 0 (only documented fields may be set)", i, b)
		case i >= header && b != 0xAA:
			t.Fatalf("byte %d after the header is %#x, want 0xaa (bytes past the request's SGEs or inline data are left alone)", i, b)
		}
	}
}

func TestEncodeSendRDMAWriteWithImm(t *testing.T) {
	s := dirtySlot(t)
	wr := &SendWQE{
		ID: 0x1122334455667788, Op: OpRDMAWriteWithImm, Flags: SendSignaled | SendSolicited,
		Imm: 0x01020304, RemoteAddr: 0xfeedface00001000, RKey: 0xabcd,
		SGEs: []SGE{{Addr: 0x7f0000001000, Length: 100, LKey: 7}, {Addr: 0x7f0000002000, Length: 28, LKey: 8}},
	}
	if err := ValidateSend(wr, 0, &SendLimits{QPType: QPTypeRC, MaxSGE: 4, MaxInline: 64}); err != nil {
		t.Fatal(err)
	}
	EncodeSend(s, wr, 0)
	if u64(s, 0) != 0x1122334455667788 {
		t.Errorf("wr_id@0 = %#x", u64(s, 0))
	}
	if u32(s, 8) != 0 {
		t.Errorf("reserved@8 = %d, want 0 (it is not num_sge in rxe_send_wr)", u32(s, 8))
	}
	if u32(s, 12) != 1 || u32(s, 16) != 6 {
		t.Errorf("opcode@12 %d flags@16 %d, want 1 and 6", u32(s, 12), u32(s, 16))
	}
	if !bytes.Equal(s[20:24], []byte{1, 2, 3, 4}) {
		t.Errorf("imm_data@20 = % x, want big-endian 01 02 03 04", s[20:24])
	}
	if u64(s, 24) != 0xfeedface00001000 || u32(s, 32) != 0xabcd {
		t.Errorf("rdma.remote_addr@24 %#x rkey@32 %#x", u64(s, 24), u32(s, 32))
	}
	if u64(s, 152) != 0xfeedface00001000 {
		t.Errorf("iova@152 = %#x, want the remote address", u64(s, 152))
	}
	if u32(s, 184) != 128 || u32(s, 188) != 128 || u32(s, 196) != 2 {
		t.Errorf("dma length@184 %d resid@188 %d num_sge@196 %d, want 128 128 2", u32(s, 184), u32(s, 188), u32(s, 196))
	}
	if u64(s, 208) != 0x7f0000001000 || u32(s, 216) != 100 || u32(s, 220) != 7 ||
		u64(s, 224) != 0x7f0000002000 || u32(s, 232) != 28 || u32(s, 236) != 8 {
		t.Errorf("sge[] at 208 = % x", s[208:240])
	}
	checkZeroExcept(t, s, SendWQEHeaderSize, [2]int{0, 8}, [2]int{12, 8}, [2]int{20, 4}, [2]int{24, 12},
		[2]int{152, 8}, [2]int{184, 8}, [2]int{196, 4}, [2]int{208, 32})
}

func TestEncodeSendUD(t *testing.T) {
	s := dirtySlot(t)
	wr := &SendWQE{
		ID: 9, Op: OpSendWithImm, Flags: SendSignaled, Imm: 0xdeadbeef,
		RemoteQPN: 0x11, RemoteQKey: 0x80010000,
		SGEs: []SGE{{Addr: 0x5000, Length: 64, LKey: 1}},
	}
	if err := ValidateSend(wr, 3, &SendLimits{QPType: QPTypeUD, MaxSGE: 1, MaxInline: 16}); err != nil {
		t.Fatal(err)
	}
	EncodeSend(s, wr, 3)
	if u32(s, 12) != 3 || !bytes.Equal(s[20:24], []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Errorf("opcode %d imm % x", u32(s, 12), s[20:24])
	}
	if u32(s, 24) != 0x11 || u32(s, 28) != 0x80010000 || u16(s, 32) != 0 || u32(s, 36) != 3 {
		t.Errorf("ud remote_qpn@24 %#x qkey@28 %#x pkey_index@32 %d ah_num@36 %d", u32(s, 24), u32(s, 28), u16(s, 32), u32(s, 36))
	}
	if u64(s, 152) != 0 {
		t.Errorf("iova@152 = %#x, want 0 for a send", u64(s, 152))
	}
	if u32(s, 184) != 64 || u32(s, 196) != 1 || u64(s, 208) != 0x5000 {
		t.Errorf("dma: length %d num_sge %d sge0.addr %#x", u32(s, 184), u32(s, 196), u64(s, 208))
	}
	checkZeroExcept(t, s, SendWQEHeaderSize, [2]int{0, 8}, [2]int{12, 12}, [2]int{24, 8}, [2]int{36, 4},
		[2]int{184, 8}, [2]int{196, 4}, [2]int{208, 16})
}

// TestEncodeSendUDLegacyAV: on a kernel without AH numbers (5.10) a UD
// SEND carries the AH's struct rxe_av at offset 56 (5.10's
// rxe_send_wqe.av, today's wr.ud.av) and ah_num 0, as librxe's
// init_send_wqe copies it; the AV is built as rdma-core's rxe_create_av
// builds it.
func TestEncodeSendUDLegacyAV(t *testing.T) {
	attr := abi.UverbsAHAttr{PortNum: 1, IsGlobal: 1}
	attr.GRH.DGID = [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 14: 0, 15: 2}
	attr.GRH.SGIDIndex, attr.GRH.HopLimit, attr.GRH.TrafficClass, attr.GRH.FlowLabel = 1, 64, 3, 0x12345
	sgid := [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 14: 0, 15: 1}
	ah := provider.AH{Num: LegacyAHNum}
	*(*abi.RxeAV)(unsafe.Pointer(&ah.Data)) = addressVector(sgid, &attr)

	s := dirtySlot(t)
	wr := &SendWQE{ID: 9, Op: OpSend, AH: &ah, RemoteQPN: 0x11, RemoteQKey: 0x80010000,
		SGEs: []SGE{{Addr: 0x5000, Length: 64, LKey: 1}}}
	if err := ValidateSend(wr, LegacyAHNum, &SendLimits{QPType: QPTypeUD, MaxSGE: 1, MaxInline: 16}); err != nil {
		t.Fatal(err)
	}
	EncodeSend(s, wr, LegacyAHNum)
	if u32(s, 24) != 0x11 || u32(s, 28) != 0x80010000 || u32(s, 36) != 0 {
		t.Errorf("ud remote_qpn@24 %#x qkey@28 %#x ah_num@36 %d, want ah_num 0", u32(s, 24), u32(s, 28), u32(s, 36))
	}
	var want [88]byte
	want[0], want[1] = 1, abi.RXE_NETWORK_TYPE_IPV4 // port_num, network_type; dmac zero
	copy(want[8:24], attr.GRH.DGID[:])              // grh.dgid
	binary.NativeEndian.PutUint32(want[24:], 0x12345)
	want[28], want[29], want[30] = 1, 64, 3 // sgid_index, hop_limit, traffic_class
	binary.NativeEndian.PutUint16(want[32:], syscall.AF_INET)
	copy(want[36:40], []byte{10, 77, 0, 1}) // sgid_addr.sin_addr
	binary.NativeEndian.PutUint16(want[60:], syscall.AF_INET)
	copy(want[64:68], []byte{10, 77, 0, 2}) // dgid_addr.sin_addr
	if !bytes.Equal(s[56:144], want[:]) {
		t.Errorf("av@56:\n got % x\nwant % x", s[56:144], want[:])
	}
	checkZeroExcept(t, s, SendWQEHeaderSize, [2]int{0, 8}, [2]int{12, 4}, [2]int{24, 8}, [2]int{56, 88},
		[2]int{184, 8}, [2]int{196, 4}, [2]int{208, 16})

	// An IPv6 destination: AF_INET6 sockaddrs, the GIDs at offset 8.
	attr.GRH.DGID = [16]byte{0: 0xfe, 1: 0x80, 15: 2}
	av := addressVector([16]byte{0: 0xfe, 1: 0x80, 15: 1}, &attr)
	if av.NetworkType != abi.RXE_NETWORK_TYPE_IPV6 || binary.NativeEndian.Uint16(av.DGIDAddr[0:]) != syscall.AF_INET6 ||
		!bytes.Equal(av.DGIDAddr[8:24], attr.GRH.DGID[:]) || av.SGIDAddr[8] != 0xfe || av.SGIDAddr[23] != 1 {
		t.Errorf("IPv6 AV %+v", av)
	}
}

func TestEncodeSendAtomics(t *testing.T) {
	lim := &SendLimits{QPType: QPTypeRC, MaxSGE: 1, MaxInline: 16}
	for _, op := range []SendOpcode{OpAtomicCmpAndSwp, OpAtomicFetchAndAdd} {
		s := dirtySlot(t)
		wr := &SendWQE{ID: 1, Op: op, RemoteAddr: 0x10008, RKey: 0x55, CompareAdd: 0x0102030405060708, Swap: 0x1112131415161718,
			SGEs: []SGE{{Addr: 0x9000, Length: 8, LKey: 2}}}
		if err := ValidateSend(wr, 0, lim); err != nil {
			t.Fatal(err)
		}
		EncodeSend(s, wr, 0)
		if u32(s, 12) != uint32(op) || u64(s, 24) != 0x10008 || u64(s, 32) != 0x0102030405060708 ||
			u64(s, 40) != 0x1112131415161718 || u32(s, 48) != 0x55 || u64(s, 152) != 0x10008 {
			t.Errorf("op %d: atomic fields % x iova %#x", op, s[24:56], u64(s, 152))
		}
		if u32(s, 184) != 8 || u32(s, 188) != 8 || u32(s, 196) != 1 {
			t.Errorf("op %d: dma % x", op, s[184:208])
		}
		checkZeroExcept(t, s, SendWQEHeaderSize, [2]int{0, 1}, [2]int{12, 1}, [2]int{24, 28}, [2]int{152, 8},
			[2]int{184, 8}, [2]int{196, 4}, [2]int{208, 16})
	}
}

func TestEncodeSendReadAndInvalidate(t *testing.T) {
	s := dirtySlot(t)
	EncodeSend(s, &SendWQE{ID: 2, Op: OpRDMARead, RemoteAddr: 0x4000, RKey: 9, Imm: 0xffffffff, SGEs: []SGE{{Addr: 1, Length: 4096, LKey: 3}}}, 0)
	if u32(s, 12) != 4 || u64(s, 24) != 0x4000 || u32(s, 32) != 9 || u64(s, 152) != 0x4000 {
		t.Errorf("read: % x iova %#x", s[12:36], u64(s, 152))
	}
	if u32(s, 20) != 0 {
		t.Errorf("read: ex@20 = %#x, want 0 (no immediate on READ)", u32(s, 20))
	}
	for _, op := range []SendOpcode{OpLocalInv, OpSendWithInv} {
		s := dirtySlot(t)
		EncodeSend(s, &SendWQE{ID: 3, Op: op, Imm: 0x9abcdef0, InvalidateRKey: 0x12345678}, 0)
		if u32(s, 12) != uint32(op) || u32(s, 20) != 0x12345678 {
			t.Errorf("op %d: invalidate_rkey@20 = %#x, want host-order 0x12345678", op, u32(s, 20))
		}
		checkZeroExcept(t, s, SendWQEHeaderSize, [2]int{0, 1}, [2]int{12, 1}, [2]int{20, 4})
	}
}

func TestEncodeSendInline(t *testing.T) {
	src := mapAnon(t, 4096)
	copy(src, "hello, ")
	copy(src[1000:], "inline world")
	s := dirtySlot(t)
	wr := &SendWQE{ID: 4, Op: OpSend, Flags: SendInline | SendSignaled,
		SGEs: []SGE{{Addr: addrOf(src), Length: 7, LKey: 0}, {Addr: addrOf(src[1000:]), Length: 12}, {Addr: 0, Length: 0}}}
	if err := ValidateSend(wr, 0, &SendLimits{QPType: QPTypeRC, MaxSGE: 3, MaxInline: 48}); err != nil {
		t.Fatal(err)
	}
	EncodeSend(s, wr, 0)
	if got := string(s[208 : 208+19]); got != "hello, inline world" {
		t.Errorf("inline_data@208 = %q", got)
	}
	if u32(s, 16) != 10 || u32(s, 184) != 19 || u32(s, 188) != 19 || u32(s, 196) != 3 || u32(s, 200) != 0 {
		t.Errorf("flags %d dma % x", u32(s, 16), s[184:208])
	}
	checkZeroExcept(t, s, SendWQEHeaderSize, [2]int{0, 1}, [2]int{12, 1}, [2]int{16, 1}, [2]int{184, 8}, [2]int{196, 1}, [2]int{208, 19})
	// The payload was copied: changing the source afterwards changes nothing.
	src[0] = 'j'
	if s[208] != 'h' {
		t.Error("inline data aliases the source buffer")
	}
}

// TestEncodeSendInlineOne checks the one-SGE inline copy, which skips the
// loop: its bytes, its length, and nothing written after them.
func TestEncodeSendInlineOne(t *testing.T) {
	src := mapAnon(t, 4096)
	for i := range 64 {
		src[100+i] = byte(i + 1)
	}
	for _, n := range []uint32{0, 1, 63, 64} {
		s := dirtySlot(t)
		wr := &SendWQE{ID: 5, Op: OpSendWithImm, Flags: SendInline, Imm: 1, SGEs: []SGE{{Addr: addrOf(src[100:]), Length: n}}}
		if err := ValidateSend(wr, 0, &SendLimits{QPType: QPTypeRC, MaxSGE: 1, MaxInline: 64}); err != nil {
			t.Fatal(err)
		}
		EncodeSend(s, wr, 0)
		if !bytes.Equal(s[208:208+n], src[100:100+n]) || u32(s, 184) != n || u32(s, 188) != n || u32(s, 196) != 1 {
			t.Errorf("%d bytes: inline_data % x, dma % x", n, s[208:208+n], s[184:208])
		}
		if !allByte(s[208+n:], 0xAA) {
			t.Errorf("%d bytes: bytes after the inline data were written", n)
		}
	}
}

func TestValidateSend(t *testing.T) {
	rc := &SendLimits{QPType: QPTypeRC, MaxSGE: 2, MaxInline: 32}
	uc := &SendLimits{QPType: QPTypeUC, MaxSGE: 2, MaxInline: 32}
	ud := &SendLimits{QPType: QPTypeUD, MaxSGE: 2, MaxInline: 32}
	sge8 := []SGE{{Addr: 0x1000, Length: 8, LKey: 1}}
	cases := []struct {
		name string
		lim  *SendLimits
		wr   SendWQE
		want error
		ah   uint32 // the number of the request's AH
	}{
		{"rc write", rc, SendWQE{Op: OpRDMAWrite, SGEs: sge8}, nil, 0},
		{"rc send with inv", rc, SendWQE{Op: OpSendWithInv}, nil, 0},
		{"rc local inv", rc, SendWQE{Op: OpLocalInv}, nil, 0},
		{"uc write imm", uc, SendWQE{Op: OpRDMAWriteWithImm}, nil, 0},
		{"uc send with inv", uc, SendWQE{Op: OpSendWithInv}, nil, 0},
		{"ud send", ud, SendWQE{Op: OpSend, RemoteQPN: 5, RemoteQKey: 6}, nil, 1},
		{"ud send imm inline", ud, SendWQE{Op: OpSendWithImm, Flags: SendInline, RemoteQPN: 5, RemoteQKey: 6, SGEs: sge8}, nil, 1},
		{"too many sges", rc, SendWQE{Op: OpSend, SGEs: make([]SGE, 3)}, ErrTooManySGEs, 0},
		{"inline too long", rc, SendWQE{Op: OpSend, Flags: SendInline, SGEs: []SGE{{Length: 30}, {Length: 3}}}, ErrInlineTooLong, 0},
		{"inline at limit", rc, SendWQE{Op: OpSend, Flags: SendInline, SGEs: []SGE{{Length: 30}, {Length: 2}}}, nil, 0},
		// 2*0xffffffff wraps a 32-bit sum to 0xfffffffe (rdma-core 665294c5a).
		{"length overflow", rc, SendWQE{Op: OpSend, SGEs: []SGE{{Length: 0xffffffff}, {Length: 0xffffffff}}}, ErrLengthOverflow, 0},
		{"inline 32-bit wrap", &SendLimits{QPType: QPTypeRC, MaxSGE: 2, MaxInline: 512}, SendWQE{Op: OpSend, Flags: SendInline, SGEs: []SGE{{Length: 0xffffffff}, {Length: 2}}}, ErrLengthOverflow, 0},
		{"inline read", rc, SendWQE{Op: OpRDMARead, Flags: SendInline, SGEs: sge8}, ErrInlineNotAllowed, 0},
		{"inline atomic", rc, SendWQE{Op: OpAtomicFetchAndAdd, Flags: SendInline, SGEs: sge8}, ErrInlineNotAllowed, 0},
		{"atomic misaligned", rc, SendWQE{Op: OpAtomicCmpAndSwp, RemoteAddr: 0x1004, SGEs: sge8}, ErrAtomicAlignment, 0},
		{"atomic short", rc, SendWQE{Op: OpAtomicFetchAndAdd, RemoteAddr: 0x1000, SGEs: []SGE{{Length: 4}}}, ErrAtomicLength, 0},
		{"atomic no sge", rc, SendWQE{Op: OpAtomicFetchAndAdd, RemoteAddr: 0x1000}, ErrAtomicLength, 0},
		{"atomic 16 bytes", rc, SendWQE{Op: OpAtomicFetchAndAdd, RemoteAddr: 0x1000, SGEs: []SGE{{Length: 16}}}, nil, 0},
		{"uc read", uc, SendWQE{Op: OpRDMARead}, ErrOpcodeNotSupported, 0},
		{"uc atomic", uc, SendWQE{Op: OpAtomicCmpAndSwp, RemoteAddr: 8, SGEs: sge8}, ErrOpcodeNotSupported, 0},
		{"uc local inv", uc, SendWQE{Op: OpLocalInv}, ErrOpcodeNotSupported, 0},
		{"ud write", ud, SendWQE{Op: OpRDMAWrite, RemoteQPN: 5, RemoteQKey: 6}, ErrOpcodeNotSupported, 1},
		{"ud send with inv", ud, SendWQE{Op: OpSendWithInv, RemoteQPN: 5, RemoteQKey: 6}, ErrOpcodeNotSupported, 1},
		{"unknown opcode", rc, SendWQE{Op: 10}, ErrOpcodeNotSupported, 0},
		{"bad qp type", &SendLimits{QPType: 9, MaxSGE: 1}, SendWQE{Op: OpSend}, ErrOpcodeNotSupported, 0},
		{"bind mw", rc, SendWQE{Op: OpBindMW}, ErrOpcodeNotImplemented, 0},
		{"flush", rc, SendWQE{Op: OpFlush}, ErrOpcodeNotImplemented, 0},
		{"atomic write", rc, SendWQE{Op: OpAtomicWrite}, ErrOpcodeNotImplemented, 0},
		{"unknown flag", rc, SendWQE{Op: OpSend, Flags: 32}, ErrBadSendFlags, 0},
		{"ud without ah", ud, SendWQE{Op: OpSend, RemoteQPN: 5}, ErrUDAddress, 0},
		{"rc with ud address", rc, SendWQE{Op: OpSend, RemoteQPN: 5, RemoteQKey: 6}, ErrUDAddress, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateSend(&c.wr, c.ah, c.lim)
			if c.want == nil {
				if err != nil {
					t.Fatalf("valid work request refused: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if !errors.Is(err, ErrInvalidWR) || !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("%v does not match ErrInvalidWR and EINVAL", err)
			}
		})
	}
}

func TestSQPost(t *testing.T) {
	r := newFakeRing(t, 8, 4) // 256-byte slots, capacity 3
	lim := SendLimits{QPType: QPTypeRC, MaxSGE: 3, MaxInline: 48}
	sq, err := NewSQ(r.buf, lim)
	if err != nil {
		t.Fatal(err)
	}
	wr := &SendWQE{Op: OpSend, Flags: SendSignaled, SGEs: []SGE{{Addr: 0x1000, Length: 10, LKey: 1}}}
	for i := uint64(1); i <= 3; i++ {
		wr.ID = i
		if err := sq.Post(wr, 0); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if got := r.kprod.Load(); got != 3 {
		t.Fatalf("producer_index %d after 3 posts", got)
	}
	before := bytes.Clone(r.buf)
	wr.ID = 4
	if err := sq.Post(wr, 0); !errors.Is(err, ErrQueueFull) || !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("post on a full SQ: %v, want ErrQueueFull (ENOMEM)", err)
	}
	if !bytes.Equal(before, r.buf) {
		t.Fatal("a refused post changed the ring")
	}
	r.kernelConsumeAll()
	bad := &SendWQE{Op: OpSend, SGEs: make([]SGE, 4)}
	if err := sq.Post(bad, 0); !errors.Is(err, ErrTooManySGEs) {
		t.Fatalf("post with 4 SGEs: %v", err)
	}
	if !bytes.Equal(before[:256], r.buf[:256]) || !bytes.Equal(before[384:], r.buf[384:]) {
		t.Fatal("an invalid post changed the ring")
	}
	if err := sq.Post(wr, 0); err != nil {
		t.Fatal(err)
	}
	if s := r.slot(3); u64(s, 0) != 4 || u32(s, 184) != 10 {
		t.Fatalf("4th WQE not in slot 3: wr_id %d length %d", u64(s, 0), u32(s, 184))
	}
	if sq.Limits() != lim {
		t.Fatal("Limits")
	}
}

func TestNewSQLimits(t *testing.T) {
	r := newFakeRing(t, 8, 4) // 256-byte slots
	// 208 + max(3*16, 48) = 256 fits; 4 SGEs need 272.
	if _, err := NewSQ(r.buf, SendLimits{QPType: QPTypeRC, MaxSGE: 3, MaxInline: 48}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSQ(r.buf, SendLimits{QPType: QPTypeRC, MaxSGE: 4}); err == nil {
		t.Fatal("SQ accepted 4 SGEs in 256-byte slots")
	}
	if _, err := NewSQ(r.buf, SendLimits{QPType: QPTypeRC, MaxInline: 64}); err == nil {
		t.Fatal("SQ accepted 64 inline bytes in 256-byte slots")
	}
	if _, err := NewSQ(r.buf, SendLimits{QPType: 1, MaxSGE: 1}); err == nil {
		t.Fatal("SQ accepted QP type 1")
	}
	if _, err := NewSQ(r.buf, SendLimits{QPType: QPTypeRC, MaxSGE: 33}); err == nil {
		t.Fatal("SQ accepted 33 SGEs")
	}
}
