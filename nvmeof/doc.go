// Package nvmeof is an NVMe over Fabrics host and target over RDMA: the
// host connects to an NVMe subsystem served over RDMA, such as the Linux
// kernel's own target (nvmet-rdma), and reads and writes its namespaces,
// without the kernel's host driver (nvme-rdma); the target serves
// subsystems to hosts, the kernel's included (nvme connect -t rdma). No
// cgo.
//
//	c, err := nvmeof.Connect(ctx, "10.0.0.1:4420", "nqn.2024-01.io.example:disk1", nil)
//	...
//	defer c.Close()
//	ns, err := c.Namespace(ctx, 1)
//	...
//	_, err = ns.WriteAt(buf, 0) // whole blocks
//
// Discover lists what a discovery controller offers, as `nvme discover`.
//
// Each queue, the admin queue and every I/O queue, is its own RC
// connection made through the RDMA CM (package rdmacm) with the transport's
// private data, and its own registered buffer: command capsules go out by
// SEND, responses come back into posted receives, and each command's data
// sits in a slot of that buffer, which the target reads (writes) or writes
// (reads) with RDMA through a keyed SGL; a small write goes in the capsule
// when the target takes in-capsule data. The data is copied between the
// caller's slice and the slot. docs/nvmeof.md describes the protocol as
// implemented, with the specification sections it follows, and what is not
// supported.
//
// The target holds a standing key to each queue's data slots for the
// life of the connection: it is not invalidated per command.
//
// # Target
//
// Listen serves subsystems on an RDMA address, each with namespaces kept
// in memory (MemoryNamespace), in a file or block device (FileNamespace)
// or in any io.ReaderAt and io.WriterAt (NewNamespace), and a discovery
// controller that lists them:
//
//	ns, err := nvmeof.MemoryNamespace(1<<30, 512)
//	...
//	t, err := nvmeof.Listen(ctx, "10.0.0.1:4420", nil, &nvmeof.Subsystem{
//		NQN:        "nqn.2024-01.io.example:disk1",
//		Namespaces: []*nvmeof.TargetNamespace{ns},
//	})
//	...
//	defer t.Close()
//
// Hosts get controllers on demand (the dynamic controller model); a
// controller ends with its admin queue, with an error on any of its queues,
// or when its host sends nothing for its keep-alive timeout (KATO). The
// target answers what the kernel's host sends when it connects and scans
// (Identify, the logs and features it reads, Async Event Request, which
// it holds) and Read, Write, Flush and Write Zeroes, with the data moved
// by RDMA READ and WRITE through the host's keyed SGLs, or carried in the
// command capsule on I/O queues. A command it cannot carry out gets the
// status the specification gives (invalid opcode or field, LBA out of
// range, SGL errors, ...); a host that breaks the transport loses its
// controller. TargetConfig.Fault makes the target misbehave, to test
// hosts.
//
// Target.Close disconnects every host, ends every controller and frees
// everything; it is idempotent and safe on nil. Namespaces are the
// caller's: close a FileNamespace after the Targets that serve it.
//
// # Errors
//
// A command the controller refuses gives a *StatusError with its status.
// A controller whose queue connection ended, whose keep-alive or command
// went unanswered (Config.CommandTimeout), or that broke the protocol is
// lost: every command waiting and every later one fails with an error
// matching ErrControllerLost that says what happened, and the program
// connects again. Bad arguments give an error that says what to change,
// matching syscall.EINVAL.
//
// # Close
//
// Controller.Close disconnects the I/O queues (commands still waiting end
// with an error matching ErrClosed), shuts the controller down (CC.SHN),
// disconnects the admin queue and frees everything; it is idempotent and
// safe on nil, as Close is across the module (see package rsocket's
// "Close"). A Namespace holds nothing of its own.
package nvmeof
