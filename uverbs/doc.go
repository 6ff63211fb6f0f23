// Package uverbs is the RDMA verbs API, spoken directly to the kernel's
// /dev/infiniband/uverbsN character devices without libibverbs or cgo.
//
// # Devices
//
// Devices lists the RDMA devices (rdma-core: ibv_get_device_list). It asks
// the kernel over NETLINK_RDMA first, as rdma-core does, and reads sysfs
// (/sys/class/infiniband_verbs, /sys/class/infiniband) when netlink is not
// available. Open opens one by name and returns a *Device
// (rdma-core: ibv_open_device); everything else is created from a Device.
//
//	dev, err := uverbs.Open("rxe0")
//	if err != nil {
//		return err // errors.Is(err, uverbs.ErrNoDevice): no RDMA device at all
//	}
//	defer dev.Close()
//	attr, err := dev.Query()
//	port, err := dev.QueryPort(1)
//	gids, err := dev.GIDs(1)
//
// Ports are numbered from 1 with a uint8, the kernel's port_num (struct
// ib_uverbs_query_port), and addresses are netip.Addr.
//
// A machine without RDMA hardware can use Soft-RoCE: `rdma-link add rxe0
// netdev eth0` (or `rdma link add rxe0 type rxe netdev eth0`) creates an rxe
// device over any Ethernet interface; it needs the rdma_rxe kernel module.
//
// # Command transports
//
// The kernel offers two command ABIs on the same descriptor: the write()
// ABI (a header and a fixed struct per command, with "extended" commands for
// newer fields) and the ioctl ABI (RDMA_VERBS_IOCTL with typed attributes).
// Both are used: write() for everything it offers (GET_CONTEXT, which also
// creates the async event file, and EX_QUERY_DEVICE), the ioctl ABI for what
// only it offers (GID table queries, port_cap_flags2). A command that has an
// ioctl method tries it first and falls back to write() or sysfs for the
// life of the Device when the kernel does not know the method.
//
// # Errors
//
// Failed commands return an *OpError naming the command ("get_context",
// "query_port", "query_gid_entry", ...) that unwraps to the kernel's errno:
// errors.Is(err, unix.EINVAL) works. A command the kernel or device does not
// implement also matches ErrNotSupported. A closed Device gives errors
// matching ErrClosed. ErrNoDevice says how to create a device.
//
// # Async events
//
// Every Device has an async event file: port state changes, CQ overflows,
// QP and SRQ errors. NextEvent waits for one through Go's netpoller and
// honours a context.Context; Events ranges over them. Events of objects carry
// the user handle the object was created with.
//
// # Objects
//
// The objects and what they are made from (rdma-core name in brackets):
//
//	Device (ibv_context)
//	├── PD (ibv_pd) ── MR (ibv_mr), QP (ibv_qp), SRQ (ibv_srq), AH (ibv_ah)
//	├── CompChannel (ibv_comp_channel)
//	└── CQ (ibv_cq), optionally reporting to a CompChannel
//
// A QP names a PD, a send CQ, a receive CQ and optionally an SRQ. Memory to
// register comes from AllocBuffer: off-heap, page-aligned, never moved or
// freed by the garbage collector (see PD.RegMR for the rule on other memory).
//
// # Data path
//
// For the soft-RoCE driver (rxe) the send queue, receive queue, SRQ and CQ
// are rings the kernel maps into the process. QP.PostSend writes work
// requests straight into the send ring and rings the doorbell (one write()
// of POST_SEND with no work requests, as librxe does); QP.PostRecv and
// SRQ.PostRecv write the receive ring with no system call; CQ.Poll reads
// completions from the CQ ring into the caller's []WC. These calls allocate
// nothing. A bad work request is refused before anything reaches the ring,
// and a list of work requests is posted whole or not at all (PostError says
// which one was refused).
//
// For mlx5 (ConnectX) the process allocates the rings and doorbell records
// itself and maps the device's UAR pages; posting writes the ring, the
// doorbell record and the doorbell or BlueFlame register, arming writes
// the CQ doorbell, and none of them makes a system call. What it writes is
// compared with rdma-core's libmlx5 byte for byte (make mlx5diff), but it
// has not run on a ConnectX yet.
//
// For soft-iWARP (siw) the kernel allocates the rings, as for rxe, and
// each element carries its owner in a flag; a send rings the POST_SEND
// doorbell when the kernel's send side may have gone idle (the siw
// package says why). Other drivers open (PD, MR and AH work), but
// creating a CQ, QP or SRQ on them fails with ErrNotSupported.
//
// Posts, polls and arms are safe from any goroutine: each ring has its
// own lock, a sync.Mutex (docs/architecture.md §3). A program that
// uses a queue from one goroutine at a time may say so at creation
// (CQInit, QPInit and SRQInit SingleGoroutine), and that queue then takes
// no lock, as an rdma-core queue created in a thread domain does.
//
// A work completion's Status is data, not a Go error: WCStatus has rdma-core's
// texts (String) and C names (Name), and WCStatus.Err gives an error when one
// is wanted.
//
// # Waiting for completions
//
// CQ.Poll polls; CQ.ReqNotify arms a CQ, so that its next completion sends
// an event to its completion channel; CompChannel.Wait waits for the next
// event of any CQ of the channel (rdma-core: ibv_get_cq_event), and
// CQ.PollWait does the whole loop for one CQ: poll, and while the CQ is
// empty arm it, poll again and wait. Waits honour a context.Context and
// park the goroutine in Go's netpoller (the channel's file is always
// non-blocking), so a wait holds no OS thread. In steady state they
// allocate nothing (see CompChannel.Wait).
//
// # Close
//
// Every type of the module that holds something closes by one rule, the
// same in packages uverbs, rdmacm and rsocket:
//
//   - Close releases what the object holds, including what a package made
//     for it on its own, in order, and returns.
//   - While something the caller made from the object is open and needs
//     it, Close refuses instead: it returns an error matching ErrBusy that
//     names what, releases nothing, and the object stays open and usable.
//     Close the dependants first, then call Close again.
//   - The roots, whose kernel file takes everything made through it along
//     when it closes, close what is still open on them first, children
//     before parents, instead of refusing: Device here, and
//     rdmacm.EventChannel.
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
// In this package: QPs close before their CQs and SRQ; MRs, QPs, SRQs and
// AHs before their PD; CQs before their CompChannel; the MRs over a Buffer
// before the Buffer. An MR refuses to close while a QP or SRQ of its PD
// still has posted work, since the device may still access the memory.
// Deferring each Close right after the object is made closes them in a
// good order. Device.Close closes whatever is still open (QPs first,
// drained), then the context itself (kernel: core/uverbs_main.c
// ib_uverbs_close destroys every object of the file). Every call on a
// closed object returns an error matching ErrClosed without touching an
// unmapped ring; CQ.Close and CompChannel.Close end a PollWait or Wait in
// progress with it.
//
// Nothing posted is lost: QP.Close moves the QP to the error state, waits
// until the kernel has retired every work request (flushed ones complete
// with WCFlushError), and keeps the completions it pulled from shared CQs so
// that the next CQ.Poll returns them. That wait is Close's one long one:
// QP.Close bounds it at 10 s, QP.CloseContext by the caller's context.
//
// A soft-RoCE device cannot be deleted (`rdma link delete`) while any
// process holds one of its contexts or mappings open: close them first.
package uverbs
