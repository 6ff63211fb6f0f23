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
// # Close
//
// Every type of the module that holds something closes by one rule, the
// same in packages uverbs, rdmacm and rsocket:
//
//   - Close releases what the object holds, including what a package made
//     for it on its own, in order, and returns.
//   - While something the caller made from the object is open and needs
//     it, Close refuses instead: it returns an error matching
//     uverbs.ErrBusy that names what, releases nothing, and the object
//     stays open and usable. Close the dependants first, then call Close
//     again.
//   - The roots, whose kernel file takes everything made through it along
//     when it closes, close what is still open on them first, children
//     before parents, instead of refusing: EventChannel here, and
//     uverbs.Device.
//   - Close is idempotent and safe on a nil pointer. Every later call on
//     the object returns an error matching ErrClosed, and so does a call
//     that waits on it when it closes: Close wakes it.
//   - Close waits for a bounded time only, and a caller can set the bound
//     where the wait is long.
//
// The refusal is the kernel's own rule: it answers a destroy of a PD, CQ,
// SRQ or MR still in use with EBUSY (kernel: core/rdma_core.c
// uverbs_destroy_uobject), which ErrBusy also matches, and rdma-core's
// ibv_destroy_comp_channel answers EBUSY while CQs use the channel. A
// Close that freed a parent under its children would leave them broken
// without telling their owner; so a Close here fails where ibv_destroy_*
// would, and a root's Close, like the close of its file, is the one call
// that cleans up everything.
//
// In this package nothing refuses: what a caller makes from a Conn,
// Listener or ID does not need it. Conn.Close takes the connection down in
// order (QP, CQ, completion channel, MRs of Conn.RegMR, the shared PD and
// device with the last connection on it, ID, the Dial side's own
// channel); the connections a Listener accepted outlive it, as
// net.Listener's do; a QP made with ID.CreateQP is the caller's, and
// outlives the ID (close it first, and poll its CQ for the flushed work).
// EventChannel.Close closes the IDs still open on it, then its fd, as the
// kernel's close of the fd destroys them (kernel: core/ucma.c ucma_close).
// A call waiting on a closed ID or channel (ID.GetEvent,
// EventChannel.GetEvents, Listener.Accept) returns an error matching
// ErrClosed. The verbs objects a program makes itself are package
// uverbs', which refuse to close under their dependants: close an MR
// registered with Conn.PD().RegMR before the Conn (the last connection on
// a device closes the device, and the MR with it), and a Config.PD only
// after its connections. The Example of Conn.Close shows the order.
//
// # Soft-RoCE notes
//
// The CM needs the two ends on different netdevs: an rxe device on lo
// cannot be reached through the CM (route resolution fails); two rxe
// devices on the two ends of a veth pair, or two hosts, can.
package rdmacm
