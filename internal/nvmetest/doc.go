// Package nvmetest drives the kernel's own NVMe over RDMA target (nvmet,
// nvmet_rdma) and host (nvme_rdma) for tests: the lab loads both (test/lab
// guestModules) and has nvme-cli and fio (hostPackages), so that an NVMe-oF
// host or target written in Go can be tested against the kernel's other
// side.
//
// StartKernelTarget configures a subsystem through nvmet's configfs
// interface (/sys/kernel/config/nvmet): namespaces backed by regular files
// on tmpfs (/dev/shm), and a port with transport rdma on an IPv4 address of
// a lab RDMA device (10.77.0.1 on rxe, 10.79.0.1 on siw), linked to the
// subsystem. ConnectKernelHost connects the kernel's host to a subsystem
// with nvme connect and waits for its namespaces' block devices; Discover
// runs nvme discover. Everything they set up is undone by t.Cleanup, in the
// reverse order, also when the test fails halfway; a failed step undoes the
// steps before it at once. Their errors carry the kernel's messages logged
// meanwhile (/dev/kmsg), which say why nvmet or nvme-rdma refused.
//
// Start and ConnectHost are the same for a program (test/perfbench), with
// no testing.TB: they return their errors, Check says what is missing, and
// the caller's Close and Disconnect undo them, returning theirs.
//
// OpenKernelLog reads the kernel's messages for a test that checks what
// the kernel said; CountCalls counts calls of kernel functions with kprobe
// events (e.g. the host's own LOCAL_INVs), for what nothing else tells.
//
// RequireNVMeoF is the rule for tests that need them, as
// testutil.RequireRDMA: in the lab (GOVERBS_LAB=1) a missing module,
// configfs or nvme-cli fails the test; elsewhere the test is skipped.
//
// The package's own lab test (nvmetest_lab_test.go) is the baseline: the
// kernel's host against the kernel's target over every lab device pair.
// docs/testing.md §11 describes the helpers and what the lab found.
package nvmetest
