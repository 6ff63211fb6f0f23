package uverbs

import (
	"context"
	"errors"
	"fmt"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// CompChannel is a completion channel: a file on which the kernel reports
// that a CQ armed with CQ.ReqNotify got a completion. Wait parks the
// goroutine in Go's netpoller (no OS thread is held) and honours a context.
//
// Close refuses (ErrBusy) while CQs created with the channel are open.
// Close is idempotent and safe on a nil *CompChannel; a Wait in progress
// returns an error matching ErrClosed.
//
// rdma-core: struct ibv_comp_channel.
type CompChannel struct {
	ctx  *Context
	h    uint64
	ev   *sys.EventFile
	kids children
}

// NewCompChannel creates a completion channel (write() command
// CREATE_COMP_CHANNEL).
//
// rdma-core: ibv_create_comp_channel.
func (c *Context) NewCompChannel() (*CompChannel, error) {
	const op = "create_comp_channel"
	r, err := c.objects(op)
	if err != nil {
		return nil, err
	}
	var req abi.UverbsCreateCompChannel
	var resp abi.UverbsCreateCompChannelResp
	if err := c.write(op, abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, bytesOf(&req), bytesOf(&resp)); err != nil {
		return nil, err
	}
	ev, err := sys.NewEventFile(int(resp.FD), "completion channel "+c.dev.Name)
	if err != nil {
		return nil, &OpError{Op: op, Err: err}
	}
	ch := &CompChannel{ctx: c, h: newHandle(), ev: ev}
	if err := r.add(op, ch.h, kindCompChannel, ch); err != nil {
		ch.close(true)
		return nil, err
	}
	return ch, nil
}

// FD returns the channel's file descriptor, for callers that multiplex it
// with other files themselves. It is non-blocking; each read returns one
// 8-byte struct ib_uverbs_comp_event_desc. It returns -1 once the channel
// is closed (the number may then name another file).
func (ch *CompChannel) FD() int {
	if ch == nil {
		return -1
	}
	return ch.ev.Raw()
}

// Wait waits until a CQ of this channel that was armed with ReqNotify gets
// a completion, and returns that CQ. The notification is one-shot: call
// cq.ReqNotify again before the next Wait, and poll the CQ after arming
// (arm, poll, then wait only if the CQ was empty) so that no completion is
// missed. It returns ctx.Err() when ctx ends first, and an error matching
// ErrClosed when the channel is closed.
//
// rdma-core: ibv_get_cq_event (no ibv_ack_cq_events is needed).
func (ch *CompChannel) Wait(ctx context.Context) (*CQ, error) {
	const op = "read completion event"
	if ch == nil {
		return nil, closedErr(op)
	}
	for {
		var desc abi.UverbsCompEventDesc
		buf := bytesOf(&desc)
		n, err := ch.ev.Read(ctx, buf)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, &OpError{Op: op, Err: err}
		}
		if cq, ok := ch.event(n, &desc); ok {
			return cq, nil
		}
	}
}

// TryWait returns the CQ of a queued notification without waiting, or nil
// if none is queued.
func (ch *CompChannel) TryWait() (*CQ, error) {
	const op = "read completion event"
	if ch == nil {
		return nil, closedErr(op)
	}
	for {
		var desc abi.UverbsCompEventDesc
		n, err := ch.ev.TryRead(bytesOf(&desc))
		if err != nil {
			return nil, &OpError{Op: op, Err: err}
		}
		if n == 0 {
			return nil, nil
		}
		if cq, ok := ch.event(n, &desc); ok {
			return cq, nil
		}
	}
}

// event resolves one event; ok is false for an event of a CQ that was closed
// since (the kernel drops queued events of a destroyed CQ, so this is a
// narrow race) or of a foreign handle.
func (ch *CompChannel) event(n int, desc *abi.UverbsCompEventDesc) (*CQ, bool) {
	if n != len(bytesOf(desc)) {
		return nil, false
	}
	cq, _ := lookupHandle(desc.CQHandle).(*CQ)
	if cq == nil || cq.ch != ch {
		return nil, false
	}
	return cq, true
}

// Close closes the channel's file. It refuses with an error matching
// ErrBusy while CQs created with the channel are open.
//
// rdma-core: ibv_destroy_comp_channel.
func (ch *CompChannel) Close() error {
	if ch == nil {
		return nil
	}
	return ch.close(false)
}

func (ch *CompChannel) close(force bool) error {
	already, err := ch.kids.beginClose("destroy_comp_channel", "completion channel", force)
	if already || err != nil {
		return err
	}
	ch.ctx.forget(ch.h)
	if err := ch.ev.Close(); err != nil {
		return &OpError{Op: "destroy_comp_channel", Err: fmt.Errorf("close: %w", err)}
	}
	return nil
}
