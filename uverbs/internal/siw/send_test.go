package siw

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

// The literal offsets the fake kernel uses are those of the generated
// types (which TestLayout in internal/abi checks against the C compiler).
func TestLiteralOffsetsMatchGenerated(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof siw_sqe", unsafe.Sizeof(abi.SiwSQE{}), litSQE},
		{"sizeof siw_rqe", unsafe.Sizeof(abi.SiwRQE{}), litRQE},
		{"sizeof siw_cqe", unsafe.Sizeof(abi.SiwCQE{}), litCQE},
		{"sizeof siw_cq_ctrl", unsafe.Sizeof(abi.SiwCQCtrl{}), 8},
		{"siw_sqe.flags", unsafe.Offsetof(abi.SiwSQE{}.Flags), 8},
		{"siw_sqe.num_sge", unsafe.Offsetof(abi.SiwSQE{}.NumSGE), 10},
		{"siw_sqe.opcode", unsafe.Offsetof(abi.SiwSQE{}.Opcode), 11},
		{"siw_sqe.rkey", unsafe.Offsetof(abi.SiwSQE{}.RKey), 12},
		{"siw_sqe.raddr", unsafe.Offsetof(abi.SiwSQE{}.Raddr), 16},
		{"siw_sqe.sge", abi.SiwSQEOffSGE, 24},
		{"siw_rqe.flags", unsafe.Offsetof(abi.SiwRQE{}.Flags), 8},
		{"siw_rqe.num_sge", unsafe.Offsetof(abi.SiwRQE{}.NumSGE), 10},
		{"siw_rqe.sge", unsafe.Offsetof(abi.SiwRQE{}.SGE), 16},
		{"siw_cqe.flags", unsafe.Offsetof(abi.SiwCQE{}.Flags), 8},
		{"siw_cqe.opcode", unsafe.Offsetof(abi.SiwCQE{}.Opcode), 9},
		{"siw_cqe.status", unsafe.Offsetof(abi.SiwCQE{}.Status), 10},
		{"siw_cqe.bytes", unsafe.Offsetof(abi.SiwCQE{}.Bytes), 12},
		{"siw_cqe.inval_stag", abi.SiwCQEOffInvalSTag, 16},
		{"siw_cqe.qp_id", abi.SiwCQEOffQPID, 24},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, the tests assume %d", c.name, c.got, c.want)
		}
	}
}

// sqeView reads an element through the generated struct.
func sqeView(e []byte) *abi.SiwSQE { return (*abi.SiwSQE)(unsafe.Pointer(&e[0])) }

func TestEncodeSQE(t *testing.T) {
	src := mapAnon(t, 4096)
	for i := range src[:256] {
		src[i] = byte(i)
	}
	sges := []SGE{{Addr: addrOf(src), Length: 30, LKey: 0x11}, {Addr: addrOf(src[100:]), Length: 20, LKey: 0x22}}
	cases := []struct {
		name    string
		wr      SendWR
		sigAll  bool
		opcode  uint8
		flags   uint16
		numSGE  uint8
		rkey    uint32
		raddr   uint64
		inline  []byte
		sgeList []SGE
	}{
		{name: "write", wr: SendWR{ID: 1, Op: OpWrite, Flags: SendSignaled, SGEs: sges, RemoteAddr: 0xabc000, RKey: 0x77},
			opcode: abi.SIW_OP_WRITE, flags: abi.SIW_WQE_VALID | abi.SIW_WQE_SIGNALLED, numSGE: 2, rkey: 0x77, raddr: 0xabc000, sgeList: sges},
		{name: "send unsignaled, solicited, fenced", wr: SendWR{ID: 2, Op: OpSend, Flags: SendSolicited | SendFence, SGEs: sges[:1]},
			opcode: abi.SIW_OP_SEND, flags: abi.SIW_WQE_VALID | abi.SIW_WQE_SOLICITED | abi.SIW_WQE_READ_FENCE, numSGE: 1, sgeList: sges[:1]},
		{name: "send with sq_sig_all", wr: SendWR{ID: 3, Op: OpSend}, sigAll: true,
			opcode: abi.SIW_OP_SEND, flags: abi.SIW_WQE_VALID | abi.SIW_WQE_SIGNALLED},
		{name: "read", wr: SendWR{ID: 4, Op: OpRead, Flags: SendSignaled, SGEs: sges[1:], RemoteAddr: 0x5000, RKey: 9},
			opcode: abi.SIW_OP_READ, flags: abi.SIW_WQE_VALID | abi.SIW_WQE_SIGNALLED, numSGE: 1, rkey: 9, raddr: 0x5000, sgeList: sges[1:]},
		{name: "send with invalidate", wr: SendWR{ID: 5, Op: OpSendInv, Imm: 0x5678, InvalidateRKey: 0x1234, RKey: 0x9999, SGEs: sges},
			opcode: abi.SIW_OP_SEND_REMOTE_INV, flags: abi.SIW_WQE_VALID, numSGE: 2, rkey: 0x1234, sgeList: sges},
		{name: "inline send", wr: SendWR{ID: 6, Op: OpSend, Flags: SendInline | SendSignaled, SGEs: sges},
			opcode: abi.SIW_OP_SEND, flags: abi.SIW_WQE_VALID | abi.SIW_WQE_INLINE | abi.SIW_WQE_SIGNALLED, numSGE: 1,
			inline: append(append([]byte(nil), src[:30]...), src[100:120]...)},
		{name: "inline write of 80 bytes", wr: SendWR{ID: 7, Op: OpWrite, Flags: SendInline, RemoteAddr: 8, RKey: 1,
			SGEs: []SGE{{Addr: addrOf(src), Length: 80}}},
			opcode: abi.SIW_OP_WRITE, flags: abi.SIW_WQE_VALID | abi.SIW_WQE_INLINE, numSGE: 1, rkey: 1, raddr: 8, inline: src[:80]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := rcLimits
			lim.SigAll = c.sigAll
			q, r := newSQ(t, 4, lim)
			// Stale bytes, as a reused element holds.
			for i := range r.buf[:litSQE] {
				r.buf[i] = 0xee
			}
			r.word(0).Store(0)
			if err := q.Post(&c.wr); err != nil {
				t.Fatal(err)
			}
			e := r.elem(0)
			v := sqeView(e)
			if v.ID != c.wr.ID || v.Opcode != c.opcode || v.Flags != c.flags || v.NumSGE != c.numSGE || v.RKey != c.rkey || v.Raddr != c.raddr {
				t.Errorf("SQE id %d opcode %d flags %#x num_sge %d rkey %#x raddr %#x; want %d %d %#x %d %#x %#x",
					v.ID, v.Opcode, v.Flags, v.NumSGE, v.RKey, v.Raddr, c.wr.ID, c.opcode, c.flags, c.numSGE, c.rkey, c.raddr)
			}
			// The same fields at the literal offsets.
			if le.Uint64(e[0:]) != c.wr.ID || e[11] != c.opcode || le.Uint16(e[8:]) != c.flags || e[10] != c.numSGE || le.Uint32(e[12:]) != c.rkey || le.Uint64(e[16:]) != c.raddr {
				t.Errorf("SQE bytes % x", e[:24])
			}
			if c.inline != nil {
				if got := le.Uint32(e[24+8:]); got != uint32(len(c.inline)) {
					t.Errorf("sge[0].length %d, want %d inline bytes", got, len(c.inline))
				}
				if got := e[40 : 40+len(c.inline)]; !bytes.Equal(got, c.inline) {
					t.Errorf("inline bytes % x, want % x", got, c.inline)
				}
				return
			}
			for i, g := range c.sgeList {
				s := v.SGE[i]
				if s.Laddr != g.Addr || s.Length != g.Length || s.LKey != g.LKey {
					t.Errorf("sge[%d] = %+v, want %+v", i, s, g)
				}
			}
		})
	}
}

func TestSendRefusals(t *testing.T) {
	src := mapAnon(t, 4096)
	one := []SGE{{Addr: addrOf(src), Length: 8, LKey: 1}}
	big := []SGE{{Addr: addrOf(src), Length: 0xffffffff}, {Addr: addrOf(src), Length: 2}}
	var ah AH
	cases := []struct {
		name  string
		wr    SendWR
		lim   SendLimits
		want  error
		errno syscall.Errno
		text  string
	}{
		{"send with imm", SendWR{Op: OpSendImm, SGEs: one}, rcLimits, ErrNoImmediate, syscall.EOPNOTSUPP, "no immediate data"},
		{"write with imm", SendWR{Op: OpWriteImm, SGEs: one}, rcLimits, ErrNoImmediate, syscall.EOPNOTSUPP, "RDMA_WRITE_WITH_IMM"},
		{"cmp and swap", SendWR{Op: OpAtomicCmpSwap, SGEs: one}, rcLimits, ErrNoAtomics, syscall.EOPNOTSUPP, "atomic"},
		{"fetch and add", SendWR{Op: OpAtomicFetchAdd, SGEs: one}, rcLimits, ErrNoAtomics, syscall.EOPNOTSUPP, "atomic"},
		{"local inv", SendWR{Op: OpLocalInv}, rcLimits, ErrOpcodeNotSupported, syscall.EOPNOTSUPP, "opcode 7"},
		{"bind mw", SendWR{Op: OpBindMW}, rcLimits, ErrOpcodeNotSupported, syscall.EOPNOTSUPP, "opcode 8"},
		{"opcode 200", SendWR{Op: 200}, rcLimits, ErrOpcodeNotSupported, syscall.EOPNOTSUPP, "opcode 200"},
		{"ip csum flag", SendWR{Op: OpSend, Flags: 16}, rcLimits, ErrBadSendFlags, syscall.EINVAL, "0x10"},
		{"too many sges", SendWR{Op: OpSend, SGEs: []SGE{{}, {}, {}}}, SendLimits{MaxSGE: 2, Device: "siw0"}, ErrTooManySGEs, syscall.EINVAL, "3 SGEs"},
		{"length overflow", SendWR{Op: OpWrite, SGEs: big}, rcLimits, ErrLengthOverflow, syscall.EINVAL, "4294967297"},
		{"read without sge", SendWR{Op: OpRead}, rcLimits, ErrReadSGE, syscall.EINVAL, "0 SGEs"},
		{"read with two sges", SendWR{Op: OpRead, SGEs: []SGE{{}, {}}}, rcLimits, ErrReadSGE, syscall.EINVAL, "2 SGEs"},
		{"fenced read", SendWR{Op: OpRead, Flags: SendFence, SGEs: one}, rcLimits, ErrReadFence, syscall.EINVAL, "fence"},
		{"inline read", SendWR{Op: OpRead, Flags: SendInline, SGEs: one}, rcLimits, ErrInlineNotAllowed, syscall.EINVAL, "opcode 4"},
		{"inline send with inv", SendWR{Op: OpSendInv, Flags: SendInline, SGEs: one}, rcLimits, ErrInlineNotAllowed, syscall.EINVAL, "opcode 9"},
		{"inline too long", SendWR{Op: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: addrOf(src), Length: 81}}}, rcLimits, ErrInlineTooLong, syscall.EINVAL, "81 bytes"},
		{"inline over the QP's max", SendWR{Op: OpSend, Flags: SendInline, SGEs: one}, SendLimits{MaxSGE: 1, MaxInline: 4, Device: "siw0"}, ErrInlineTooLong, syscall.EINVAL, "max_inline_data 4"},
		{"AH on RC", SendWR{Op: OpSend, AH: &ah}, rcLimits, ErrUDAddress, syscall.EINVAL, "UD address"},
		{"remote QPN on RC", SendWR{Op: OpSend, RemoteQPN: 5}, rcLimits, ErrUDAddress, syscall.EINVAL, "UD address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, r := newSQ(t, 2, c.lim)
			before := append([]byte(nil), r.buf[:2*litSQE]...)
			err := q.Post(&c.wr)
			if !errors.Is(err, c.want) || !errors.Is(err, ErrInvalidWR) || !errors.Is(err, c.errno) {
				t.Fatalf("Post = %v; want %v, ErrInvalidWR and %v", err, c.want, c.errno)
			}
			if !strings.Contains(err.Error(), "siw0") || !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q does not name the device siw0 and %q", err, c.text)
			}
			if errors.Is(err, ErrQueueFull) {
				t.Error("a refusal matches ErrQueueFull")
			}
			if !bytes.Equal(r.buf[:2*litSQE], before) || q.Next() != 0 {
				t.Error("a refused request was written")
			}
		})
	}
}

func TestCheckQPType(t *testing.T) {
	if err := CheckQPType(QPTypeRC, "siw0"); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []QPType{QPTypeUC, QPTypeUD, 9} {
		err := CheckQPType(typ, "siw1")
		if !errors.Is(err, ErrQPType) || !errors.Is(err, syscall.EOPNOTSUPP) || !strings.Contains(err.Error(), "siw1") {
			t.Errorf("CheckQPType(%d) = %v", typ, err)
		}
	}
}

// The kernel's side of the handshake: a full ring is found by the VALID
// flag of the next element, the kernel frees elements by clearing it, and
// the counters wrap around the ring many times.
func TestSQHandshakeAndWrap(t *testing.T) {
	q, r := newSQ(t, 4, rcLimits)
	id := uint64(0)
	for lap := 0; lap < 5; lap++ {
		for i := 0; i < 4; i++ {
			id++
			if err := q.Post(&SendWR{ID: id, Op: OpSend, Flags: SendSignaled}); err != nil {
				t.Fatalf("lap %d post %d: %v", lap, i, err)
			}
		}
		if q.Pending() != 4 || !q.Full() || q.Room(1) {
			t.Fatalf("lap %d: Pending %d Full %v Room(1) %v on a full ring", lap, q.Pending(), q.Full(), q.Room(1))
		}
		err := q.Post(&SendWR{ID: 99, Op: OpSend})
		if !errors.Is(err, ErrQueueFull) || !errors.Is(err, syscall.ENOMEM) || errors.Is(err, ErrInvalidWR) {
			t.Fatalf("post on a full ring: %v", err)
		}
		// The kernel takes two: there is room for two, not three.
		for k := 0; k < 2; k++ {
			e := r.take()
			if want := id - 3 + uint64(k); e == nil || le.Uint64(e) != want {
				t.Fatalf("lap %d: kernel took %v, want id %d", lap, e, want)
			}
		}
		if !q.Room(2) || q.Room(3) || q.Pending() != 2 {
			t.Fatalf("lap %d: Room(2) %v Room(3) %v Pending %d after the kernel took two", lap, q.Room(2), q.Room(3), q.Pending())
		}
		for r.take() != nil {
		}
		if q.Pending() != 0 || !q.Room(4) || q.Room(5) {
			t.Fatalf("lap %d: ring not free after the kernel took all", lap)
		}
	}
}

func TestDoorbellNeeded(t *testing.T) {
	q, r := newSQ(t, 4, rcLimits)
	post := func(n int) uint32 {
		start := q.Next()
		for i := 0; i < n; i++ {
			if err := q.Post(&SendWR{Op: OpSend}); err != nil {
				t.Fatal(err)
			}
		}
		return start
	}
	if q.DoorbellNeeded(q.Next()) {
		t.Error("doorbell for nothing posted")
	}
	if s := post(1); !q.DoorbellNeeded(s) {
		t.Error("first post on an idle ring: no doorbell")
	}
	// The first is still VALID: the kernel has queued work before the new
	// one and takes it in order.
	if s := post(1); q.DoorbellNeeded(s) {
		t.Error("doorbell while the previous request is still queued")
	}
	r.take()
	r.take()
	if s := post(2); !q.DoorbellNeeded(s) {
		t.Error("no doorbell after the kernel took the previous request")
	}
	r.take()
	r.take()
	// A batch that rewrote the whole ring always rings.
	if s := post(4); !q.DoorbellNeeded(s) {
		t.Error("no doorbell after a batch of the whole ring")
	}
}

func TestSQPendingUsesLKey(t *testing.T) {
	src := mapAnon(t, 4096)
	q, r := newSQ(t, 4, rcLimits)
	for _, wr := range []SendWR{
		{Op: OpSend, SGEs: []SGE{{Addr: addrOf(src), Length: 1, LKey: 5}, {Addr: addrOf(src), Length: 1, LKey: 6}}},
		{Op: OpSend, Flags: SendInline, SGEs: []SGE{{Addr: addrOf(src), Length: 4, LKey: 7}}},
		{Op: OpRead, SGEs: []SGE{{Addr: addrOf(src), Length: 4, LKey: 8}}},
	} {
		if err := q.Post(&wr); err != nil {
			t.Fatal(err)
		}
	}
	for lkey, want := range map[uint32]bool{5: true, 6: true, 7: false, 8: true, 9: false} {
		if got := q.PendingUsesLKey(lkey); got != want {
			t.Errorf("PendingUsesLKey(%d) = %v, want %v", lkey, got, want)
		}
	}
	r.take() // the kernel took the first: its keys are no longer in the ring
	if q.PendingUsesLKey(5) || !q.PendingUsesLKey(8) {
		t.Error("PendingUsesLKey after the kernel took the first request")
	}
}

func TestNewSQRefusesBadGeometry(t *testing.T) {
	buf := mapAnon(t, 4*litSQE)
	for _, c := range []struct {
		buf []byte
		num uint32
		lim SendLimits
	}{
		{buf, 3, rcLimits},
		{buf, 0, rcLimits},
		{buf, 64, rcLimits},
		{buf[:4*litSQE-1], 4, rcLimits},
		{buf[1:], 2, rcLimits},
		{buf, 4, SendLimits{MaxSGE: 7}},
		{buf, 4, SendLimits{MaxSGE: 1, MaxInline: 81}},
	} {
		if _, err := NewSQ(c.buf, c.num, c.lim); err == nil {
			t.Errorf("NewSQ(%d bytes, %d, %+v) accepted", len(c.buf), c.num, c.lim)
		}
	}
}
