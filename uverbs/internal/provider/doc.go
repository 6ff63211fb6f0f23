// Package provider is what every user-space data path of uverbs shares
// beyond the public vocabulary of the root package rdma (the work requests
// a caller posts, the completions it polls, the opcode and flag values and
// the errors of a refused post): the send request as the providers read it
// (SendWR, with its AH), the opcodes and flags no caller may post yet, and
// the checks every ibv_post_send and ibv_post_recv makes whatever the
// driver (CheckSend, PlainSend, CheckRecv).
//
// It also names what a provider and uverbs need of each other: Device
// (write() commands with driver data, mmap on the device's descriptor, a
// prebuilt doorbell), and the interfaces through which uverbs drives a
// provider's objects (Open, Context, CQ, QP, SRQ; objects.go), chosen once
// when each object is created, with the optional ones for what not every
// provider has (CQResizer, SRQResizer, CQEvents, FlushOnDestroy, and
// AHPortInfo for the port's link in CreateAH) and for driver data in
// commands common to all devices (RegMRData, ModifySRQData). rxe, mlx5
// and siw implement them; uverbs' dispatch file writes the common post and
// poll of rxe and mlx5 out behind a type assertion to their concrete
// types, so that those hot paths make no interface call.
//
// Package uverbs names the vocabulary in its public API (uverbs.WC is
// rdma.WC). Each driver package (uverbs/internal/rxe,
// uverbs/internal/mlx5, uverbs/internal/siw) imports rdma and this one and
// translates the vocabulary into its own ring format; no driver package
// imports another, and none imports uverbs. A driver's own refusals are
// errors of its own that match rdma's through errors.Is.
package provider
