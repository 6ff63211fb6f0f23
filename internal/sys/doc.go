// Package sys is the one place where goverbs makes system calls on RDMA
// character devices and owns kernel resources.
//
// It provides:
//
//   - FD, a file descriptor with an idempotent Close and a GC safety net;
//   - Write and Ioctl, the two command choke points (the uverbs/ucma write()
//     ABI and RDMA_VERBS_IOCTL), which wrap errno in an OpError naming the
//     operation;
//   - Mapping, an mmap'd region (a driver ring or an off-heap buffer) with an
//     idempotent Unmap;
//   - EventFile, an event fd (completion channel, async events, rdma_cm),
//     always non-blocking, read through Go's netpoller with a context;
//   - a leak tracer: with tracing on, every FD, Mapping and EventFile records
//     where it was made, and Leaks lists the ones still open.
//
// Everything else in the module reaches the kernel through this package.
package sys
