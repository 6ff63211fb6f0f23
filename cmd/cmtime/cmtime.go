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
	id      *rdmacm.ID
	cq      *uverbs.CQ
	qp      *uverbs.QP
	times   [numSteps][2]time.Time
	retries int   // resolution retries left in the step
	err     error // the first step that failed; later steps but destroy skip it
}

// pds opens each device the CM picks once, with one PD for all its
// connections, as librdmacm does.
type pds struct {
	mu   sync.Mutex
	devs map[string]*uverbs.PD
}

func (p *pds) get(id *rdmacm.ID) (*uverbs.PD, error) {
	info, ok := id.DeviceInfo()
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
// prints the table. As rdma-core's cmtime, it starts the asynchronous
// steps (resolve address and route, connect, disconnect) for every
// connection and then takes their events from the one channel until each
// connection has its answer.
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
	ch, err := rdmacm.NewAsyncEventChannel()
	if err != nil {
		return err
	}
	defer ch.Close()
	var p pds
	defer p.close()
	conns := make([]conn, o.conns)
	byID := make(map[*rdmacm.ID]*conn, o.conns)
	var total [numSteps][2]time.Time
	fail := func(c *conn, s step, err error) {
		if c.err == nil {
			c.err = err
		}
		report(out, "failure "+stepTitles[s], err)
	}
	// run times a step done one connection after another.
	run := func(s step, f func(c *conn) error) {
		fmt.Fprintln(out, stepTitles[s])
		total[s][0] = time.Now()
		for i := range conns {
			c := &conns[i]
			if c.err != nil && s != stepDestroy {
				continue
			}
			c.times[s][0] = time.Now()
			if err := f(c); err != nil {
				fail(c, s, err)
				continue
			}
			c.times[s][1] = time.Now()
		}
		total[s][1] = time.Now()
	}
	// async times a step that is started for every connection and ends
	// with an event: handle says whether an event ends the step of its
	// connection (nil error), fails it, or is not its end (errNotYet).
	evs := make([]rdmacm.Event, 64)
	async := func(s step, start func(c *conn) error, handle func(c *conn, e rdmacm.Event) error) error {
		fmt.Fprintln(out, stepTitles[s])
		total[s][0] = time.Now()
		pending := 0
		for i := range conns {
			c := &conns[i]
			if c.err != nil {
				continue
			}
			c.times[s][0] = time.Now()
			if err := start(c); err != nil {
				fail(c, s, err)
				continue
			}
			pending++
		}
		for pending > 0 {
			n, err := ch.GetEvents(ctx, evs)
			if err != nil {
				return err
			}
			for _, e := range evs[:n] {
				c := byID[e.ID]
				if e.Type == rdmacm.EventTimewaitExit || c == nil || c.err != nil || !c.times[s][1].IsZero() {
					continue // an event of no step in flight (TIMEWAIT_EXIT)
				}
				err := handle(c, e)
				if err == errNotYet {
					continue
				}
				pending--
				if err != nil {
					fail(c, s, err)
					continue
				}
				c.times[s][1] = time.Now()
			}
		}
		total[s][1] = time.Now()
		return nil
	}
	run(stepCreateID, func(c *conn) (err error) {
		c.id, err = ch.CreateID(rdmacm.PortSpaceTCP)
		if err == nil {
			byID[c.id] = c
		}
		return err
	})
	if o.bind != "" {
		run(stepBind, func(c *conn) error { return c.id.Bind(src) })
	}
	err = async(stepResolveAddr, func(c *conn) error {
		c.retries = o.retries
		return c.id.StartResolveAddr(src, dst, o.timeout)
	}, func(c *conn, e rdmacm.Event) error {
		if e.Type == rdmacm.EventAddrError && c.retries > 0 {
			c.retries--
			if c.id.StartResolveAddr(src, dst, o.timeout) == nil {
				return errNotYet
			}
		}
		return want(e, rdmacm.EventAddrResolved)
	})
	if err == nil {
		err = async(stepResolveRoute, func(c *conn) error {
			c.retries = o.retries
			return c.id.StartResolveRoute(o.timeout)
		}, func(c *conn, e rdmacm.Event) error {
			if e.Type == rdmacm.EventRouteError && c.retries > 0 {
				c.retries--
				if c.id.StartResolveRoute(o.timeout) == nil {
					return errNotYet
				}
			}
			return want(e, rdmacm.EventRouteResolved)
		})
	}
	if err == nil {
		run(stepCreateQP, func(c *conn) (err error) {
			c.cq, c.qp, err = createQP(&p, c.id)
			return err
		})
		param := rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: uint8(min(o.retries, 7))}
		err = async(stepConnect, func(c *conn) error {
			return c.id.StartConnect(param, nil)
		}, func(c *conn, e rdmacm.Event) error {
			// On iWARP (siw) the kernel's CM reports ESTABLISHED, with
			// the QP in RTS, where InfiniBand and RoCE report
			// CONNECT_RESPONSE (kernel: core/cma.c cma_iw_handler).
			if e.Type != rdmacm.EventEstablished || !isIWARP(c.id) {
				if err := want(e, rdmacm.EventConnectResponse); err != nil {
					return err
				}
			}
			// As librdmacm does inside rdma_get_cm_event for an ID
			// with a QP: RTR, RTS and the RTU; on iWARP, the QP's
			// state read back from the kernel.
			return c.id.CompleteConnect()
		})
	}
	if err == nil {
		err = async(stepDisconnect, func(c *conn) error {
			// As rdma_disconnect and rdma_destroy_qp (which destroys the
			// CQs it made) do.
			return errors.Join(c.id.Disconnect(), c.qp.Close(), c.cq.Close())
		}, func(c *conn, e rdmacm.Event) error {
			return want(e, rdmacm.EventDisconnected)
		})
	}
	run(stepDestroy, func(c *conn) error {
		var qerr, cerr error
		if c.qp != nil {
			qerr = c.qp.Close()
		}
		if c.cq != nil {
			cerr = c.cq.Close()
		}
		return errors.Join(qerr, c.id.Close(), cerr)
	})
	if err != nil {
		return err
	}
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

// errNotYet: the event does not end the connection's step.
var errNotYet = errors.New("not yet")

// want is nil if e is the event that ends the step, else the failure.
func want(e rdmacm.Event, t rdmacm.EventType) error {
	if e.Type == t && e.Status == 0 {
		return nil
	}
	if err := e.Err(); err != nil {
		return err
	}
	return &rdmacm.EventError{Op: "get_event", Event: e.Type, Status: e.Status}
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
// accept, and when the client disconnects, the teardown. As rdma-core's
// cmtime server, one goroutine takes the events of the listener and of
// all its connections from one channel, and hands requests to one worker
// (QP and accept) and disconnections to another (the reply, then the
// teardown), so that taking events never waits for the device.
func serve(ctx context.Context, o options, errw io.Writer) error {
	addr, err := rdmacm.ParseAddress(ctx, hostPort(o.bind, o.port))
	if err != nil {
		return err
	}
	ch, err := rdmacm.NewAsyncEventChannel()
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
	var mu sync.Mutex // conns, and each conn's cq and qp
	conns := make(map[*rdmacm.ID]*conn)
	drop := func(c *conn) {
		mu.Lock()
		delete(conns, c.id)
		qp, cq := c.qp, c.cq
		c.qp, c.cq = nil, nil
		mu.Unlock()
		if qp != nil {
			qp.Close()
		}
		if cq != nil {
			cq.Close()
		}
		c.id.Close()
	}
	requests := make(chan *conn, 1024)
	disconnects := make(chan *conn, 1024)
	var workers sync.WaitGroup
	workers.Add(2)
	go func() {
		defer workers.Done()
		for c := range requests {
			if err := accept(&p, &mu, c); err != nil {
				fmt.Fprintf(errw, "failing connection request: %v\n", err)
				c.id.Reject(nil)
				drop(c)
			}
		}
	}()
	go func() {
		defer workers.Done()
		for c := range disconnects {
			// The answer to the client's disconnect request (the DREP).
			c.id.Disconnect()
			drop(c)
		}
	}()
	defer func() {
		close(requests)
		close(disconnects)
		workers.Wait()
		lid.Close()
		mu.Lock()
		left := make([]*conn, 0, len(conns))
		for _, c := range conns {
			left = append(left, c)
		}
		mu.Unlock()
		for _, c := range left {
			drop(c)
		}
		p.close()
	}()
	evs := make([]rdmacm.Event, 64)
	for {
		n, err := ch.GetEvents(ctx, evs)
		if err != nil {
			return err
		}
		for _, e := range evs[:n] {
			if e.Type == rdmacm.EventConnectRequest {
				c := &conn{id: e.Request}
				mu.Lock()
				conns[c.id] = c
				mu.Unlock()
				requests <- c
				continue
			}
			mu.Lock()
			c := conns[e.ID]
			mu.Unlock()
			if c == nil {
				continue
			}
			switch e.Type {
			case rdmacm.EventEstablished:
				if isIWARP(c.id) {
					// The QP is in RTS in the kernel; take its
					// state (rdmacm.ID.StartAccept). A client
					// that already disconnected is no failure
					// (CompleteConnect takes that connection as
					// established and over); its DISCONNECTED
					// follows and ends the connection.
					if err := c.id.CompleteConnect(); err != nil {
						fmt.Fprintf(errw, "failing connection: %v\n", err)
					}
				}
			case rdmacm.EventTimewaitExit:
			default:
				// DISCONNECTED, or a connection that failed before it
				// was established.
				disconnects <- c
			}
		}
	}
}

// accept answers one request: its QP, then the accept; ESTABLISHED follows
// on the channel.
func accept(p *pds, mu *sync.Mutex, c *conn) error {
	cq, qp, err := createQP(p, c.id)
	if err != nil {
		return err
	}
	mu.Lock()
	c.cq, c.qp = cq, qp
	mu.Unlock()
	return c.id.StartAccept(rdmacm.DefaultConnParam(), nil)
}

// isIWARP reports whether id's device is iWARP (siw), whose CM reports
// ESTABLISHED to both sides of an RC connection.
func isIWARP(id *rdmacm.ID) bool {
	d, ok := id.DeviceInfo()
	return ok && d.Transport() == uverbs.TransportIWARP
}
