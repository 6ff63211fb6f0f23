// Command rdma-devinfo prints the attributes of the RDMA devices, in the
// format of rdma-core's `ibv_devinfo`, without libibverbs.
//
// Usage:
//
//	rdma-devinfo [-d DEVICE] [-i PORT] [-v] [-l]
//
// -d selects a device (default: all), -i a port (default: all), -v prints
// every attribute, including the device limits and the GID tables, and -l
// lists the device names only.
package main
