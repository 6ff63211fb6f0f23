// Command nvmeof is an NVMe over Fabrics host over RDMA on package nvmeof,
// for a host without the kernel's nvme-rdma driver (or a container that
// cannot load it): it lists what a target's discovery controller offers,
// identifies a subsystem's controller and namespaces, copies a namespace
// to and from files, and measures I/O.
//
//	nvmeof discover -a 10.0.0.1
//	nvmeof id-ctrl -a 10.0.0.1 -n nqn.2024-01.io.example:disk1
//	nvmeof list -a 10.0.0.1 -n nqn.2024-01.io.example:disk1
//	nvmeof read -a 10.0.0.1 -n nqn.2024-01.io.example:disk1 -N 1 -o disk.img
//	nvmeof write -a 10.0.0.1 -n nqn.2024-01.io.example:disk1 -N 1 -i disk.img
//	nvmeof perf -a 10.0.0.1 -n nqn.2024-01.io.example:disk1 -rw randread -bs 4096 -qd 32 -t 10s
//
// discover and id-ctrl print with nvme-cli's labels (`nvme discover`, `nvme
// id-ctrl`; id-ctrl prints the fields a host uses, not all of them). perf
// keeps -qd reads or writes in flight, one goroutine each, for -t and prints
// IOPS, bandwidth and latency percentiles; -queues spreads them over that
// many I/O queues; -json prints them as one JSON object, with the heap
// allocations per I/O of the whole process while the I/O ran. A bad command line prints the mistake and the usage on
// stderr and exits with 2; a failure exits with 1.
package main
