// Package mlx5 is the data path of the mlx5 (ConnectX-4 and later)
// provider: the encoder of send and receive work queue entries, the doorbell
// record and UAR writes that hand them to the device, the queue sizing, and
// the decoder of 64-byte completion entries, with no system calls.
//
// Unlike rxe, the process owns an mlx5 QP's rings and doorbell records
// (page-aligned memory it passes to CREATE_QP / CREATE_CQ / CREATE_SRQ by
// address) and maps only the UAR page holding the doorbell and BlueFlame
// registers. This package reads and writes those bytes the way rdma-core's
// libmlx5 does (providers/mlx5/qp.c, cq.c, srq.c), in the providers'
// vocabulary (uverbs/internal/provider; vocab.go pins the layouts it views
// the caller's requests and completions through), and sets its objects up
// through a provider.Device, which uverbs implements: the context with its
// UAR pages and bfregs (context.go), the queue memory, and the create
// commands with mlx5's driver data (objects.go). docs/mlx5.md lists the
// formats and the behaviour followed.
//
// Every byte this package writes was compared with what libmlx5 writes for
// the same input by the differential harness in test/mlx5diff; the tests of
// this package replay the golden vectors that harness recorded.
//
// # Rules
//
// Nothing here is safe for concurrent use of one queue: the caller holds
// one lock per queue (the SQ, the RQ or SRQ, the CQ), as libmlx5 does. A
// post to an SQ or RQ may run beside a poll of its CQ; SQ says what orders
// them. A shared BlueFlame register is locked around each doorbell
// (BlueFlame.Lock). Post validates
// every work request of a list before it writes the first, so a refused list
// leaves the ring, the doorbell record and the UAR untouched (libmlx5 posts
// the requests before the refused one; docs/mlx5.md §6). The hot path (Post,
// Poll) allocates nothing.
//
// Work-request IDs are opaque 64-bit values returned in completions. Never
// store a Go pointer there.
package mlx5
