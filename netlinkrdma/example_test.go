package netlinkrdma_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/goverbs/rdma/netlinkrdma"
)

// Create a Soft-RoCE device on eth0 unless one is there already, the
// equivalent of `modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0`.
func ExampleLinkAdd() {
	err := netlinkrdma.LinkAdd("rxe0", "eth0")
	switch {
	case errors.Is(err, netlinkrdma.ErrExists):
		log.Print(err) // names the existing device
	case err != nil:
		log.Fatal(err) // says what to do: modprobe, ip link, run as root...
	}
}

// List devices like `rdma link show`.
func ExampleDevices() {
	devs, err := netlinkrdma.Devices()
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range devs {
		for _, p := range d.Ports {
			fmt.Printf("link %s/%d state %s physical_state %s netdev %s (driver %s, node GUID %s)\n",
				d.Name, p.Index, p.State, p.PhysState, p.Netdev, d.Driver, d.NodeGUID)
		}
	}
}

// Find the uverbs char device of rxe0, as libibverbs does before opening it.
func ExampleDeviceChardev() {
	d, err := netlinkrdma.DeviceByName("rxe0")
	if err != nil {
		log.Fatal(err) // errors.Is(err, netlinkrdma.ErrDeviceNotFound) when absent
	}
	cd, err := netlinkrdma.DeviceChardev(d.Index, "uverbs")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cd.Path(), "driver ABI", cd.ABI, "driver", cd.DriverID)
}
