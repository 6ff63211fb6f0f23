package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// destSize is sizeof(struct pingpong_dest) on x86_64 (perftest_resources.h
// @ v4.5-0.17): int lid, out_reads, qpn, psn; unsigned rkey; 4 bytes of
// padding; unsigned long long vaddr; union ibv_gid gid; unsigned srqn; int
// gid_index.
const destSize = 56

// syncSpecID is the work request ID of the exchange's messages
// (SYNC_SPEC_ID).
const syncSpecID = 5

// marshalBinary encodes d as rdma_write_keys does: the integers big-endian
// (htobe32, htobe64), the GID as it is.
func (d dest) marshalBinary() []byte {
	b := make([]byte, destSize)
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(d.LID))
	be.PutUint32(b[4:], uint32(d.OutReads))
	be.PutUint32(b[8:], d.QPN)
	be.PutUint32(b[12:], d.PSN)
	be.PutUint32(b[16:], d.RKey)
	be.PutUint64(b[24:], d.VAddr)
	copy(b[32:48], d.GID[:])
	be.PutUint32(b[48:], d.SRQN)
	return b
}

// parseDestBinary decodes what rdma_read_keys reads.
func parseDestBinary(b []byte) dest {
	be := binary.BigEndian
	d := dest{LID: uint16(be.Uint32(b[0:])), OutReads: uint16(be.Uint32(b[4:])), QPN: be.Uint32(b[8:]),
		PSN: be.Uint32(b[12:]), RKey: be.Uint32(b[16:]), VAddr: be.Uint64(b[24:]), SRQN: be.Uint32(b[48:])}
	copy(d.GID[:], b[32:48])
	return d
}

// rdmaComm is perftest's exchange over an RDMA CM connection of its own
// (rdma_client_connect, rdma_server_connect): one send and one receive
// work request, each message one signaled SEND, a receive posted again
// once read (post_one_recv_wqe).
type rdmaComm struct {
	ctx   context.Context
	conn  *rdmacm.Conn
	buf   *uverbs.Buffer
	mr    *uverbs.MR
	recvs int // receives completed and not read yet
	sends int // sends completed
	// repostErr is why the receive after the last read could not be
	// posted; the next read returns it.
	repostErr error
	wcs       [4]uverbs.WC
}

const commRecvOff = 2048 // receives land in the second half of the page

func commConfig() *rdmacm.Config {
	return &rdmacm.Config{SendDepth: 1, RecvDepth: 1, CQDepth: 4,
		ConnParam: &rdmacm.ConnParam{RetryCount: 7, RNRRetryCount: 7}}
}

// dialRDMAComm connects the exchange to host:port, retrying while the
// server does not listen yet.
func dialRDMAComm(ctx context.Context, host string, port int) (*comm, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	for try := 0; ; try++ {
		r := &rdmaComm{ctx: ctx}
		c, err := rdmacm.Resolve(ctx, addr, commConfig())
		if err == nil {
			r.conn = c
			if err = r.setup(); err == nil {
				if err = c.Connect(ctx, nil); err == nil {
					return &comm{rdma: r, client: true}, nil
				}
			}
			r.Close()
		}
		if !errors.Is(err, rdmacm.ErrConnRefused) || try == 50 || ctx.Err() != nil {
			return nil, fmt.Errorf("couldn't connect to %s through the RDMA CM (is the server running?): %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// acceptRDMAComm takes the first connection request of l as the exchange.
func acceptRDMAComm(ctx context.Context, l *rdmacm.Listener) (*comm, error) {
	c, err := l.GetRequest(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for a client: %w", err)
	}
	r := &rdmaComm{ctx: ctx, conn: c}
	if err := r.setup(); err != nil {
		r.Close()
		return nil, err
	}
	if err := c.Accept(ctx, nil); err != nil {
		r.Close()
		return nil, err
	}
	return &comm{rdma: r}, nil
}

func (r *rdmaComm) setup() (err error) {
	if r.buf, err = uverbs.AllocBuffer(4096); err != nil {
		return err
	}
	if r.mr, err = r.conn.PD().RegMR(r.buf.Bytes(), uverbs.AccessLocalWrite); err != nil {
		return err
	}
	return r.postRecv()
}

func (r *rdmaComm) postRecv() error {
	return r.conn.QP().PostRecv([]uverbs.RecvWR{{ID: syncSpecID, SGEs: []uverbs.SGE{r.mr.SGE(commRecvOff, destSize)}}})
}

// poll takes the completions of the exchange's CQ; waits spin, as
// perftest's do (a server waiting through the client's test spins too),
// looking at ctx now and then.
func (r *rdmaComm) poll(spin int) error {
	n, err := r.conn.CQ().Poll(r.wcs[:])
	if err != nil {
		return err
	}
	for _, wc := range r.wcs[:n] {
		if wc.Status != uverbs.WCSuccess || wc.ID != syncSpecID {
			return fmt.Errorf("exchange with the peer: completion %v, wr_id %d", wc.Status, wc.ID)
		}
		if wc.Opcode.IsRecv() {
			r.recvs++
		} else {
			r.sends++
		}
	}
	if n == 0 && spin&1023 == 1023 {
		return r.ctx.Err()
	}
	return nil
}

func (r *rdmaComm) write(mine []byte, size int) error {
	b := r.buf.Bytes()[:size]
	clear(b)
	copy(b, mine)
	want := r.sends + 1
	wr := []uverbs.SendWR{{ID: syncSpecID, Op: uverbs.OpSend, Flags: uverbs.SendSignaled, SGEs: []uverbs.SGE{r.mr.SGE(0, size)}}}
	if err := r.conn.QP().PostSend(wr); err != nil {
		return err
	}
	for spin := 0; r.sends < want; spin++ {
		if err := r.poll(spin); err != nil {
			return err
		}
	}
	return nil
}

func (r *rdmaComm) read(size int) ([]byte, error) {
	for spin := 0; r.recvs == 0; spin++ {
		if r.repostErr != nil {
			return nil, r.repostErr
		}
		if err := r.poll(spin); err != nil {
			return nil, err
		}
	}
	r.recvs--
	in := make([]byte, size)
	copy(in, r.buf.Bytes()[commRecvOff:commRecvOff+size])
	// The peer may end the connection as soon as it has sent its last
	// message; on siw the QP is then in the error state, where nothing
	// posted would ever complete (docs/siw.md §8), so uverbs refuses the
	// post. What was read stands.
	if err := r.postRecv(); err != nil {
		r.repostErr = err
	}
	return in, nil
}

// xchg is ctx_xchg_data_rdma: the client writes then reads, the server
// reads then writes.
func (r *rdmaComm) xchg(mine []byte, size int, client bool) ([]byte, error) {
	if client {
		if err := r.write(mine, size); err != nil {
			return nil, err
		}
		return r.read(size)
	}
	in, err := r.read(size)
	if err != nil {
		return nil, err
	}
	return in, r.write(mine, size)
}

func (r *rdmaComm) Close() error {
	var errs []error
	if r.conn != nil {
		// The QP first: closing it flushes the posted receive, which
		// holds the MR.
		r.conn.Disconnect()
		errs = append(errs, r.conn.QP().Close())
	}
	errs = append(errs, r.mr.Close(), r.buf.Close())
	if r.conn != nil {
		errs = append(errs, r.conn.Close())
	}
	return errors.Join(errs...)
}
