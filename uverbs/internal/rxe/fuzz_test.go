package rxe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"testing"
	"unsafe"
)

func FuzzDecodeCQE(f *testing.F) {
	seed := make([]byte, 48)
	writeCQE(seed, 42, 0, 128, 0, 1024, [4]byte{0, 0, 0, 9}, 17, 0, WCGRH|WCWithImm, 0, 0, 0, 0, 1)
	f.Add(seed)
	writeCQE(seed, 7, 5, 0, 3, 0, [4]byte{1, 2, 3, 4}, 18, 19, WCWithInvalidate|WCWithImm, 1, 2, 3, 4, 5)
	f.Add(bytes.Clone(seed))
	f.Add(bytes.Repeat([]byte{0xff}, 128))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := make([]byte, max(len(data), WCSize))
		copy(s, data)
		var wc WC
		DecodeCQE(s, &wc)
		// Re-encode at the UAPI offsets and compare with what was decoded.
		var ex [4]byte
		copy(ex[:], s[24:28])
		got := make([]byte, 48)
		writeCQE(got, wc.ID, wc.Status, wc.Opcode, wc.VendorErr, wc.ByteLen, ex, wc.QPNum, wc.SrcQP, wc.Flags,
			wc.PKeyIndex, wc.SLID, wc.SL, wc.DLIDPathBits, wc.PortNum)
		if !bytes.Equal(got[:47], s[:47]) {
			t.Fatalf("decode/encode mismatch:\n in % x\nout % x", s[:47], got[:47])
		}
		if wc.Flags&WCWithImm != 0 && wc.ImmData != binary.BigEndian.Uint32(s[24:]) {
			t.Fatalf("imm %#x from % x", wc.ImmData, s[24:28])
		}
		if wc.Flags&WCWithImm == 0 && wc.ImmData != 0 {
			t.Fatal("ImmData set without WITH_IMM")
		}
		if wc.Flags&WCWithInvalidate != 0 && wc.InvalidatedRKey != le.Uint32(s[24:]) {
			t.Fatalf("rkey %#x from % x", wc.InvalidatedRKey, s[24:28])
		}
		if wc.Flags&WCWithInvalidate == 0 && wc.InvalidatedRKey != 0 {
			t.Fatal("InvalidatedRKey set without WITH_INVALIDATE")
		}
		if wc.Flags&(WCWithImm|WCWithInvalidate) == WCWithImm|WCWithInvalidate && bits.ReverseBytes32(wc.ImmData) != wc.InvalidatedRKey {
			t.Fatal("the two views of the ex union disagree")
		}
	})
}

func FuzzEncodeSend(f *testing.F) {
	f.Add(uint64(1), uint32(OpRDMAWrite), uint32(SendSignaled), uint32(0), uint32(0), uint64(0x1000), uint32(5), uint64(0), uint64(0), uint32(0), uint32(0), uint32(0), uint8(QPTypeRC), []byte{0, 16, 1, 0})
	f.Add(uint64(2), uint32(OpSendWithImm), uint32(SendInline), uint32(0xabcdef01), uint32(0), uint64(0), uint32(0), uint64(0), uint64(0), uint32(3), uint32(4), uint32(1), uint8(QPTypeUD), []byte{0, 20, 0, 30})
	f.Add(uint64(3), uint32(OpAtomicCmpAndSwp), uint32(0), uint32(0), uint32(0), uint64(0x2000), uint32(7), uint64(1), uint64(2), uint32(0), uint32(0), uint32(0), uint8(QPTypeRC), []byte{0, 8})
	f.Add(uint64(4), uint32(OpSendWithInv), uint32(SendFence), uint32(0), uint32(0x1234), uint64(0), uint32(0), uint64(0), uint64(0), uint32(0), uint32(0), uint32(0), uint8(QPTypeUC), []byte{})
	f.Add(uint64(6), uint32(OpRDMAWrite), uint32(SendInline), uint32(0), uint32(0), uint64(0x3000), uint32(9), uint64(0), uint64(0), uint32(0), uint32(0), uint32(0), uint8(QPTypeRC), []byte{0, 64})
	f.Add(uint64(5), uint32(OpSend), uint32(SendInline), uint32(0), uint32(0), uint64(0), uint32(0), uint64(0), uint64(0), uint32(0), uint32(0), uint32(0), uint8(QPTypeRC), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})

	src := mapAnon(f, 1<<20)
	for i := range src {
		src[i] = byte(i * 7)
	}
	const maxSGE, maxInline = 4, 128
	f.Fuzz(func(t *testing.T, id uint64, opcode, flags, imm, inv uint32, raddr uint64, rkey uint32, cmp, swap uint64,
		qpn, qkey, ah uint32, qpType uint8, lens []byte) {
		// Each pair of bytes is one SGE length; its address is a distinct
		// offset into src so that inline copies read real mapped memory.
		var sges []SGE
		for i := 0; i+1 < len(lens) && len(sges) < 6; i += 2 {
			n := uint32(binary.BigEndian.Uint16(lens[i:]))
			if len(lens) > 8 && i == 0 {
				n |= uint32(lens[len(lens)-1]) << 24 // allow huge lengths too
			}
			off := uint64(len(sges)) * 65536
			sges = append(sges, SGE{Addr: addrOf(src) + off, Length: n, LKey: uint32(i)})
		}
		// ex is a union in the WQE: the immediate, or the rkey to
		// invalidate; both fields set, so that the wrong one shows.
		wr := &SendWQE{ID: id, Op: SendOpcode(opcode), Flags: SendFlags(flags), Imm: imm, InvalidateRKey: inv,
			RemoteAddr: raddr, RKey: rkey, CompareAdd: cmp, Swap: swap, RemoteQPN: qpn, RemoteQKey: qkey, SGEs: sges}
		lim := &SendLimits{QPType: QPType(qpType), MaxSGE: maxSGE, MaxInline: maxInline}
		if err := ValidateSend(wr, ah, lim); err != nil {
			if !errors.Is(err, ErrInvalidWR) {
				t.Fatalf("validation error %v does not match ErrInvalidWR", err)
			}
			return
		}
		// A 512-byte slot (208 + 128 rounds up to 512) between guard bytes.
		buf := bytes.Repeat([]byte{0x5a}, 64+512+64)
		s := buf[64 : 64+512 : 64+512]
		EncodeSend(s, wr, ah)
		for i, b := range buf {
			if (i < 64 || i >= 576) && b != 0x5a {
				t.Fatalf("EncodeSend wrote outside its slot at guard byte %d", i)
			}
		}
		var total uint64
		for _, g := range sges {
			total += uint64(g.Length)
		}
		if u64(s, 0) != id || u32(s, 8) != 0 || u32(s, 12) != opcode || u32(s, 16) != flags {
			t.Fatalf("wr header % x", s[:24])
		}
		if u32(s, 184) != uint32(total) || u32(s, 188) != uint32(total) || u32(s, 192) != 0 ||
			u32(s, 196) != uint32(len(sges)) || u32(s, 200) != 0 || u32(s, 144) != 0 || u32(s, 148) != 0 {
			t.Fatalf("dma % x status/state % x (total %d)", s[184:208], s[144:152], total)
		}
		op := SendOpcode(opcode)
		wantIOVA := uint64(0)
		if op == OpRDMAWrite || op == OpRDMAWriteWithImm || op == OpRDMARead || op == OpAtomicCmpAndSwp || op == OpAtomicFetchAndAdd {
			wantIOVA = raddr
		}
		if u64(s, 152) != wantIOVA {
			t.Fatalf("iova %#x, want %#x", u64(s, 152), wantIOVA)
		}
		var wantEx uint32
		switch op {
		case OpRDMAWriteWithImm, OpSendWithImm:
			wantEx = bits.ReverseBytes32(imm) // __be32 imm_data
		case OpLocalInv, OpSendWithInv:
			wantEx = inv
		}
		if u32(s, 20) != wantEx {
			t.Fatalf("opcode %d: ex %#x, want %#x", op, u32(s, 20), wantEx)
		}
		if flags&uint32(SendInline) != 0 {
			off := 208
			for i, g := range sges {
				want := unsafe.Slice((*byte)(unsafe.Pointer(&src[i*65536])), g.Length)
				if !bytes.Equal(s[off:off+int(g.Length)], want) {
					t.Fatalf("inline bytes of SGE %d differ", i)
				}
				off += int(g.Length)
			}
			if !allByte(s[off:], 0x5a) {
				t.Fatal("bytes after the inline data were written")
			}
		} else {
			for i, g := range sges {
				e := s[208+16*i:]
				if u64(e, 0) != g.Addr || u32(e, 8) != g.Length || u32(e, 12) != g.LKey {
					t.Fatalf("sge %d: % x", i, e[:16])
				}
			}
			if !allByte(s[208+16*len(sges):], 0x5a) {
				t.Fatal("bytes after the SGE list were written")
			}
		}
	})
}

func allByte(b []byte, v byte) bool {
	for _, x := range b {
		if x != v {
			return false
		}
	}
	return true
}

// FuzzRingHeader feeds arbitrary headers and mapping sizes to the ring
// constructors: they must refuse or produce rings whose every slot lies
// inside the mapping, and never panic.
func FuzzRingHeader(f *testing.F) {
	f.Add(uint32(7), uint32(127), uint32(0), uint32(0), uint16(20480-4096))
	f.Add(uint32(8), uint32(3), uint32(2), uint32(3), uint16(2000))
	f.Add(uint32(31), uint32(1), uint32(0), uint32(0), uint16(4000))
	f.Add(uint32(6), uint32(0xffffffff), uint32(0), uint32(0), uint16(65535))
	f.Fuzz(func(t *testing.T, log2, mask, prod, cons uint32, size uint16) {
		mem := mapAnon(t, 384+int(size))
		buf := mem[:384+int(size)]
		le.PutUint32(buf[0:], log2)
		le.PutUint32(buf[4:], mask)
		le.PutUint32(buf[128:], prod)
		le.PutUint32(buf[256:], cons)
		inside := func(s []byte) {
			start := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
			base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
			if start < base+384 || start+uintptr(len(s)) > base+uintptr(len(buf)) {
				t.Fatalf("slot [%#x,+%d) outside the mapping [%#x,+%d)", start, len(s), base, len(buf))
			}
		}
		if p, err := NewProducer(buf, 1); err == nil {
			for i := 0; i < 3 && !p.Full(); i++ {
				inside(p.Slot())
				p.Publish()
			}
		}
		if c, err := NewConsumer(buf, 1); err == nil {
			for i := 0; i < 3 && !c.Empty(); i++ {
				inside(c.Peek())
				c.Consume()
			}
		}
	})
}
