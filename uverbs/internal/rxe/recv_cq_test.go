package rxe

import (
	"bytes"
	"errors"
	"testing"
)

func TestEncodeRecv(t *testing.T) {
	s := dirtySlot(t)[:128]
	wr := &RecvWQE{ID: 0xabcdef, SGEs: []SGE{{Addr: 0x1000, Length: 4096, LKey: 5}, {Addr: 0x3000, Length: 40, LKey: 6}}}
	if err := ValidateRecv(wr, 2); err != nil {
		t.Fatal(err)
	}
	EncodeRecv(s, wr)
	if u64(s, 0) != 0xabcdef || u32(s, 8) != 0 || u32(s, 12) != 0 {
		t.Errorf("wr_id@0 %#x reserved@8 %d padding@12 %d", u64(s, 0), u32(s, 8), u32(s, 12))
	}
	if u32(s, 16) != 4136 || u32(s, 20) != 4136 || u32(s, 24) != 0 || u32(s, 28) != 2 || u32(s, 32) != 0 {
		t.Errorf("dma@16 = % x", s[16:40])
	}
	if u64(s, 40) != 0x1000 || u32(s, 48) != 4096 || u32(s, 52) != 5 || u64(s, 56) != 0x3000 || u32(s, 64) != 40 || u32(s, 68) != 6 {
		t.Errorf("sge[]@40 = % x", s[40:72])
	}
	checkZeroExcept(t, s, RecvWQEHeaderSize, [2]int{0, 8}, [2]int{16, 8}, [2]int{28, 4}, [2]int{40, 32})

	if err := ValidateRecv(&RecvWQE{SGEs: make([]SGE, 3)}, 2); !errors.Is(err, ErrTooManySGEs) {
		t.Fatalf("3 SGEs with max 2: %v", err)
	}
	if err := ValidateRecv(&RecvWQE{SGEs: []SGE{{Length: 1 << 31}, {Length: 1 << 31}}}, 2); !errors.Is(err, ErrLengthOverflow) {
		t.Fatalf("4 GiB receive: %v", err)
	}
}

// TestEncodeRecvOne: a receive of one SGE is the bytes EncodeRecv writes
// for it, in a slot that held other bytes before; nothing past the SGE is
// touched.
func TestEncodeRecvOne(t *testing.T) {
	for _, sge := range []SGE{
		{Addr: 0x1000, Length: 4096, LKey: 5},
		{Addr: 0xfedcba9876543210, Length: 0xffffffff, LKey: 0x89abcdef},
		{}, // a zero-length receive
	} {
		want, got := dirtySlot(t)[:128], dirtySlot(t)[:128]
		EncodeRecv(want, &RecvWQE{ID: 0x0123456789abcdef, SGEs: []SGE{sge}})
		EncodeRecvOne(got, 0x0123456789abcdef, sge)
		if !bytes.Equal(got, want) {
			t.Errorf("SGE %+v:\nEncodeRecvOne % x\nEncodeRecv    % x", sge, got, want)
		}
	}
}

func TestRQPost(t *testing.T) {
	r := newFakeRing(t, 6, 2) // 64-byte slots (sge=1), capacity 1
	rq, err := NewRQ(r.buf, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewRQ(r.buf, 2); err == nil {
		t.Fatal("RQ accepted 2 SGEs in 64-byte slots (needs 72)")
	}
	wr := &RecvWQE{ID: 1, SGEs: []SGE{{Addr: 0x2000, Length: 64, LKey: 1}}}
	if err := rq.Post(wr); err != nil {
		t.Fatal(err)
	}
	if err := rq.Post(wr); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("second post on a 1-entry RQ: %v", err)
	}
	if err := rq.Post(&RecvWQE{SGEs: make([]SGE, 2)}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("queue-full is checked first: %v", err)
	}
	r.kernelConsumeAll()
	if err := rq.Post(&RecvWQE{SGEs: make([]SGE, 2)}); !errors.Is(err, ErrTooManySGEs) {
		t.Fatalf("2 SGEs: %v", err)
	}
	wr.ID = 2
	if err := rq.Post(wr); err != nil {
		t.Fatal(err)
	}
	if s := r.slot(1); u64(s, 0) != 2 || u32(s, 28) != 1 || u64(s, 40) != 0x2000 {
		t.Fatalf("second RQ entry: % x", s[:56])
	}
	if rq.MaxSGE() != 1 {
		t.Fatal("MaxSGE")
	}
}

// writeCQE writes an ib_uverbs_wc at the offsets of ib_user_verbs.h.
func writeCQE(s []byte, wrID uint64, status, opcode, vendorErr, byteLen uint32, ex [4]byte, qpn, srcQP, flags uint32, pkey, slid uint16, sl, dlidBits, port uint8) {
	le.PutUint64(s[0:], wrID)
	le.PutUint32(s[8:], status)
	le.PutUint32(s[12:], opcode)
	le.PutUint32(s[16:], vendorErr)
	le.PutUint32(s[20:], byteLen)
	copy(s[24:28], ex[:])
	le.PutUint32(s[28:], qpn)
	le.PutUint32(s[32:], srcQP)
	le.PutUint32(s[36:], flags)
	le.PutUint16(s[40:], pkey)
	le.PutUint16(s[42:], slid)
	s[44], s[45], s[46] = sl, dlidBits, port
}

func TestDecodeCQE(t *testing.T) {
	s := make([]byte, 128)
	writeCQE(s, 0x0102030405060708, 10, 129, 0x77, 4096, [4]byte{0xca, 0xfe, 0xba, 0xbe}, 0x12, 0x34, WCGRH|WCWithImm, 0xffff, 0x0bcd, 5, 6, 1)
	var wc WC
	DecodeCQE(s, &wc)
	want := WC{ID: 0x0102030405060708, Status: 10, Opcode: 129, VendorErr: 0x77, ByteLen: 4096, ImmData: 0xcafebabe,
		QPNum: 0x12, SrcQP: 0x34, Flags: WCGRH | WCWithImm, PKeyIndex: 0xffff, SLID: 0x0bcd, SL: 5, DLIDPathBits: 6, PortNum: 1}
	if wc != want {
		t.Fatalf("decoded %+v\nwant    %+v", wc, want)
	}

	// WITH_INVALIDATE: the same 4 bytes are a host-order rkey.
	writeCQE(s, 1, 0, 128, 0, 10, [4]byte{0x78, 0x56, 0x34, 0x12}, 1, 0, WCGRH|WCWithInvalidate, 0, 0, 0, 0, 1)
	DecodeCQE(s, &wc)
	if wc.InvalidatedRKey != 0x12345678 || wc.ImmData != 0 {
		t.Fatalf("invalidate: rkey %#x imm %#x", wc.InvalidatedRKey, wc.ImmData)
	}
	// Neither flag: ex is not reported.
	writeCQE(s, 1, 0, 0, 0, 10, [4]byte{1, 2, 3, 4}, 1, 0, 0, 0, 0, 0, 0, 0)
	DecodeCQE(s, &wc)
	if wc.InvalidatedRKey != 0 || wc.ImmData != 0 {
		t.Fatalf("no flags: rkey %#x imm %#x", wc.InvalidatedRKey, wc.ImmData)
	}
}

// TestImmRoundTrip checks that the host-order immediate a sender gives
// arrives as the same host-order value at the receiver, through the
// big-endian wire bytes the kernel copies from the WQE into the CQE.
func TestImmRoundTrip(t *testing.T) {
	slot := make([]byte, 256)
	EncodeSend(slot, &SendWQE{Op: OpSendWithImm, Imm: 0x00c0ffee}, 0)
	cqe := make([]byte, 64)
	var ex [4]byte
	copy(ex[:], slot[20:24]) // rxe copies wqe->wr.ex.imm_data into the packet's IMMDT and then into wc.ex
	writeCQE(cqe, 0, 0, 128, 0, 0, ex, 0, 0, WCWithImm, 0, 0, 0, 0, 0)
	var wc WC
	DecodeCQE(cqe, &wc)
	if wc.ImmData != 0x00c0ffee {
		t.Fatalf("immediate %#x arrived as %#x", 0x00c0ffee, wc.ImmData)
	}
}

func TestCQPoll(t *testing.T) {
	r := newFakeRing(t, 7, 8) // 128-byte CQEs, capacity 7
	cq, err := NewCQ(r.buf)
	if err != nil {
		t.Fatal(err)
	}
	wcs := make([]WC, 3)
	if n := cq.Poll(wcs); n != 0 {
		t.Fatalf("Poll on an empty CQ returned %d", n)
	}
	var posted, polled uint64
	for round := 0; round < 30; round++ {
		for i := 0; i < 5; i++ {
			posted++
			id := posted
			r.kernelPostCQE(t, func(s []byte) {
				writeCQE(s, id, 0, 0, 0, uint32(id), [4]byte{}, 7, 0, 0, 0, 0, 0, 0, 1)
			})
		}
		for polled < posted {
			n := cq.Poll(wcs)
			if n == 0 {
				t.Fatalf("Poll returned 0 with %d completions pending", posted-polled)
			}
			for _, wc := range wcs[:n] {
				polled++
				if wc.ID != polled || wc.ByteLen != uint32(polled) || wc.QPNum != 7 {
					t.Fatalf("completion %+v, want wr_id %d", wc, polled)
				}
			}
			if got, want := r.kcons.Load(), uint32(polled)&7; got != want {
				t.Fatalf("consumer_index %d after Poll, want %d", got, want)
			}
		}
	}
	small := newFakeRing(t, 5, 8)
	if _, err := NewCQ(small.buf); err == nil {
		t.Fatal("CQ accepted 32-byte slots (ib_uverbs_wc is 48)")
	}
}

var _ = bytes.Equal
