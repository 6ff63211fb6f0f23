package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// The steps of a connection's life, in cmtime's order and words.
type step int

const (
	stepCreateID step = iota
	stepBind
	stepResolveAddr
	stepResolveRoute
	stepCreateQP
	stepConnect
	stepDisconnect
	stepDestroy
	numSteps
)

var stepNames = [numSteps]string{"create id", "bind addr", "resolve addr", "resolve route", "create qp", "connect", "disconnect", "destroy"}

// What the client prints before each step (cmtime's words).
var stepTitles = [numSteps]string{"creating id", "binding source address", "resolving address", "resolving route", "creating qp", "connecting", "disconnecting", "destroying id"}

// conn is one connection of the client and the times of its steps.
type conn struct {
	id    *rdmacm.ID
	cq    *uverbs.CQ
	qp    *uverbs.QP
	times [numSteps][2]time.Time
	err   error // the first step that failed; later steps but destroy skip it
}

// pds opens each device the CM picks once, with one PD for all its
// connections, as librdmacm does.
type pds struct {
	mu   sync.Mutex
	devs map[string]*uverbs.PD
}

func (p *pds) get(id *rdmacm.ID) (*uverbs.PD, error) {
	info, _, ok := id.Device()
	if !ok {
		return nil, fmt.Errorf("%v has no device", id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pd := p.devs[info.Name]; pd != nil {
		return pd, nil
	}
	dev, err := uverbs.OpenDevice(info)
	if err != nil {
		return nil, err
	}
	pd, err := dev.AllocPD()
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	if p.devs == nil {
		p.devs = make(map[string]*uverbs.PD)
	}
	p.devs[info.Name] = pd
	return pd, nil
}

func (p *pds) close() {
	for _, pd := range p.devs {
		pd.Device().Close()
	}
}

// createQP makes the connection's QP as cmtime asks for it (one send and
// one receive work request of one SGE) with a CQ for both queues.
func createQP(p *pds, id *rdmacm.ID) (*uverbs.CQ, *uverbs.QP, error) {
	pd, err := p.get(id)
	if err != nil {
		return nil, nil, err
	}
	cq, err := pd.Device().CreateCQ(uverbs.CQInit{Depth: 2})
	if err != nil {
		return nil, nil, err
	}
	qp, err := id.CreateQP(pd, uverbs.QPInit{SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return nil, nil, errors.Join(err, cq.Close())
	}
	return cq, qp, nil
}

// report prints an error as cmtime does: the event and its status for the
// CM's events, the operation and the error otherwise.
func report(out io.Writer, what string, err error) {
	var ev *rdmacm.EventError
	var rej *rdmacm.RejectError
	switch {
	case errors.As(err, &ev):
		fmt.Fprintf(out, "event: %v, error: %d\n", ev.Event, ev.Status)
	case errors.As(err, &rej):
		fmt.Fprintf(out, "event: %v, error: %d\n", rdmacm.EventRejected, rej.Reason)
	default:
		fmt.Fprintf(out, "%s: %v\n", what, err)
	}
}

// client runs every step for all connections, one step after another, and
// prints the table.
func client(ctx context.Context, o options, out io.Writer) error {
	dst, err := rdmacm.ParseAddress(ctx, hostPort(o.server, o.port))
	if err != nil {
		return err
	}
	var src netip.AddrPort
	if o.bind != "" {
		if src, err = rdmacm.ParseAddress(ctx, hostPort(o.bind, 0)); err != nil {
			return err
		}
	}
	ch, err := rdmacm.NewEventChannel()
	if err != nil {
		return err
	}
	defer ch.Close()
	var p pds
	defer p.close()
	conns := make([]conn, o.conns)
	var total [numSteps][2]time.Time
	var mu sync.Mutex // out
	// run times one step: each connection in turn, or all at once.
	run := func(s step, parallel bool, f func(c *conn) error) {
		fmt.Fprintln(out, stepTitles[s])
		total[s][0] = time.Now()
		var wg sync.WaitGroup
		for i := range conns {
			c := &conns[i]
			if c.err != nil && s != stepDestroy {
				continue
			}
			one := func() {
				c.times[s][0] = time.Now()
				err := f(c)
				if err == nil {
					c.times[s][1] = time.Now()
				} else {
					if c.err == nil {
						c.err = err
					}
					mu.Lock()
					report(out, "failure "+stepTitles[s], err)
					mu.Unlock()
				}
			}
			if parallel {
				wg.Add(1)
				go func() { defer wg.Done(); one() }()
			} else {
				one()
			}
		}
		wg.Wait()
		total[s][1] = time.Now()
	}
	run(stepCreateID, false, func(c *conn) (err error) {
		c.id, err = ch.CreateID(rdmacm.PortSpaceTCP)
		return err
	})
	if o.bind != "" {
		run(stepBind, false, func(c *conn) error { return c.id.Bind(src) })
	}
	run(stepResolveAddr, true, func(c *conn) error {
		return retry(o.retries, rdmacm.ErrAddrResolve, func() error { return c.id.ResolveAddr(ctx, src, dst, o.timeout) })
	})
	run(stepResolveRoute, true, func(c *conn) error {
		return retry(o.retries, rdmacm.ErrRouteResolve, func() error { return c.id.ResolveRoute(ctx, o.timeout) })
	})
	run(stepCreateQP, false, func(c *conn) (err error) {
		c.cq, c.qp, err = createQP(&p, c.id)
		return err
	})
	param := rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: uint8(min(o.retries, 7))}
	run(stepConnect, true, func(c *conn) error {
		_, err := c.id.Connect(ctx, param, nil)
		return err
	})
	run(stepDisconnect, true, func(c *conn) error {
		// As rdma_disconnect and rdma_destroy_qp (which destroys the CQs
		// it made) do.
		err := errors.Join(c.id.Disconnect(), c.qp.Close(), c.cq.Close())
		if err == nil {
			select {
			case <-c.id.Done():
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		return err
	})
	run(stepDestroy, false, func(c *conn) error {
		return errors.Join(c.qp.Close(), c.id.Close(), c.cq.Close())
	})
	printTable(out, o, conns, &total)
	failed := 0
	for i := range conns {
		if conns[i].err != nil {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d connections failed", failed, len(conns))
	}
	return nil
}

// retry runs f again, up to n more times, while it fails with want.
func retry(n int, want error, f func() error) error {
	err := f()
	for ; n > 0 && errors.Is(err, want); n-- {
		err = f()
	}
	return err
}

// printTable prints cmtime's table: per step the whole step in ms, the
// longest connection in ms, the shortest in µs, and µs per connection.
func printTable(out io.Writer, o options, conns []conn, total *[numSteps][2]time.Time) {
	fmt.Fprintln(out, "step              total ms     max ms     min us  us / conn")
	for s := step(0); s < numSteps; s++ {
		if s == stepBind && o.bind == "" {
			continue
		}
		max, min := 0.0, 999999999.0
		for i := range conns {
			t := conns[i].times[s]
			if t[0].IsZero() || t[1].IsZero() {
				continue
			}
			us := float64(t[1].Sub(t[0]).Nanoseconds()) / 1e3
			max, min = maxf(max, us), minf(min, us)
		}
		us := float64(total[s][1].Sub(total[s][0]).Nanoseconds()) / 1e3
		fmt.Fprintf(out, "%-13s: %11.2f%11.2f%11.2f%11.2f\n", stepNames[s], us/1000, max/1000, min, us/float64(len(conns)))
	}
}

func maxf(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}

func minf(a, b float64) float64 {
	if a < b {
		return a
	}
	return b
}

// serve accepts connections until ctx ends: a QP for each request, the
// accept, and when the client disconnects, the teardown.
func serve(ctx context.Context, o options, errw io.Writer) error {
	addr, err := rdmacm.ParseAddress(ctx, hostPort(o.bind, o.port))
	if err != nil {
		return err
	}
	ch, err := rdmacm.NewEventChannel()
	if err != nil {
		return err
	}
	defer ch.Close()
	lid, err := ch.CreateID(rdmacm.PortSpaceTCP)
	if err != nil {
		return err
	}
	defer lid.Close()
	if err := lid.Bind(addr); err != nil {
		return err
	}
	if err := lid.Listen(0); err != nil {
		return err
	}
	var p pds
	var wg sync.WaitGroup
	defer func() {
		lid.Close()
		wg.Wait()
		p.close()
	}()
	var mu sync.Mutex // errw
	for {
		e, err := lid.GetEvent(ctx)
		if err != nil {
			return err
		}
		if e.Type != rdmacm.EventConnectRequest || e.Request == nil {
			continue
		}
		wg.Add(1)
		go func(id *rdmacm.ID) {
			defer wg.Done()
			if err := accept(ctx, &p, id); err != nil && ctx.Err() == nil {
				mu.Lock()
				fmt.Fprintf(errw, "failing connection request: %v\n", err)
				mu.Unlock()
			}
		}(e.Request)
	}
}

// accept serves one request until its client disconnects.
func accept(ctx context.Context, p *pds, id *rdmacm.ID) error {
	defer id.Close()
	cq, qp, err := createQP(p, id)
	if err != nil {
		id.Reject(nil)
		return err
	}
	defer cq.Close()
	defer qp.Close()
	if err := id.Accept(ctx, rdmacm.DefaultConnParam, nil); err != nil {
		return err
	}
	select {
	case <-id.Done(): // DISCONNECTED: the package has answered it
	case <-ctx.Done():
	}
	return nil
}
