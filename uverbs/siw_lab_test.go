package uverbs

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/rdma/internal/testutil"
)

// siw (soft-iWARP) on the lab's siw1: what needs no connection. Data moves
// over siw in the rdmacm lab tests, since iWARP QPs connect only through
// the RDMA CM.

func newSiwEnv(t *testing.T) *verbsEnv {
	t.Helper()
	ends := testutil.SiwPair(t)
	return newVerbsEnvOn(t, testutil.LabDevice{Kind: "siw", Name: ends[0].Device, IWARP: true})
}

// The device shows iWARP, and what siw reports of itself.
func TestSiwDevice(t *testing.T) {
	e := newSiwEnv(t)
	info := e.ctx.Info()
	if info.DriverID != DriverSIW || info.Transport() != TransportIWARP {
		t.Errorf("%s: driver %v, transport %v; want siw, iWARP", info.Name, info.DriverID, info.Transport())
	}
	a, err := e.ctx.Query()
	if err != nil {
		t.Fatal(err)
	}
	if a.AtomicCap != AtomicNone || a.MaxSGE != 6 {
		t.Errorf("atomic_cap %v, max_sge %d; siw reports none and 6 (kernel: siw_verbs.c siw_query_device)", a.AtomicCap, a.MaxSGE)
	}
}

// What iWARP or siw lacks is refused at once, naming the device and the
// reason, and matching ErrNotSupported.
func TestSiwRefusals(t *testing.T) {
	e := newSiwEnv(t)
	name := e.ctx.Name()
	refused := func(what string, err error, says string) {
		t.Helper()
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v; want ErrNotSupported naming %s and saying %q", what, err, name, says)
		}
	}
	cq := e.cq(16, nil)
	for _, typ := range []QPType{UD, UC} {
		qp, err := e.pd.CreateQP(QPInit{Type: typ, SendCQ: cq, RecvCQ: cq, Cap: defaultCap})
		if err == nil {
			qp.Close()
		}
		refused(typ.String()+" QP", err, "only RC")
	}
	_, err := e.pd.CreateAH(AHAttr{Port: 1})
	refused("AH", err, "iWARP")
	refused("CQ resize", cq.Resize(64), "not implemented")
	srq, err := e.pd.CreateSRQ(SRQInit{MaxWR: 8, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	closeLater(t, "SRQ", srq.Close)
	refused("SRQ resize", srq.Resize(64), "not implemented")
}

// Limits siw has are refused before the command, with EINVAL and the
// limit named.
func TestSiwQPLimits(t *testing.T) {
	e := newSiwEnv(t)
	cq := e.cq(16, nil)
	for _, c := range []struct {
		what, limit string
		cap         QPCap
	}{
		{"81 bytes inline", "80", QPCap{MaxSendWR: 4, MaxSendSGE: 1, MaxInline: 81, MaxRecvWR: 4, MaxRecvSGE: 1}},
		{"7 send SGEs", "6", QPCap{MaxSendWR: 4, MaxSendSGE: 7, MaxRecvWR: 4, MaxRecvSGE: 1}},
		{"7 receive SGEs", "6", QPCap{MaxSendWR: 4, MaxSendSGE: 1, MaxRecvWR: 4, MaxRecvSGE: 7}},
	} {
		qp, err := e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: c.cap})
		if err == nil {
			qp.Close()
		}
		if !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), c.limit) {
			t.Errorf("%s: %v, want EINVAL naming the limit %s", c.what, err, c.limit)
		}
	}
}

// CQs, QPs and SRQs are created, report their sizes, take receives with
// no connection, and are closed with nothing left behind: no descriptor
// and no mapping.
func TestSiwObjects(t *testing.T) {
	e := newSiwEnv(t)
	_, mr := e.memory(8192)
	ch := e.channel()
	fds, maps := openFDs(t), mappings(t)
	func() {
		cq, err := e.ctx.CreateCQ(CQInit{Depth: 100, Channel: ch})
		if err != nil {
			t.Fatal(err)
		}
		if cq.Depth() < 100 || cq.Depth()&(cq.Depth()-1) != 0 {
			t.Errorf("CQ depth %d: siw rounds 100 up to a power of two", cq.Depth())
		}
		if err := cq.ReqNotify(false); err != nil {
			t.Errorf("ReqNotify: %v", err)
		}
		qp, err := e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 10, MaxRecvWR: 10, MaxSendSGE: 2, MaxRecvSGE: 2, MaxInline: 64}})
		if err != nil {
			t.Fatal(err)
		}
		c := qp.Cap()
		if c.MaxSendWR < 10 || c.MaxRecvWR < 10 || c.MaxSendSGE < 2 || c.MaxRecvSGE < 2 {
			t.Errorf("QP capabilities %+v, want at least what was asked", c)
		}
		if err := qp.ToInit(InitAttr{Port: 1, Access: AccessRemoteWrite | AccessLocalWrite}); err != nil {
			t.Fatal(err)
		}
		wrs := []RecvWR{{ID: 1, SGEs: []SGE{mr.SGE(0, 64)}}, {ID: 2, SGEs: []SGE{mr.SGE(64, 64), mr.SGE(128, 64)}}}
		if err := qp.PostRecv(wrs); err != nil {
			t.Fatalf("receives in INIT: %v", err)
		}
		if err := mr.Close(); !errors.Is(err, ErrBusy) {
			t.Errorf("MR.Close with receives posted that name it: %v, want ErrBusy", err)
		}
		// A send before the CM made the QP RTS is refused.
		err = qp.PostSend([]SendWR{{ID: 3, Op: OpSend, SGEs: []SGE{mr.SGE(0, 8)}}})
		if !errors.Is(err, ErrQPState) {
			t.Errorf("send in INIT: %v, want ErrQPState", err)
		}
		srq, err := e.pd.CreateSRQ(SRQInit{MaxWR: 8, MaxSGE: 2})
		if err != nil {
			t.Fatal(err)
		}
		if srq.MaxWR() < 8 || srq.MaxSGE() < 2 {
			t.Errorf("SRQ max_wr %d, max_sge %d; want at least 8 and 2", srq.MaxWR(), srq.MaxSGE())
		}
		if err := srq.PostRecv([]RecvWR{{ID: 4, SGEs: []SGE{mr.SGE(0, 64)}}}); err != nil {
			t.Errorf("SRQ receive: %v", err)
		}
		full := make([]RecvWR, srq.MaxWR())
		for i := range full {
			full[i] = RecvWR{ID: uint64(10 + i)}
		}
		if err := srq.PostRecv(full); !errors.Is(err, ErrQueueFull) {
			t.Errorf("SRQ post beyond its size: %v, want ErrQueueFull", err)
		}
		sq, err := e.pd.CreateQP(QPInit{Type: RC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 4, MaxSendSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		// The QP (drained: its receives flushed) then the SRQ, whose
		// receive stays posted until it is destroyed.
		if err := qp.Close(); err != nil {
			t.Errorf("QP.Close: %v", err)
		}
		if err := sq.Close(); err != nil {
			t.Errorf("QP with SRQ Close: %v", err)
		}
		if err := srq.Close(); err != nil {
			t.Errorf("SRQ.Close: %v", err)
		}
		if err := cq.Close(); err != nil {
			t.Errorf("CQ.Close: %v", err)
		}
	}()
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open, %d before the CQ, QPs and SRQ", got, fds)
	}
	if got := mappings(t); got != maps {
		t.Errorf("%d mappings, %d before the CQ, QPs and SRQ", got, maps)
	}
	if err := mr.Close(); err != nil {
		t.Errorf("MR.Close after its QP: %v", err)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func mappings(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
