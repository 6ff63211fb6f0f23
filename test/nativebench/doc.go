// Command nativebench measures the user-space cost of posting and polling,
// natively on the build machine: rdma-core's rxe provider
// (providers/rxe/rxe.c, compiled unmodified into harness/harness.c from a checkout
// of each tag asked for) against uverbs (BenchmarkNative in
// uverbs/native_bench_test.go), the same work requests on rings laid out as
// rxe's kernel lays them out, with a fake kernel that only moves the ring
// indices and the doorbell system call left out on both sides. `make
// bench-native` runs it from the module root:
//
//	nativebench [-tags v44.0,v64.0] [-rounds 5] [-out BENCHMARKS.md] [-profile DIR]
//
// It first checks that every post row writes the same WQE bytes as
// rdma-core's provider (docs/testing.md §7) and fails if one does not, then
// runs each build and ours in turn for -rounds rounds and writes the median
// ns per work request of each row. The checkouts live in
// $GOVERBS_RDMA_CORE_CACHE (~/.cache/goverbs-rdma-core) as one directory
// per tag; a missing one is cloned from $GOVERBS_RDMA_CORE_REPO
// (https://github.com/linux-rdma/rdma-core unless set; a local clone's path
// works). It needs gcc, python3 (the checkout's own
// buildlib/make_abi_structs.py makes the kernel-abi headers), nm and git,
// and says which is missing. Not part of make test.
package main
