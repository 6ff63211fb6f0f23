package tutorial

import (
	"context"
	"errors"
	"fmt"

	"github.com/goverbs/rdma/uverbs"
)

// Region is registered memory: a buffer and its MR's keys.
type Region struct {
	Name string
	Buf  []byte
	Addr uint64 // the address the peer names in RDMA operations
	LKey uint32
	RKey uint32
}

// SGE returns the SGE of n bytes at off.
func (r *Region) SGE(off, n int) uverbs.SGE {
	return uverbs.SGE{Addr: r.Addr + uint64(off), Length: uint32(n), LKey: r.LKey}
}

// Endpoint is one side of an RC connection as the protocols see it: the
// rdmacm connection in the programs, an in-memory pair in unit tests.
type Endpoint interface {
	// Register allocates size bytes of registered memory with access.
	Register(name string, size int, access uverbs.Access) (*Region, error)
	PostSend(wr uverbs.SendWR) error
	PostRecv(wr uverbs.RecvWR) error
	// Next returns the next work completion, sleeping until there is one.
	// Once the connection has ended and nothing is left to poll it
	// returns errPeerGone.
	Next(ctx context.Context) (uverbs.WC, error)
	// PeerPrivateData is the private data of the peer's ACCEPT (client) or
	// CONNECT (server), zero padded by the CM.
	PeerPrivateData() []byte
	// Done is closed when the connection has ended.
	Done() <-chan struct{}
}

// errPeerGone: the connection ended while a protocol step waited.
var errPeerGone = errors.New("the connection ended")

// traced wraps an Endpoint so that each step goes to the trace.
type traced struct {
	Endpoint
	tr *Trace
}

func (t traced) Register(name string, size int, access uverbs.Access) (*Region, error) {
	r, err := t.Endpoint.Register(name, size, access)
	if err != nil {
		return nil, fmt.Errorf("register %d bytes for the %s buffer: %w", size, name, err)
	}
	t.tr.Slow("MR %s registered: addr=%#x len=%d lkey=%#x rkey=%#x access=%v", name, r.Addr, len(r.Buf), r.LKey, r.RKey, access)
	return r, nil
}

func (t traced) PostSend(wr uverbs.SendWR) error {
	t.tr.Fast("%s", sendWRText(&wr))
	if err := t.Endpoint.PostSend(wr); err != nil {
		return fmt.Errorf("post %s: %w", wrOpName(wr.Op), err)
	}
	return nil
}

func (t traced) PostRecv(wr uverbs.RecvWR) error {
	t.tr.Fast("%s", recvWRText(&wr))
	if err := t.Endpoint.PostRecv(wr); err != nil {
		return fmt.Errorf("post RECV: %w", err)
	}
	return nil
}

func (t traced) Next(ctx context.Context) (uverbs.WC, error) {
	wc, err := t.Endpoint.Next(ctx)
	if err == nil {
		t.tr.Fast("%s", wcText(&wc))
	}
	return wc, err
}

// wcError is a failed work completion as the programs report it.
func wcError(what string, wc uverbs.WC) error {
	return fmt.Errorf("%s failed: work completion status %s (%v), wr_id %d", what, wc.Status.Name(), wc.Status, wc.ID)
}

// postWait posts wr as a signaled work request and waits for its
// completion (waitOne).
func postWait(ctx context.Context, ep Endpoint, wr uverbs.SendWR, what string) error {
	wr.Flags |= uverbs.SendSignaled
	if err := ep.PostSend(wr); err != nil {
		return err
	}
	_, err := waitOne(ctx, ep, wr.ID, what)
	return err
}

// waitOne waits for the completion of work request id, which must succeed;
// every other completion is an error (the protocols here have one request
// in flight when they call it).
func waitOne(ctx context.Context, ep Endpoint, id uint64, what string) (uverbs.WC, error) {
	wc, err := ep.Next(ctx)
	if err != nil {
		if errors.Is(err, errPeerGone) {
			return wc, fmt.Errorf("%s: the peer disconnected first", what)
		}
		return wc, err
	}
	if wc.Status == uverbs.WCFlushError {
		return wc, fmt.Errorf("%s: the peer disconnected first (work request %d flushed)", what, wc.ID)
	}
	if wc.Status != uverbs.WCSuccess {
		return wc, wcError(what, wc)
	}
	if wc.ID != id {
		return wc, fmt.Errorf("%s: unexpected completion of work request %d (%v)", what, wc.ID, wc.Opcode)
	}
	return wc, nil
}
