// Package rdmacm is the RDMA connection manager (CM) over
// /dev/infiniband/rdma_cm, the kernel's ucma command ABI, without cgo or
// librdmacm. It resolves IP addresses to RDMA devices and routes, connects
// and accepts RC connections and UD peers, carries private data, and moves
// the QPs of the uverbs package through INIT, RTR and RTS exactly as
// librdmacm does, so that either side can be a librdmacm program
// (rping, rdma_server, rdma_client, udaddy, perftest -R).
//
// # Two levels
//
// Dial and Listen give established connections (Conn) with a PD, one CQ
// with a completion channel, and a QP ready to post on:
//
//	c, err := rdmacm.Dial(ctx, "10.0.0.1:7471", nil)
//	...
//	defer c.Close()
//	mr, err := c.PD().RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
//	err = c.QP().PostSend(wrs)
//
//	l, err := rdmacm.Listen(ctx, "10.0.0.1:7471", nil)
//	c, err := l.Accept(ctx)
//
// Resolve + Conn.Connect and Listener.GetRequest + Conn.Accept split these
// in two, for protocols that register memory, post receives or look at the
// peer's private data before the connection is established. Conn.Shutdown
// ends a connection in order (disconnect, wait, flush, deregister the
// memory of Conn.RegMR) before Close frees the rest.
//
// The files say which level they hold: cm_*.go the CM's own objects,
// conn*.go, listener.go and devices.go the connections built on them.
//
// Below them, EventChannel and ID are the CM's own objects (rdma-core:
// struct rdma_event_channel and struct rdma_cm_id), for programs that drive
// each step themselves.
//
// # Events
//
// An EventChannel's fd is non-blocking and waited on through Go's
// netpoller by one goroutine per channel, which reads each event (GET_EVENT)
// and queues it on the ID it concerns; ID.GetEvent(ctx) takes the next one.
// Events need no acknowledgement: destroying an ID never waits for one.
// Event types print as rdma_event_str does ("RDMA_CM_EVENT_ESTABLISHED").
//
// # Many IDs at once
//
// A channel opened with NewAsyncEventChannel has no reader goroutine: its
// IDs start their steps without waiting (StartResolveAddr,
// StartResolveRoute, StartConnect, StartAccept, Disconnect) and one
// goroutine takes the events of all of them, in batches, with
// EventChannel.GetEvents; Event.ID names the ID. This is how librdmacm's
// cmtime and event-driven servers use rdma_get_cm_event, and what
// cmd/cmtime does. Device work stays with the caller: CompleteConnect
// moves the QP and sends the RTU after a CONNECT_RESPONSE, CreateQP and
// StartAccept answer a CONNECT_REQUEST. On iWARP (siw) an RC connection
// has no CONNECT_RESPONSE: both sides get ESTABLISHED, which each answers
// with CompleteConnect (the kernel moved the QP; it takes its state).
// The waiting methods refuse the IDs of such a channel, and the Start
// methods those of NewEventChannel's.
//
// Listener.Accept answers every request that has arrived before it waits
// for their clients' RTUs, so a burst of requests costs one wait.
//
// # Connecting as librdmacm does
//
// After a connection request is answered, the kernel reports
// CONNECT_RESPONSE to the active side (it has no kernel QP to move itself);
// the package then asks the CM for the attributes of each QP state
// (INIT_QP_ATTR), moves the QP to RTR and RTS with them, and sends an
// ACCEPT without parameters, which makes the kernel send the RTU. Only then
// is the connection reported established. The passive side moves its QP to
// RTS before accepting (the CM allows it in state REQ_RCVD). See
// docs/abi.md §4.4 and §4.5, and rdma-core librdmacm/cma.c
// ucma_process_conn_resp and rdma_accept.
//
// # Private data
//
// A connection request carries at most 56 bytes of private data, an
// accept 196, a reject 148 (the IB CM message sizes less the CM's header for
// IP addresses). What arrives is always the full fixed size, zero padded:
// an application that needs the exact length puts it in the data.
//
// # Errors
//
// Failed commands are *OpError values that unwrap to the errno. Failed
// connection setup is an *EventError (errors.Is with ErrAddrResolve,
// ErrRouteResolve, ErrUnreachable, ErrDisconnected), a *RejectError
// (ErrRejected, and ErrConnRefused when nothing listens on the port), or a
// timeout matching ErrTimeout and context.DeadlineExceeded; Dial's
// documentation lists them all. No CM or no device: an error matching
// uverbs.ErrNoDevice, whose text says how to create a soft-RoCE device.
//
// # Devices
//
// The CM names the device of each connection by its node GUID. The package
// lists the devices once and again only when the CM names one it does not
// know, opens each device once, and gives the process's connections on a
// device one PD (as librdmacm does), unless Config.PD gives one. A device
// is closed with its last connection.
//
// # Closing
//
// Close on a Conn, Listener, ID or EventChannel always releases what it
// holds and never returns ErrBusy: Conn.Close takes the connection down in
// order (QP, CQ, completion channel, MRs of Conn.RegMR, the shared PD and
// device with the last connection on it, ID); an EventChannel's fd is closed
// when its last ID is. The verbs objects a program makes itself are
// package uverbs', whose Close refuses with uverbs.ErrBusy and leaves the
// object open while something made from it is open (see that package's
// Lifetimes): close an MR registered with Conn.PD().RegMR, and a QP made
// with ID.CreateQP, before the Conn or ID, and a Config.PD only after its
// connections. The Example of Conn.Close shows the order.
//
// # Soft-RoCE notes
//
// The CM needs the two ends on different netdevs: an rxe device on lo
// cannot be reached through the CM (route resolution fails); two rxe
// devices on the two ends of a veth pair, or two hosts, can.
package rdmacm
