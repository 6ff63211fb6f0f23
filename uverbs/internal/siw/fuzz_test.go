package siw

import (
	"bytes"
	"testing"
)

// FuzzDecodeCQE decodes arbitrary CQE bytes: it never panics, reads each
// field at its siw-abi.h offset and maps every value to a verbs value.
func FuzzDecodeCQE(f *testing.F) {
	seed := make([]byte, litCQE)
	seed[8], seed[9] = 1, 8 // VALID, SIW_OP_RECEIVE
	f.Add(seed)
	f.Add(bytes.Repeat([]byte{0xff}, litCQE))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		b := make([]byte, litCQE)
		copy(b, data)
		var wc WC
		DecodeCQE(b, &wc)
		if wc.ID != le.Uint64(b) || wc.ByteLen != le.Uint32(b[12:]) || wc.QPN != le.Uint32(b[24:]) {
			t.Fatalf("decoded %+v from % x", wc, b)
		}
		status := le.Uint16(b[10:])
		if (status == 0) != (wc.Status == WCSuccess) || (status == 0) != (wc.VendorErr == 0) {
			t.Fatalf("siw status %d decoded as status %d vendor %d", status, wc.Status, wc.VendorErr)
		}
		if status >= 10 && wc.Status != WCGeneralError {
			t.Fatalf("unknown siw status %d decoded as %d", status, wc.Status)
		}
		switch op := b[9]; {
		case op == 8 && wc.Opcode != WCOpRecv, op > 10 && wc.Opcode != WCOpUnknown, op == 9 && wc.Opcode != WCOpUnknown:
			t.Fatalf("siw opcode %d decoded as %d", op, wc.Opcode)
		}
		if inval := b[8]&0x20 != 0; inval != (wc.Flags == WCWithInvalidate) || (inval && wc.InvalidatedRKey != le.Uint32(b[16:])) || (!inval && wc.InvalidatedRKey != 0) {
			t.Fatalf("REM_INVAL %v decoded as flags %#x rkey %#x", inval, wc.Flags, wc.InvalidatedRKey)
		}
		if wc.Imm != 0 || wc.SrcQP != 0 || wc.Port != 0 {
			t.Fatalf("fields siw does not carry are set: %+v", wc)
		}
	})
}

// FuzzPoll polls a CQ whose elements hold arbitrary bytes: Poll takes the
// run of VALID elements from its counter on, clears each and never reads
// past the ring.
func FuzzPoll(f *testing.F) {
	f.Add(bytes.Repeat([]byte{1}, 4*litCQE+8), 3)
	f.Add(make([]byte, 10), 1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		q, r := newCQ(t, 4)
		copy(r.buf[:4*litCQE], data)
		valid := 0
		for valid < 4 && r.buf[valid*litCQE+8]&1 != 0 {
			valid++
		}
		wcs := make([]WC, 5)
		n := q.Poll(wcs[:min(max&7, 5)])
		if want := min(valid, max&7, 5); n != want {
			t.Fatalf("Poll took %d, want %d", n, want)
		}
		for i := range n {
			if r.word(uint32(i)).Load() != 0 {
				t.Fatalf("element %d not cleared", i)
			}
		}
	})
}
