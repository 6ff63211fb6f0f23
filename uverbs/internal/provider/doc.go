// Package provider is the vocabulary every user-space data path of uverbs
// speaks: the work requests a caller posts (SGE, SendWR, RecvWR), the
// completions it polls (WC with its status, opcode and flags), the opcode
// and flag values (libibverbs' enum ibv_wr_opcode and ibv_send_flags, which
// equal the kernel's enum ib_wr_opcode and ib_send_flags), the checks
// every ibv_post_send and ibv_post_recv makes whatever the driver
// (CheckSend, PlainSend, CheckRecv), and the errors of a refused post.
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
// Package uverbs aliases the vocabulary in its public API (uverbs.WC is
// provider.WC). Each driver package (uverbs/internal/rxe,
// uverbs/internal/mlx5, uverbs/internal/siw) imports this one and translates the vocabulary
// into its own ring format; no driver package imports another, and none
// imports uverbs. A driver's own refusals are errors of its own that match
// the errors here through errors.Is.
package provider
