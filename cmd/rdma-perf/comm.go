package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// The out-of-band exchange speaks perftest's own (src/perftest_communication.c
// @ v4.5-0.17), so that either side can be perftest. Without -R it is a TCP
// connection to port -p; with -R it is a connection of its own through the
// RDMA CM to port -p (perftest's parser sets use_rdma_cm with -R), carrying
// each message as one SEND (see rdmaComm). Either way the client writes
// first and the server reads first.

// perftestVersion is what this side announces in exchange_versions; perftest
// refuses peers older than 5.70 and changes its messages below 5.33.
const perftestVersion = "6.06"

// dest is one side's address (perftest: struct pingpong_dest).
type dest struct {
	LID      uint16
	OutReads uint16
	QPN      uint32
	PSN      uint32
	RKey     uint32
	VAddr    uint64
	GID      uverbs.GID
	SRQN     uint32
}

// Message sizes, NUL included (KEY_MSG_SIZE, KEY_MSG_SIZE_GID).
const (
	keyMsgSize    = 59
	keyMsgSizeGID = 108
)

// marshal encodes d as perftest's KEY_PRINT_FMT_GID
// ("%04x:%04x:%06x:%06x:%08x:%016llx:" then 16 "%02x:" and "%08x:") or, on
// InfiniBand without a GID, KEY_PRINT_FMT.
func (d dest) marshal(withGID bool) []byte {
	var s strings.Builder
	fmt.Fprintf(&s, "%04x:%04x:%06x:%06x:%08x:%016x", d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr)
	n := keyMsgSize
	if withGID {
		n = keyMsgSizeGID
		for _, b := range d.GID {
			fmt.Fprintf(&s, ":%02x", b)
		}
		fmt.Fprintf(&s, ":%08x:", d.SRQN)
	} else {
		fmt.Fprintf(&s, ":%08x", d.SRQN)
	}
	b := make([]byte, n)
	copy(b, s.String())
	return b
}

// parseDest decodes a key message.
func parseDest(msg []byte, withGID bool) (dest, error) {
	var d dest
	if i := strings.IndexByte(string(msg), 0); i >= 0 {
		msg = msg[:i]
	}
	f := strings.Split(strings.TrimSuffix(string(msg), ":"), ":")
	want := 7
	if withGID {
		want = 23
	}
	if len(f) != want {
		return d, fmt.Errorf("malformed address message %q from the peer: %d fields, want %d", msg, len(f), want)
	}
	var v [23]uint64
	for i, s := range f {
		x, err := strconv.ParseUint(s, 16, 64)
		if err != nil {
			return d, fmt.Errorf("malformed address message %q from the peer: field %d", msg, i)
		}
		v[i] = x
	}
	d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr = uint16(v[0]), uint16(v[1]), uint32(v[2]), uint32(v[3]), uint32(v[4]), v[5]
	if withGID {
		for i := range d.GID {
			d.GID[i] = byte(v[6+i])
		}
		d.SRQN = uint32(v[22])
	} else {
		d.SRQN = uint32(v[6])
	}
	return d, nil
}

// comm is the exchange's connection to the peer: TCP, or with -R an RDMA
// connection (rdma non-nil).
type comm struct {
	c       net.Conn
	rdma    *rdmaComm
	client  bool
	withGID bool // key messages carry a GID (perftest: gid_index != -1, i.e. RoCE)
}

// dialComm connects to the server, retrying while nothing listens yet
// (perftest's client gives up at once; a retry costs nothing here).
func dialComm(ctx context.Context, host string, port int) (*comm, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp4", addr)
		if err == nil {
			return &comm{c: c, client: true}, nil
		}
		if ctx.Err() != nil || !strings.Contains(err.Error(), "refused") {
			return nil, fmt.Errorf("couldn't connect to %s (is the server running?): %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// acceptComm waits for one client on port, as perftest's server does
// (IPv4, SO_REUSEADDR, one connection).
func acceptComm(ctx context.Context, port int) (*comm, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp4", ":"+strconv.Itoa(port))
	if err != nil {
		return nil, fmt.Errorf("couldn't listen to port %d: %w", port, err)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	c, err := ln.Accept()
	stop()
	ln.Close()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("waiting for a client on port %d: %w", port, err)
	}
	return &comm{c: c}, nil
}

// watch makes blocking I/O fail once ctx ends.
func (m *comm) watch(ctx context.Context) (stop func() bool) {
	if m.rdma != nil {
		return func() bool { return true } // its loops look at ctx
	}
	return context.AfterFunc(ctx, func() { m.c.SetDeadline(time.Unix(1, 0)) })
}

func (m *comm) Close() error {
	if m.rdma != nil {
		return m.rdma.Close()
	}
	return m.c.Close()
}

// xchg swaps size-byte messages: the client writes then reads, the server
// reads then writes (perftest: ctx_xchg_data_ethernet).
func (m *comm) xchg(mine []byte, size int) ([]byte, error) {
	if m.rdma != nil {
		return m.rdma.xchg(mine, size, m.client)
	}
	out := make([]byte, size)
	copy(out, mine)
	in := make([]byte, size)
	var err error
	if m.client {
		if _, err = m.c.Write(out); err == nil {
			_, err = io.ReadFull(m.c, in)
		}
	} else {
		if _, err = io.ReadFull(m.c, in); err == nil {
			_, err = m.c.Write(out)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("exchange with the peer: %w", err)
	}
	return in, nil
}

// handshake swaps key messages (perftest: ctx_hand_shake). Every step of
// perftest's setup is one; most carry the same address again.
func (m *comm) handshake(me dest) (dest, error) {
	if m.rdma != nil {
		in, err := m.rdma.xchg(me.marshalBinary(), destSize, m.client)
		if err != nil {
			return dest{}, err
		}
		return parseDestBinary(in), nil
	}
	n := keyMsgSize
	if m.withGID {
		n = keyMsgSizeGID
	}
	in, err := m.xchg(me.marshal(m.withGID), n)
	if err != nil {
		return dest{}, err
	}
	return parseDest(in, m.withGID)
}

// preamble runs exchange_versions, check_sys_data and check_mtu, and
// returns the MTU both sides use (the smaller, as perftest's check_mtu).
func (m *comm) preamble(mtu uverbs.MTU) (uverbs.MTU, error) {
	in, err := m.xchg([]byte(perftestVersion), 16) // MAX_VERSION
	if err != nil {
		return 0, err
	}
	rv, _ := strconv.ParseFloat(strings.TrimRight(string(in), "\x00"), 64)
	if rv < 5.70 {
		return 0, fmt.Errorf("the peer is perftest version %q; versions older than 5.70 are not supported", strings.TrimRight(string(in), "\x00"))
	}
	// check_sys_data: page size (the cycle buffer) and cache line size, as
	// big-endian ints; perftest takes the larger of each.
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], 4096)
	if _, err := m.xchg(b[:], 4); err != nil {
		return 0, err
	}
	binary.BigEndian.PutUint32(b[:], 64)
	if _, err := m.xchg(b[:], 4); err != nil {
		return 0, err
	}
	// check_mtu: the MTU enum as "%d" in 2 bytes (versions 5.31 and later).
	in, err = m.xchg([]byte(strconv.Itoa(int(mtu))), 2)
	if err != nil {
		return 0, err
	}
	r, err := strconv.Atoi(strings.TrimRight(string(in[:1]), "\x00"))
	if err == nil && r >= int(uverbs.MTU256) && r <= int(uverbs.MTU4096) && uverbs.MTU(r) < mtu {
		mtu = uverbs.MTU(r)
	}
	return mtu, nil
}

// bwReport is what xchg_bw_reports swaps (sizes of v5.33 and later).
type bwReport struct {
	size    uint64
	iters   uint64
	peak    float64
	avg     float64
	msgRate float64
}

// xchgBWReports swaps the reports at the end of write_bw and read_bw; the
// server prints nothing from it but needs the exchange to finish.
func (m *comm) xchgBWReports(r bwReport) (bwReport, error) {
	var got bwReport
	u64 := func(v uint64, p *uint64) error {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], v)
		in, err := m.xchg(b[:], 8)
		if err == nil {
			*p = binary.BigEndian.Uint64(in)
		}
		return err
	}
	f64 := func(v float64, p *float64) error {
		var x uint64
		err := u64(math.Float64bits(v), &x)
		*p = math.Float64frombits(x)
		return err
	}
	for _, err := range []error{
		u64(r.size, &got.size), u64(r.iters, &got.iters),
		f64(r.peak, &got.peak), f64(r.avg, &got.avg), f64(r.msgRate, &got.msgRate),
	} {
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// closeConnection is perftest's ctx_close_connection: a last handshake,
// then "done" with its NUL, which nobody reads.
func (m *comm) closeConnection(me dest) error {
	if _, err := m.handshake(me); err != nil {
		return err
	}
	if m.rdma == nil {
		m.c.Write([]byte("done\x00"))
	}
	return nil
}
