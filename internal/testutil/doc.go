// Package testutil holds what every test binary of the module shares: the
// TestMain wrapper with the fd/mmap leak tracer, and the rule for tests that
// need an RDMA device (skip on an ordinary machine, fail in the rxe lab).
package testutil
