package netlinkrdma_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/goverbs/rdma/netlinkrdma"
	"github.com/goverbs/rdma/uverbs"
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

// Find the uverbs char device of rxe0, as libibverbs does before opening it.
func ExampleDeviceChardev() {
	d, err := uverbs.LookupDevice("rxe0")
	if err != nil {
		log.Fatal(err) // errors.Is(err, uverbs.ErrNoDevice) when absent
	}
	cd, err := netlinkrdma.DeviceChardev(d.Index, "uverbs")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cd.Path(), "driver ABI", cd.ABI, "driver", cd.DriverID)
}
