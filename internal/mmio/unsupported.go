//go:build !amd64 && !arm64

package mmio

// internal/mmio has device barriers only for amd64 and arm64 (see
// barrier_amd64.s, barrier_arm64.s and rdma-core util/udma_barrier.h). To
// port it, add barrier_$GOARCH.s with that architecture's barriers and add
// the GOARCH to the build constraints. The reference below is undefined on
// purpose so that the build stops here with this explanation.
var _ = internal_mmio_supports_only_GOARCH_amd64_and_arm64_add_barrier_GOARCH_s_to_port_it
