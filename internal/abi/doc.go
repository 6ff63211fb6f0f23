// Package abi holds the Linux RDMA user-space ABI: the structs and constants
// of the kernel UAPI headers for uverbs (write and ioctl commands), the rxe
// provider's command data and shared queue memory, the mlx5 provider's
// command data (<rdma/mlx5-abi.h>), the RDMA CM
// (/dev/infiniband/rdma_cm) and NETLINK_RDMA. It is the only package that
// knows C layouts; everything else builds commands from these types.
//
// # Generated code
//
// zabi.go is generated from the UAPI headers of one pinned Debian
// linux-libc-dev version (6.1.192-3, see internal/gen) with
// `go tool cgo -godefs` on internal/gen/godefs_input.go.in (a .go file only in a temporary copy), the way
// golang.org/x/sys/unix is: cgo runs at generation time only, and the
// package is plain Go. To regenerate, from the module root:
//
//	go generate ./internal/abi
//
// This needs apt-get (to download the pinned .deb), dpkg-deb and gcc. If the
// pinned version can no longer be downloaded, the generator uses /usr/include
// when the installed linux-libc-dev is exactly that version, or the .deb
// named by $GOVERBS_LINUX_LIBC_DEV_DEB; otherwise it stops and says so. The
// header of each generated file records the SHA-256 of the generator's
// sources and of the file itself; `go test ./internal/abi` recomputes both,
// so a stale or hand-edited file fails the tests without a C compiler.
//
// The generated layout is used on linux/amd64 and linux/arm64 (both LP64;
// the UAPI structs use fixed-size, explicitly aligned members), which is why
// the files carry the build constraint amd64 || arm64. To confirm that, run
// `go run ./internal/gen -check-arm64` in this directory (needs
// gcc-aarch64-linux-gnu): it generates a second time with the arm64 compiler
// and fails unless both outputs are identical. The constraint names no GOOS:
// Go lays out fixed-size fields alike on every GOOS of one GOARCH, and the
// package builds elsewhere (darwin, windows) so that the module type-checks
// there, although only Linux has this ABI.
//
// # Names
//
// Constants keep their C names (IB_USER_VERBS_CMD_CREATE_CQ,
// RDMA_NLDEV_ATTR_DEV_INDEX) and are untyped. Structs drop the "struct"
// keyword and a prefix: ib_uverbs_X becomes UverbsX, rdma_ucm_X UcmX, rxe_X
// RxeX, mlx5_ib_X Mlx5X and mminfo RxeMminfo; the rest of the name and every member are
// CamelCased with Go initialisms (ib_uverbs_create_cq_resp ->
// UverbsCreateCQResp, max_send_wr -> MaxSendWR, wr_id -> WRID). The rules
// live in internal/names. Compiler padding and members whose C name starts
// with an underscore are blank (_) fields; members named reserved or pad keep
// their names because the kernel checks that they are zero.
//
// C unions are byte arrays of the union's size. Their variants that are
// anonymous structs have their own types (RxeSendWRRDMA, RxeSendWRAtomic,
// RxeSendWRUD, RxeSendWRMW, UverbsSendWRUD, ...) to lay over those bytes, and
// the offsets of union members and flexible array members are constants named
// <Type>Off<Path>, computed by offsetof at generation time: for example
// RxeSendWROffWRRDMARemoteAddr is offsetof(struct rxe_send_wr,
// wr.rdma.remote_addr) and RxeSendWQEOffDMASGE is where the SGE list (or
// inline data) of a send WQE starts.
//
// # Beyond the pinned headers
//
// linux_6_2.go adds, by hand, the UAPI that Linux 6.2 added for RDMA FLUSH
// and ATOMIC WRITE (present in 6.12, absent from the 6.1 headers).
// kernel.go holds ABI values defined outside the UAPI headers
// (RDMA_CM_EVENT_*, RXE_UVERBS_ABI_VERSION) and the RDMA_NL_GET_TYPE family
// of netlink macros as functions.
package abi

//go:generate go run ./internal/gen
