// Package rxe is the data path of the soft-RoCE (rdma_rxe) provider: the
// codec for the rings the kernel shares with user space, with no system
// calls on the data path. It speaks the providers' vocabulary (the root
// package rdma and uverbs/internal/provider): it encodes provider.SendWR
// and rdma.RecvWR, and decodes into rdma.WC's layout (WCs). Its objects (objects.go:
// Open, and the Context whose CQState, QPState and SRQState implement
// provider's CQ, QP and SRQ) issue the create commands, map the kernel's
// rings at the offsets of their mmap information and write the prebuilt
// doorbells through a provider.Device, which uverbs implements; uverbs
// holds the locks, and reads the rings of the states directly on its
// common post and poll.
//
// # Rings
//
// Every rxe queue is one mapping (struct rxe_queue_buf): a 384-byte header
// holding log2_elem_size at 0, index_mask at 4, producer_index at 128 and
// consumer_index at 256, then the slots from 384 (kernel:
// drivers/infiniband/sw/rxe/rxe_queue.c rxe_queue_init). Ring reads and
// checks the geometry; Producer (SQ, RQ, SRQ: the user owns
// producer_index) and Consumer (CQ: the user owns consumer_index) implement
// the index protocol of rdma-core providers/rxe/rxe_queue.h with the
// acquire/release views of internal/mmio. Each side keeps a private copy of
// the index it owns and a cached copy of the kernel's index, which it
// reloads only when the ring looks full (producer) or empty (consumer).
//
// # Work requests and completions
//
// EncodeSend and EncodeRecv fill a slot as struct rxe_send_wqe and
// struct rxe_recv_wqe (include/uapi/rdma/rdma_user_rxe.h) exactly as librxe
// does; ValidateSend and ValidateRecv first apply librxe's checks, so that an
// invalid request is refused with a clear error before anything is
// written. DecodeCQE reads the struct ib_uverbs_wc at the start of a CQ
// slot. SQ, RQ and CQ bundle a ring with its limits: Post validates, checks
// for room, encodes and publishes; Poll decodes a batch.
//
// The hot path (Post, Poll, EncodeSend, EncodeRecv, DecodeCQE) allocates
// nothing; the tests enforce it.
//
// # Rules
//
// Nothing here is safe for concurrent use: the caller holds one lock per
// queue, as rdma-core does. The kernel never trusts the user's index for
// addressing (it only compares it after masking), and this package never
// trusts the kernel's: it masks it too, and addresses slots only with its
// own private index.
//
// Work-request IDs are opaque 64-bit values: the kernel returns them in
// completions. Never store a Go pointer there.
//
// Immediate data is host order in SendWQE and WC; on the wire and in the
// rings it is big-endian (the __be32 imm_data of the UAPI).
package rxe
