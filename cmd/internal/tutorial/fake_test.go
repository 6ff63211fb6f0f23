package tutorial

import (
	"context"
	"fmt"
	"sync"

	"github.com/goverbs/rdma/uverbs"
)

// An in-memory RC connection for the protocol tests: two fakeEPs joined by a
// fabric that carries SEND, RDMA WRITE, READ and WRITE_WITH_IMM between
// registered regions with the checks an RC QP makes (keys, access, bounds,
// receive length). A SEND that finds no receive waits for one, as with RNR
// retry 7. Disconnect flushes what is posted on both sides.
type fabric struct {
	mu       sync.Mutex
	nextAddr uint64
	nextKey  uint32
	regions  map[uint32]*fakeRegion // by key: the fake's lkey equals its rkey
}

type fakeRegion struct {
	owner  *fakeEP
	r      *Region
	access uverbs.Access
}

type fakeEP struct {
	f        *fabric
	qpn      uint32
	peer     *fakeEP
	recvs    []uverbs.RecvWR
	waiting  []func() bool // SENDs and WRITE_WITH_IMMs waiting for a receive
	cq       chan uverbs.WC
	done     chan struct{}
	peerData []byte
	closed   bool
	// hold keeps the completions of these successful SENDs back, as when
	// the peer's ACK has not come yet; the disconnect flushes them.
	hold map[uint64]bool
	held []uint64
}

func newFakePair() (client, server *fakeEP) {
	f := &fabric{nextAddr: 0x10000, nextKey: 0x100, regions: map[uint32]*fakeRegion{}}
	client = &fakeEP{f: f, qpn: 0x11, cq: make(chan uverbs.WC, 256), done: make(chan struct{})}
	server = &fakeEP{f: f, qpn: 0x12, cq: make(chan uverbs.WC, 256), done: make(chan struct{})}
	client.peer, server.peer = server, client
	return client, server
}

func (e *fakeEP) Register(name string, size int, access uverbs.Access) (*Region, error) {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	r := &Region{Name: name, Buf: make([]byte, size), Addr: e.f.nextAddr, LKey: e.f.nextKey, RKey: e.f.nextKey}
	e.f.nextAddr += uint64(size+4095) &^ 4095
	e.f.nextKey++
	e.f.regions[r.LKey] = &fakeRegion{owner: e, r: r, access: access}
	return r, nil
}

// mem returns the bytes an SGE or a remote address names, or nil.
func (e *fakeEP) mem(owner *fakeEP, key uint32, addr uint64, n int, need uverbs.Access) []byte {
	fr := e.f.regions[key]
	if fr == nil || fr.owner != owner || fr.access&need != need {
		return nil
	}
	if addr < fr.r.Addr || addr+uint64(n) > fr.r.Addr+uint64(len(fr.r.Buf)) {
		return nil
	}
	off := int(addr - fr.r.Addr)
	return fr.r.Buf[off : off+n]
}

func (e *fakeEP) gather(sges []uverbs.SGE) ([]byte, bool) {
	var b []byte
	for _, s := range sges {
		m := e.mem(e, s.LKey, s.Addr, int(s.Length), 0)
		if m == nil {
			return nil, false
		}
		b = append(b, m...)
	}
	return b, true
}

func (e *fakeEP) complete(wc uverbs.WC) {
	wc.QPN = e.qpn
	e.cq <- wc
}

// flushed completes work posted to a closed endpoint as flushed.
func (e *fakeEP) flushed(id uint64) bool {
	if e.closed {
		e.complete(uverbs.WC{ID: id, Status: uverbs.WCFlushError})
	}
	return e.closed
}

func (e *fakeEP) PostSend(wr uverbs.SendWR) error {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	if e.flushed(wr.ID) {
		return nil
	}
	ok := func(op uverbs.WCOpcode, n int) {
		if e.hold[wr.ID] && op == uverbs.WCOpSend {
			e.held = append(e.held, wr.ID)
			return
		}
		if wr.Flags&uverbs.SendSignaled != 0 {
			e.complete(uverbs.WC{ID: wr.ID, Opcode: op, ByteLen: uint32(n)})
		}
	}
	fail := func(st uverbs.WCStatus) { e.complete(uverbs.WC{ID: wr.ID, Status: st}) }
	data, good := e.gather(wr.SGEs)
	if !good {
		fail(uverbs.WCLocalProtectionError)
		return nil
	}
	p := e.peer
	switch wr.Op {
	case uverbs.OpSend:
		e.deliver(func() bool {
			if !p.receive(data, uverbs.WCOpRecv, 0, false) {
				fail(uverbs.WCRemoteInvalidRequestError)
				return true
			}
			ok(uverbs.WCOpSend, len(data))
			return true
		})
	case uverbs.OpWrite, uverbs.OpWriteImm:
		m := e.mem(p, wr.RKey, wr.RemoteAddr, len(data), uverbs.AccessRemoteWrite)
		if m == nil {
			fail(uverbs.WCRemoteAccessError)
			return nil
		}
		if wr.Op == uverbs.OpWrite {
			copy(m, data)
			ok(uverbs.WCOpRDMAWrite, len(data))
			return nil
		}
		e.deliver(func() bool {
			copy(m, data)
			p.receive(data, uverbs.WCOpRecvRDMAWithImm, wr.Imm, true)
			ok(uverbs.WCOpRDMAWrite, len(data))
			return true
		})
	case uverbs.OpRead:
		m := e.mem(p, wr.RKey, wr.RemoteAddr, len(data), uverbs.AccessRemoteRead)
		if m == nil {
			fail(uverbs.WCRemoteAccessError)
			return nil
		}
		// Scatter into the local SGEs.
		off := 0
		for _, s := range wr.SGEs {
			dst := e.mem(e, s.LKey, s.Addr, int(s.Length), uverbs.AccessLocalWrite)
			if dst == nil {
				fail(uverbs.WCLocalProtectionError)
				return nil
			}
			off += copy(dst, m[off:])
		}
		ok(uverbs.WCOpRDMARead, len(data))
	default:
		return fmt.Errorf("fake: opcode %v not supported", wr.Op)
	}
	return nil
}

// deliver runs f now if the peer has a receive posted, else when it posts
// one (RNR retry 7 waits for ever).
func (e *fakeEP) deliver(f func() bool) {
	if len(e.peer.recvs) > 0 {
		f()
		return
	}
	e.peer.waiting = append(e.peer.waiting, f)
}

// receive consumes the first posted receive for an incoming message (data;
// for WRITE_WITH_IMM, already written, only the completion). It reports false when the
// message does not fit.
func (e *fakeEP) receive(data []byte, op uverbs.WCOpcode, imm uint32, withImm bool) bool {
	wr := e.recvs[0]
	e.recvs = e.recvs[1:]
	if withImm {
		e.complete(uverbs.WC{ID: wr.ID, Opcode: op, ByteLen: uint32(len(data)), Imm: imm, Flags: uverbs.WCWithImm})
		return true
	}
	rest := data
	for _, s := range wr.SGEs {
		dst := e.mem(e, s.LKey, s.Addr, int(s.Length), uverbs.AccessLocalWrite)
		if dst == nil {
			e.complete(uverbs.WC{ID: wr.ID, Status: uverbs.WCLocalProtectionError})
			return false
		}
		rest = rest[copy(dst, rest):]
	}
	if len(rest) > 0 {
		e.complete(uverbs.WC{ID: wr.ID, Status: uverbs.WCLocalLengthError})
		return false
	}
	e.complete(uverbs.WC{ID: wr.ID, Opcode: op, ByteLen: uint32(len(data))})
	return true
}

func (e *fakeEP) PostRecv(wr uverbs.RecvWR) error {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	if e.flushed(wr.ID) {
		return nil
	}
	e.recvs = append(e.recvs, wr)
	if len(e.waiting) > 0 {
		f := e.waiting[0]
		e.waiting = e.waiting[1:]
		f()
	}
	return nil
}

func (e *fakeEP) Next(ctx context.Context) (uverbs.WC, error) {
	select {
	case wc := <-e.cq:
		return wc, nil
	default:
	}
	select {
	case wc := <-e.cq:
		return wc, nil
	case <-e.done:
		select {
		case wc := <-e.cq:
			return wc, nil
		default:
			return uverbs.WC{}, errPeerGone
		}
	case <-ctx.Done():
		return uverbs.WC{}, ctx.Err()
	}
}

func (e *fakeEP) PeerPrivateData() []byte { return e.peerData }
func (e *fakeEP) Done() <-chan struct{}   { return e.done }

// disconnect ends the connection: both QPs go to the error state and flush
// their receives, and both ends see Done.
func (e *fakeEP) disconnect() {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	for _, x := range []*fakeEP{e, e.peer} {
		if x.closed {
			continue
		}
		x.closed = true
		for _, id := range x.held {
			x.complete(uverbs.WC{ID: id, Status: uverbs.WCFlushError})
		}
		for _, r := range x.recvs {
			x.complete(uverbs.WC{ID: r.ID, Status: uverbs.WCFlushError})
		}
		x.recvs, x.held = nil, nil
		close(x.done)
	}
}

// pad returns b zero padded to n bytes, as the CM delivers private data.
func pad(b []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}
