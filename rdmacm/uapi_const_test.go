package rdmacm

import (
	"testing"

	"github.com/goverbs/rdma/internal/abi"
)

// The public constants are written as numbers, so that the API snapshot
// (api/rdmacm.txt) shows their values; each must equal the UAPI constant it
// stands for.
func TestConstantsMatchUAPI(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"PortSpaceTCP", uint64(PortSpaceTCP), uint64(abi.RDMA_PS_TCP)},
		{"PortSpaceUDP", uint64(PortSpaceUDP), uint64(abi.RDMA_PS_UDP)},
		{"EventAddrResolved", uint64(EventAddrResolved), uint64(abi.RDMA_CM_EVENT_ADDR_RESOLVED)},
		{"EventAddrError", uint64(EventAddrError), uint64(abi.RDMA_CM_EVENT_ADDR_ERROR)},
		{"EventRouteResolved", uint64(EventRouteResolved), uint64(abi.RDMA_CM_EVENT_ROUTE_RESOLVED)},
		{"EventRouteError", uint64(EventRouteError), uint64(abi.RDMA_CM_EVENT_ROUTE_ERROR)},
		{"EventConnectRequest", uint64(EventConnectRequest), uint64(abi.RDMA_CM_EVENT_CONNECT_REQUEST)},
		{"EventConnectResponse", uint64(EventConnectResponse), uint64(abi.RDMA_CM_EVENT_CONNECT_RESPONSE)},
		{"EventConnectError", uint64(EventConnectError), uint64(abi.RDMA_CM_EVENT_CONNECT_ERROR)},
		{"EventUnreachable", uint64(EventUnreachable), uint64(abi.RDMA_CM_EVENT_UNREACHABLE)},
		{"EventRejected", uint64(EventRejected), uint64(abi.RDMA_CM_EVENT_REJECTED)},
		{"EventEstablished", uint64(EventEstablished), uint64(abi.RDMA_CM_EVENT_ESTABLISHED)},
		{"EventDisconnected", uint64(EventDisconnected), uint64(abi.RDMA_CM_EVENT_DISCONNECTED)},
		{"EventDeviceRemoval", uint64(EventDeviceRemoval), uint64(abi.RDMA_CM_EVENT_DEVICE_REMOVAL)},
		{"EventMulticastJoin", uint64(EventMulticastJoin), uint64(abi.RDMA_CM_EVENT_MULTICAST_JOIN)},
		{"EventMulticastError", uint64(EventMulticastError), uint64(abi.RDMA_CM_EVENT_MULTICAST_ERROR)},
		{"EventAddrChange", uint64(EventAddrChange), uint64(abi.RDMA_CM_EVENT_ADDR_CHANGE)},
		{"EventTimewaitExit", uint64(EventTimewaitExit), uint64(abi.RDMA_CM_EVENT_TIMEWAIT_EXIT)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, the UAPI has %#x", c.name, c.got, c.want)
		}
	}
}
