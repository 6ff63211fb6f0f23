// Package testutil holds what every test binary of the module shares: the
// TestMain wrapper with the fd/mmap leak tracer, the rule for tests that
// need an RDMA device (skip on an ordinary machine, fail in the rxe lab),
// and StartSide, which runs one peer of an interoperability test: one of
// our programs in the test's process or rdma-core's or perftest's tool as a
// process.
package testutil
