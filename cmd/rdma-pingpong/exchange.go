package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// dest is the address of one side: what the peer needs to reach its QP
// (rdma-core: struct pingpong_dest).
type dest struct {
	LID uint16
	QPN uint32
	PSN uint32 // first PSN this side sends with
	GID uverbs.GID
}

// String formats the address like the C programs' "local address:" lines.
func (d dest) String() string {
	return fmt.Sprintf("LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", d.LID, d.QPN, d.PSN, d.GID)
}

// hasInterfaceID reports whether the GID's low 64 bits are set, the test
// rdma-core's pp_connect_ctx uses to decide whether the path is global.
func (d dest) hasInterfaceID() bool {
	for _, b := range d.GID[8:] {
		if b != 0 {
			return true
		}
	}
	return false
}

// wireLen is the size of an address message: the C programs send
// sizeof "0000:000000:000000:00000000000000000000000000000000", NUL included.
const wireLen = 4 + 1 + 6 + 1 + 6 + 1 + 32 + 1

// doneMsg ends the exchange: the client sends sizeof "done" bytes.
var doneMsg = []byte("done\x00")

// marshal encodes d as "%04x:%06x:%06x:" and the GID as 32 hex digits of
// its bytes in order (pingpong.c gid_to_wire_gid prints each 32-bit word with
// htonl, which is the bytes in memory order), NUL-padded to wireLen.
func (d dest) marshal() []byte {
	s := fmt.Sprintf("%04x:%06x:%06x:%s", d.LID, d.QPN, d.PSN, hex.EncodeToString(d.GID[:]))
	b := make([]byte, wireLen)
	copy(b, s)
	return b
}

// parseDest decodes an address message (rdma-core: sscanf "%x:%x:%x:%s" and
// wire_gid_to_gid).
func parseDest(msg []byte) (dest, error) {
	var d dest
	if i := bytes.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i]
	}
	bad := func(why string) error {
		return fmt.Errorf("malformed address message %q from the peer (%s); is it an ibv_*_pingpong of the same kind (rc/ud)?", msg, why)
	}
	f := strings.Split(string(msg), ":")
	if len(f) != 4 {
		return d, bad("want LID:QPN:PSN:GID")
	}
	lid, err := strconv.ParseUint(f[0], 16, 16)
	if err != nil {
		return d, bad("LID")
	}
	qpn, err := strconv.ParseUint(f[1], 16, 24)
	if err != nil {
		return d, bad("QPN")
	}
	psn, err := strconv.ParseUint(f[2], 16, 24)
	if err != nil {
		return d, bad("PSN")
	}
	if len(f[3]) != 32 {
		return d, bad("GID is not 32 hex digits")
	}
	if _, err := hex.Decode(d.GID[:], []byte(f[3])); err != nil {
		return d, bad("GID")
	}
	d.LID, d.QPN, d.PSN = uint16(lid), uint32(qpn), uint32(psn)
	return d, nil
}

// closeOnDone makes blocking I/O on c fail once ctx ends.
func closeOnDone(ctx context.Context, c interface{ SetDeadline(time.Time) error }) (stop func() bool) {
	return context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
}

// clientExchange connects to the server and swaps addresses
// (rdma-core: pp_client_exch_dest). local is called once the connection
// is up, with its local address, and returns this side's address.
func clientExchange(ctx context.Context, server string, port int, local func(net.Addr) (dest, error)) (dest, error) {
	addr := net.JoinHostPort(server, strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return dest{}, fmt.Errorf("couldn't connect to %s (is the server running?): %w", addr, err)
	}
	defer conn.Close()
	defer closeOnDone(ctx, conn)()

	me, err := local(conn.LocalAddr())
	if err != nil {
		return dest{}, err
	}
	if _, err := conn.Write(me.marshal()); err != nil {
		return dest{}, fmt.Errorf("couldn't send the local address to %s: %w", addr, err)
	}
	msg := make([]byte, wireLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return dest{}, fmt.Errorf("couldn't read the remote address from %s: %w", addr, err)
	}
	peer, err := parseDest(msg)
	if err != nil {
		return dest{}, err
	}
	if _, err := conn.Write(doneMsg); err != nil {
		return dest{}, fmt.Errorf("couldn't send done to %s: %w", addr, err)
	}
	return peer, nil
}

// serverExchange waits for one client on port and swaps addresses
// (rdma-core: pp_server_exch_dest). local returns this side's address as
// for clientExchange; connect is called with the client's address before
// the answer is sent, so that the server's QP is ready when the client
// learns of it.
func serverExchange(ctx context.Context, port int, local func(net.Addr) (dest, error), connect func(dest) error) (dest, error) {
	var lc net.ListenConfig // Go sets SO_REUSEADDR on listeners, as the C server does
	ln, err := lc.Listen(ctx, "tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return dest{}, fmt.Errorf("couldn't listen to port %d: %w", port, err)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	conn, err := ln.Accept()
	stop()
	ln.Close() // one client, as in the C server
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return dest{}, fmt.Errorf("waiting for a client on port %d: %w", port, err)
	}
	defer conn.Close()
	defer closeOnDone(ctx, conn)()

	me, err := local(conn.LocalAddr())
	if err != nil {
		return dest{}, err
	}
	msg := make([]byte, wireLen)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return dest{}, fmt.Errorf("couldn't read the remote address from %s: %w", conn.RemoteAddr(), err)
	}
	peer, err := parseDest(msg)
	if err != nil {
		return dest{}, err
	}
	if err := connect(peer); err != nil {
		return dest{}, err
	}
	if _, err := conn.Write(me.marshal()); err != nil {
		return dest{}, fmt.Errorf("couldn't send the local address to %s: %w", conn.RemoteAddr(), err)
	}
	done := make([]byte, len(doneMsg))
	if _, err := io.ReadFull(conn, done); err != nil {
		return dest{}, fmt.Errorf("couldn't read done from %s: %w", conn.RemoteAddr(), err)
	}
	if !bytes.Equal(done, doneMsg) {
		return dest{}, fmt.Errorf("the client sent %q instead of done", done)
	}
	return peer, nil
}
