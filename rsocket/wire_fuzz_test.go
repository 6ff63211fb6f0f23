package rsocket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/goverbs/rdma/uverbs"
)

// What the peer controls: its rs_conn_data (docs/rsocket.md §1) and the
// immediates of its messages (§2.1). Neither may make this side panic or
// lose track of its receive buffer.

// fuzzConnBytes lays out an rs_conn_data as a peer would send it, padded
// to the size of a connection request's private data.
func fuzzConnBytes(version, flags uint8, credits uint16, iomap uint8, slots, half uint32) []byte {
	b := make([]byte, 56)
	b[0], b[1], b[7] = version, flags, iomap
	binary.BigEndian.PutUint16(b[2:], credits)
	be := binary.BigEndian
	be.PutUint64(b[8:], 0x7f0011223340)
	be.PutUint32(b[16:], 0x1234)
	be.PutUint32(b[20:], slots)
	be.PutUint64(b[24:], 0x7f0055667780)
	be.PutUint32(b[32:], 0x5678)
	be.PutUint32(b[36:], half)
	return b
}

func FuzzConnData(f *testing.F) {
	f.Add(fuzzConnBytes(1, connFlagIOMap, 384, 0, 2, 64<<10))           // ours
	f.Add(fuzzConnBytes(1, connFlagNet|connFlagIOMap, 16, 0x81, 2, 32)) // big-endian peer with iomap
	f.Add(fuzzConnBytes(1, 0, 0xffff, 200, 1<<16, 0))                   // iomap byte without its flag
	f.Add(fuzzConnBytes(1, 0xff, 1, 128, 1, 1))
	f.Add(fuzzConnBytes(2, connFlagIOMap, 384, 0, 2, 64<<10)) // another version
	f.Add(fuzzConnBytes(1, connFlagIOMap, 0, 0, 2, 64<<10))   // no credits
	f.Add(fuzzConnBytes(1, connFlagIOMap, 384, 0, 0, 64<<10)) // no target slots
	f.Add(fuzzConnBytes(1, connFlagIOMap, 384, 0, 1<<16+1, 0))
	f.Add(fuzzConnBytes(1, connFlagIOMap, 384, 0, 2, 64<<10)[:connDataLen-1]) // short
	f.Add([]byte{})
	f.Add(make([]byte, 196)) // an accept's private data, all zero
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseConnData(b)
		// The checks of docs/rsocket.md §1, from the raw bytes.
		valid := len(b) >= connDataLen && b[0] == protocolVersion &&
			binary.BigEndian.Uint16(b[2:]) != 0 &&
			binary.BigEndian.Uint32(b[20:]) >= 1 && binary.BigEndian.Uint32(b[20:]) <= 1<<16
		if !valid {
			if err == nil {
				t.Fatalf("accepted %x: %+v", b, d)
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("refused %x with %v, which is not ErrProtocol", b, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("refused valid %x: %v", b, err)
		}
		if d.Version != protocolVersion || d.Credits == 0 || d.TargetSGL.Length == 0 || d.TargetSGL.Length > 1<<16 {
			t.Fatalf("accepted %+v", d)
		}
		if d.IOMapSlots < 0 || d.IOMapSlots > 127<<8 || d.Flags&connFlagIOMap == 0 && d.IOMapSlots != 0 {
			t.Fatalf("iomap byte %#x, flags %#x: %d slots", b[7], b[1], d.IOMapSlots)
		}
		wantOrder := binary.ByteOrder(binary.LittleEndian)
		if b[1]&connFlagNet != 0 {
			wantOrder = binary.BigEndian
		}
		if d.peerOrder() != wantOrder {
			t.Fatalf("flags %#x: peer order %v", b[1], d.peerOrder())
		}

		// marshal writes every field back where it came from; it leaves
		// out the reserved bytes, and the iomap byte without its flag.
		out := make([]byte, connDataLen)
		d.marshal(out)
		want := bytes.Clone(b[:connDataLen])
		clear(want[4:7])
		if d.Flags&connFlagIOMap == 0 {
			want[7] = 0
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("parsed %x\n  as %+v\nmarshalled %x\n      want %x", b[:connDataLen], d, out, want)
		}
		d2, err := parseConnData(out)
		if err != nil || d2 != d {
			t.Fatalf("the marshalled form parses as %+v, %v; want %+v", d2, err, d)
		}
	})
}

// FuzzImmediates feeds a receive side, built as newConn and start build it
// but with no device, a program of completions (the peer's messages, honest
// and not) and reads. Each step is checked against docs/rsocket.md §2: the
// outcome of each immediate, the data read back through the ring, and the
// receive buffer's bookkeeping.
func FuzzImmediates(f *testing.F) {
	for _, p := range fuzzImmSeeds() {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) < 2 {
			return
		}
		h := newFuzzReceiver(t, 4096+64*uint32(prog[0]), 16+int(prog[1]%32))
		for p := prog[2:]; len(p) >= 5; p = p[5:] {
			h.step(p[0], binary.LittleEndian.Uint32(p[1:]))
		}
		// Whatever came before, reading everything queued empties the ring.
		h.read(h.c.rbufSize * 2)
		if h.c.rmsgLen != 0 || h.c.rbufQueued != 0 {
			t.Fatalf("after reading all: %d messages, %d bytes queued", h.c.rmsgLen, h.c.rbufQueued)
		}
	})
}

// Steps of a FuzzImmediates program: a kind byte (mod 8) and a 32-bit
// parameter p.
const (
	fzWrite     = 0 // (and 1) the honest peer writes 1 + p%room bytes of its stream
	fzPublish   = 2 // a credit update publishes a half, if one is free
	fzRead      = 3 // Read of p % (2*size+1) bytes
	fzWriteTo   = 4 // WriteTo's step: the first message, up to the buffer's end
	fzImm       = 5 // a completion with immediate p
	fzDataClaim = 6 // a data immediate (op 0, 1, 3 or 5 by p>>30) claiming (p & (1<<30-1)) % (2*size+2) bytes
	fzNoImm     = 7 // a completion without immediate (a SEND), other flags from p
	fzKinds     = 8
)

func fuzzStep(kind uint8, param uint32) []byte {
	b := []byte{kind, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], param)
	return b
}

func fuzzImmSeeds() [][]byte {
	prog := func(size, rq uint8, steps ...[]byte) []byte {
		p := []byte{size, rq}
		for _, s := range steps {
			p = append(p, s...)
		}
		return p
	}
	var honest, credits [][]byte
	// Honest traffic of odd sizes that wraps the ring several times.
	for i := range 60 {
		honest = append(honest, fuzzStep(fzWrite, uint32(i*977)), fuzzStep(fzPublish, 0))
		switch i % 3 {
		case 0:
			honest = append(honest, fuzzStep(fzRead, uint32(i*1234)))
		case 1:
			honest = append(honest, fuzzStep(fzWriteTo, 0), fuzzStep(fzRead, 1))
		}
	}
	// 16 one-byte messages fill a receive queue of 16; a 17th is beyond
	// the credits.
	for range 16 {
		credits = append(credits, fuzzStep(fzWrite, 0))
	}
	credits = append(credits, fuzzStep(fzDataClaim, 1), fuzzStep(fzRead, 3), fuzzStep(fzWrite, 0))
	seeds := [][]byte{
		prog(0, 0, honest...),
		prog(37, 5, honest...),
		prog(0, 0, credits...),
		prog(0, 0, fuzzStep(fzDataClaim, 0)),                    // 0 bytes
		prog(0, 0, fuzzStep(fzDataClaim, 4096)),                 // the whole buffer: published after start
		prog(0, 0, fuzzStep(fzDataClaim, 4097)),                 // beyond it
		prog(0, 0, fuzzStep(fzImm, immediate(opData, 1<<29-1))), // huge
		prog(0, 0, fuzzStep(fzWrite, 2047), fuzzStep(fzDataClaim, 2049)),
		// A message that crosses the end of the ring (no honest peer
		// sends one: segments are halves): Read wraps, WriteTo stops at
		// the end.
		prog(0, 0, fuzzStep(fzWrite, 2047), fuzzStep(fzWrite, 999), fuzzStep(fzRead, 3048), fuzzStep(fzPublish, 0),
			fuzzStep(fzDataClaim, 2000), fuzzStep(fzRead, 2000)),
		prog(0, 0, fuzzStep(fzWrite, 2047), fuzzStep(fzWrite, 999), fuzzStep(fzRead, 3048), fuzzStep(fzPublish, 0),
			fuzzStep(fzDataClaim, 2000), fuzzStep(fzWriteTo, 0), fuzzStep(fzWriteTo, 0)),
		prog(0, 0, fuzzStep(fzNoImm, 0)),
		prog(0, 0, fuzzStep(fzNoImm, 0xffffffff)),
		prog(0, 0, fuzzStep(fzWrite, 9), fuzzStep(fzImm, immediate(opCtrl, ctrlShutdown)), fuzzStep(fzRead, 100)),
		prog(0, 0, fuzzStep(fzWrite, 9), fuzzStep(fzImm, immediate(opCtrl, ctrlDisconnect)), fuzzStep(fzWriteTo, 0)),
		prog(0, 0, fuzzStep(fzImm, immediate(opCtrl, ctrlKeepalive)), fuzzStep(fzImm, immediate(opCtrl, 1<<29-1))),
		prog(0, 0, fuzzStep(fzImm, immediate(opSGL, 0x1ffff)), fuzzStep(fzWrite, 1)),
		prog(0, 0, fuzzStep(fzImm, immediate(opIOMapSGL, 0)), fuzzStep(fzWrite, 1), fuzzStep(fzRead, 1)),
		prog(0, 0, fuzzStep(fzImm, immediate(opWrite, 5)), fuzzStep(fzRead, 5)),
	}
	for op := range uint32(8) {
		seeds = append(seeds, prog(1, 1, fuzzStep(fzImm, immediate(op, 0)), fuzzStep(fzImm, immediate(op, 1)),
			fuzzStep(fzImm, immediate(op, 2)), fuzzStep(fzRead, 8)))
	}
	return seeds
}

// fuzzReceiver is a Conn's receive side with a plain mapping as its
// buffer, and a model of an honest peer that writes a known stream into
// the segments published to it.
type fuzzReceiver struct {
	t    *testing.T
	c    *Conn
	half uint32
	segs []fuzzSeg // published and not yet filled, in order
	// wpos and rpos are the stream bytes the honest peer wrote and that
	// were read. inSync holds while every message accepted was honest:
	// only then is what Read returns known.
	wpos, rpos uint64
	inSync     bool
}

type fuzzSeg struct{ off, len uint32 }

func fuzzStreamByte(i uint64) byte { return byte((i * 0x9e3779b9) >> 24) }

func newFuzzReceiver(t *testing.T, size uint32, rq int) *fuzzReceiver {
	buf, err := uverbs.AllocBuffer(int(size))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	a := &Addr{netip.MustParseAddrPort("10.77.0.2:7471")}
	c := &Conn{set: settings{Options: Options{RQSize: rq}, rbufSize: size}, laddr: a, raddr: a,
		rbuf: buf, rbufSize: size, rmsg: make([]uint32, rq)}
	// newConn: the first half goes to the peer in the connection data.
	c.rbufFree, c.rbufAvail = size/2, size/2
	c.rseqComp = uint16(rq / 2)
	c.connected, c.readable, c.writable = true, true, true
	h := &fuzzReceiver{t: t, c: c, half: size / 2, segs: []fuzzSeg{{0, size / 2}}, inSync: true}
	h.publish() // start: the first credit update publishes the second half
	h.check()
	return h
}

func (h *fuzzReceiver) step(kind uint8, param uint32) {
	c := h.c
	switch kind % fzKinds {
	case fzWrite, fzWrite + 1:
		if len(h.segs) == 0 || c.rmsgLen == len(c.rmsg) {
			return // an honest peer waits for segments and credits
		}
		s := &h.segs[0]
		n := 1 + param%s.len
		rb := c.rbuf.Bytes()
		for i := range n {
			rb[s.off+i] = fuzzStreamByte(h.wpos + uint64(i))
		}
		h.wpos += uint64(n)
		s.off += n
		if s.len -= n; s.len == 0 {
			h.segs = h.segs[1:]
		}
		// Honest data within what was published must be taken.
		wantOK := h.inSync
		if !h.deliver(&uverbs.WC{ID: wrRecv, Opcode: uverbs.WCOpRecvRDMAWithImm, Flags: uverbs.WCWithImm, Imm: immediate(opData, n)}, true) && wantOK {
			h.t.Fatalf("an honest message of %d bytes was refused: %v", n, c.err)
		}
	case fzPublish:
		h.publish()
	case fzRead:
		h.read(param % (2*c.rbufSize + 1))
	case fzWriteTo:
		h.writeTo()
	case fzImm:
		h.deliver(&uverbs.WC{ID: wrRecv, Opcode: uverbs.WCOpRecvRDMAWithImm, Flags: uverbs.WCWithImm, Imm: param}, false)
	case fzDataClaim:
		op := [...]uint32{0, 1, 3, 5}[param>>30]
		h.deliver(&uverbs.WC{ID: wrRecv, Opcode: uverbs.WCOpRecvRDMAWithImm, Flags: uverbs.WCWithImm,
			Imm: immediate(op, param&(1<<30-1)%(2*c.rbufSize+2))}, false)
	case fzNoImm:
		h.deliver(&uverbs.WC{ID: wrRecv, Opcode: uverbs.WCOpRecv, Flags: uverbs.WCFlags(param) &^ uverbs.WCWithImm, Imm: param}, false)
	}
	h.check()
}

// publish is the buffer part of updateCreditsLocked: a free half goes to
// the peer as its next segment.
func (h *fuzzReceiver) publish() {
	c := h.c
	if c.rbufAvail < h.half {
		return
	}
	if c.rbufFree+h.half > c.rbufSize {
		h.t.Fatalf("segment at %d of %d bytes crosses the end of a %d-byte buffer", c.rbufFree, h.half, c.rbufSize)
	}
	h.segs = append(h.segs, fuzzSeg{c.rbufFree, h.half})
	c.rbufAvail -= h.half
	c.rbufFree = (c.rbufFree + h.half) % c.rbufSize
}

// deliver hands one completion to receivedLocked, checks the outcome
// docs/rsocket.md §2.1 gives it, and reports whether data was queued.
// honest says that the message is the one the honest peer just wrote.
func (h *fuzzReceiver) deliver(wc *uverbs.WC, honest bool) (queued bool) {
	c, t := h.c, h.t
	type state struct {
		rmsgLen                       int
		queued, avail                 uint32
		err                           error
		connected, readable, writable bool
		sseqComp                      uint16
	}
	get := func() state {
		return state{c.rmsgLen, c.rbufQueued, c.rbufAvail, c.err, c.connected, c.readable, c.writable, c.sseqComp}
	}
	before := get()
	c.receivedLocked(wc)
	after := get()

	published := c.rbufSize - c.rbufAvail
	var violation error
	want := before
	if wc.Flags&uverbs.WCWithImm == 0 {
		violation = ErrProtocol
	} else {
		switch op, v := wc.Imm>>29, wc.Imm&(1<<29-1); op {
		case opIOMapSGL:
			violation = ErrIOMap
		case opSGL:
			want.sseqComp = uint16(v)
		case opCtrl:
			switch {
			case v == ctrlDisconnect:
				want.connected, want.readable, want.writable = false, false, false
			case v == ctrlShutdown && before.writable:
				want.readable = false
			case v == ctrlShutdown:
				want.connected, want.readable = false, false
			}
		case opWrite:
		default:
			if v == 0 || before.rmsgLen == len(c.rmsg) || uint64(before.queued)+uint64(v) > uint64(published) {
				violation = ErrProtocol
				break
			}
			want.rmsgLen++
			want.queued += v
			if last := c.rmsg[(c.rmsgHead+c.rmsgLen-1)%len(c.rmsg)]; last != v {
				t.Fatalf("imm %#x: queued a message of %d bytes", wc.Imm, last)
			}
			queued = true
			if !honest {
				h.inSync = false
			}
		}
	}
	if violation != nil {
		want.connected, want.writable = false, false
		if before.err == nil {
			if !errors.Is(after.err, violation) {
				t.Fatalf("%v flags %v imm %#x: error %v, want one matching %v", wc.Opcode, wc.Flags, wc.Imm, after.err, violation)
			}
			want.err = after.err
		}
	}
	if after != want {
		t.Fatalf("%v flags %v imm %#x (queued %d of %d published, %d messages):\n got %+v\nwant %+v",
			wc.Opcode, wc.Flags, wc.Imm, before.queued, published, before.rmsgLen, after, want)
	}
	return queued
}

// read is Read's part under mu: readLocked into a buffer of n bytes.
func (h *fuzzReceiver) read(n uint32) {
	c := h.c
	p := make([]byte, n)
	off, queued, avail, seq, msgs := c.rbufOffset, c.rbufQueued, c.rbufAvail, c.rseqNo, h.fullMessages(n)
	got := c.readLocked(p)
	if want := min(n, queued); uint32(got) != want {
		h.t.Fatalf("read of %d with %d bytes queued: %d", n, queued, got)
	}
	h.consumed(p[:got], off, queued, avail, seq, msgs)
}

// writeTo is WriteTo's part under mu: the first message up to the end of
// the buffer, taken straight from it, then consumeLocked.
func (h *fuzzReceiver) writeTo() {
	c := h.c
	if c.rmsgLen == 0 {
		return
	}
	k := min(c.rmsg[c.rmsgHead], c.rbufSize-c.rbufOffset)
	data := bytes.Clone(c.rbuf.Bytes()[c.rbufOffset : c.rbufOffset+k])
	off, queued, avail, seq, msgs := c.rbufOffset, c.rbufQueued, c.rbufAvail, c.rseqNo, h.fullMessages(k)
	c.consumeLocked(nil, k)
	h.consumed(data, off, queued, avail, seq, msgs)
}

// fullMessages counts the queued messages that n bytes read to the end.
func (h *fuzzReceiver) fullMessages(n uint32) uint16 {
	c := h.c
	var full uint16
	for i := range c.rmsgLen {
		m := c.rmsg[(c.rmsgHead+i)%len(c.rmsg)]
		if m > n {
			break
		}
		n -= m
		full++
	}
	return full
}

// consumed checks a read of data that started at offset off of the ring:
// the bookkeeping, the bytes against the ring (any message, honest or not,
// is read from where it lies, wrapping at the end), and, while in sync,
// against the honest peer's stream.
func (h *fuzzReceiver) consumed(data []byte, off, queued, avail uint32, seq, msgs uint16) {
	c, t, n := h.c, h.t, uint32(len(data))
	if c.rbufQueued != queued-n || c.rbufAvail != avail+n || c.rseqNo != seq+msgs || c.rbufOffset != (off+n)%c.rbufSize {
		t.Fatalf("%d bytes read from %d: now at %d, queued %d->%d, free %d->%d, messages read %d->%d (want +%d)",
			n, off, c.rbufOffset, queued, c.rbufQueued, avail, c.rbufAvail, seq, c.rseqNo, msgs)
	}
	rb := c.rbuf.Bytes()
	for i, b := range data {
		if at := (off + uint32(i)) % c.rbufSize; b != rb[at] {
			t.Fatalf("read %#x for the byte at %d of the ring, which holds %#x", b, at, rb[at])
		}
	}
	if !h.inSync {
		return
	}
	for i, b := range data {
		if want := fuzzStreamByte(h.rpos + uint64(i)); b != want {
			t.Fatalf("stream byte %d: read %#x, the peer wrote %#x", h.rpos+uint64(i), b, want)
		}
	}
	h.rpos += uint64(n)
}

// check holds after every step, whatever the peer sent.
func (h *fuzzReceiver) check() {
	c, t := h.c, h.t
	if c.rbufAvail > c.rbufSize || c.rbufOffset >= c.rbufSize || c.rbufFree >= c.rbufSize {
		t.Fatalf("buffer of %d: offset %d, free %d, unpublished %d", c.rbufSize, c.rbufOffset, c.rbufFree, c.rbufAvail)
	}
	published := c.rbufSize - c.rbufAvail
	if c.rbufQueued > published {
		t.Fatalf("%d bytes queued, %d published", c.rbufQueued, published)
	}
	// The published bytes run from the next unread one to the next segment.
	if (c.rbufOffset+published)%c.rbufSize != c.rbufFree {
		t.Fatalf("next unread at %d, %d published, next segment at %d", c.rbufOffset, published, c.rbufFree)
	}
	if c.rmsgLen < 0 || c.rmsgLen > len(c.rmsg) || c.rmsgHead < 0 || c.rmsgHead >= len(c.rmsg) {
		t.Fatalf("message ring of %d: head %d, %d queued", len(c.rmsg), c.rmsgHead, c.rmsgLen)
	}
	var sum uint64
	for i := range c.rmsgLen {
		m := c.rmsg[(c.rmsgHead+i)%len(c.rmsg)]
		if m == 0 {
			t.Fatalf("queued message %d has 0 bytes", i)
		}
		sum += uint64(m)
	}
	if sum != uint64(c.rbufQueued) {
		t.Fatalf("queued messages hold %d bytes, %d counted", sum, c.rbufQueued)
	}
	if c.err != nil && !errors.Is(c.err, ErrProtocol) && !errors.Is(c.err, ErrIOMap) {
		t.Fatalf("error %v is neither ErrProtocol nor ErrIOMap", c.err)
	}
	if c.err != nil && (c.connected || c.writable) {
		t.Fatalf("after %v: connected %v, writable %v", c.err, c.connected, c.writable)
	}
}
