package rdmacm

import (
	"encoding/binary"
	"strconv"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/uverbs"
)

// EventType is the type of a CM event (enum rdma_cm_event_type, kernel:
// include/rdma/rdma_cm.h; the same numbers in 6.1 and 6.12).
type EventType uint32

// CM event types (rdma-core: enum rdma_cm_event_type).
const (
	EventAddrResolved    EventType = 0  // RDMA_CM_EVENT_ADDR_RESOLVED
	EventAddrError       EventType = 1  // RDMA_CM_EVENT_ADDR_ERROR
	EventRouteResolved   EventType = 2  // RDMA_CM_EVENT_ROUTE_RESOLVED
	EventRouteError      EventType = 3  // RDMA_CM_EVENT_ROUTE_ERROR
	EventConnectRequest  EventType = 4  // RDMA_CM_EVENT_CONNECT_REQUEST
	EventConnectResponse EventType = 5  // RDMA_CM_EVENT_CONNECT_RESPONSE
	EventConnectError    EventType = 6  // RDMA_CM_EVENT_CONNECT_ERROR
	EventUnreachable     EventType = 7  // RDMA_CM_EVENT_UNREACHABLE
	EventRejected        EventType = 8  // RDMA_CM_EVENT_REJECTED
	EventEstablished     EventType = 9  // RDMA_CM_EVENT_ESTABLISHED
	EventDisconnected    EventType = 10 // RDMA_CM_EVENT_DISCONNECTED
	EventDeviceRemoval   EventType = 11 // RDMA_CM_EVENT_DEVICE_REMOVAL
	EventMulticastJoin   EventType = 12 // RDMA_CM_EVENT_MULTICAST_JOIN
	EventMulticastError  EventType = 13 // RDMA_CM_EVENT_MULTICAST_ERROR
	EventAddrChange      EventType = 14 // RDMA_CM_EVENT_ADDR_CHANGE
	EventTimewaitExit    EventType = 15 // RDMA_CM_EVENT_TIMEWAIT_EXIT
)

var eventNames = [...]string{
	"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
	"RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
	"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
	"RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
	"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
	"RDMA_CM_EVENT_TIMEWAIT_EXIT",
}

// String returns the name rdma_event_str gives the event
// ("RDMA_CM_EVENT_ESTABLISHED"), or "UNKNOWN EVENT" as it does.
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "UNKNOWN EVENT (" + strconv.Itoa(int(t)) + ")"
}

// Event is one CM event of an ID, decoded from struct rdma_ucm_event_resp.
// Events are plain values: nothing needs acknowledging (the kernel keeps no
// reference for an event once it is read; rdma_ack_cm_event exists in
// librdmacm for its own bookkeeping).
type Event struct {
	Type EventType
	// Status is 0, a negative errno (-110 ETIMEDOUT for UNREACHABLE and
	// CONNECT_ERROR), or for REJECTED the positive IB CM reject reason
	// (28 consumer defined, 8 no listener on that port).
	Status int

	// ID is the ID the event concerns (for a CONNECT_REQUEST, the
	// listener). Set by EventChannel.GetEvents; ID.GetEvent leaves it nil.
	ID *ID

	// Request is the new ID of a CONNECT_REQUEST (the listener's event).
	Request *ID

	// PrivateData is what the peer sent with its CONNECT, ACCEPT or REJECT,
	// at the CM's fixed size (56, 196 or 148 bytes), zero padded: a
	// protocol that needs the length carries it in the data.
	PrivateData []byte

	// Connection parameters (CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED).
	// For a request, ResponderResources and InitiatorDepth are from this
	// side's point of view (kernel: core/cma.c cma_set_rep_event_data).
	Param ConnParam
	// RemoteQPN is the peer's QP number (RC requests and replies; UD
	// ESTABLISHED).
	RemoteQPN uint32
	// SRQ reports that the peer uses a shared receive queue.
	SRQ bool

	// UD ESTABLISHED: the peer's QKey and the address vector to reach it.
	QKey uint32
	AH   uverbs.AHAttr
}

// decodeEvent fills an Event from the kernel's response, except Request.
func decodeEvent(r *abi.UcmEventResp, ud bool) Event {
	e := Event{Type: EventType(r.Event), Status: int(int32(r.Status))}
	if ud && (e.Type == EventEstablished || e.Type == EventConnectRequest) {
		p := (*abi.UcmUDParam)(unsafe.Pointer(&r.Param[0]))
		e.RemoteQPN = p.QPNum
		e.QKey = p.QKey
		e.AH = ahFromKernel(&p.AHAttr)
		e.PrivateData = clonePrivateData(p.PrivateData[:], p.PrivateDataLen)
		return e
	}
	switch e.Type {
	case EventConnectRequest, EventConnectResponse, EventEstablished, EventRejected,
		EventDisconnected, EventUnreachable, EventConnectError:
		p := (*abi.UcmConnParam)(unsafe.Pointer(&r.Param[0]))
		e.RemoteQPN = p.QPNum
		e.SRQ = p.SRQ != 0
		e.Param = ConnParam{
			ResponderResources: p.ResponderResources,
			InitiatorDepth:     p.InitiatorDepth,
			RetryCount:         p.RetryCount,
			RNRRetryCount:      p.RNRRetryCount,
		}
		e.PrivateData = clonePrivateData(p.PrivateData[:], p.PrivateDataLen)
	}
	return e
}

func clonePrivateData(b []byte, n uint8) []byte {
	if n == 0 {
		return nil
	}
	return append([]byte(nil), b[:n]...)
}

// ahFromKernel converts struct ib_uverbs_ah_attr, the address vector form
// of the CM's responses (INIT_QP_ATTR, UD events), to uverbs.AHAttr.
func ahFromKernel(a *abi.UverbsAHAttr) uverbs.AHAttr {
	return uverbs.AHAttr{
		DGID:         uverbs.GID(a.GRH.DGID),
		FlowLabel:    a.GRH.FlowLabel,
		SGIDIndex:    int(a.GRH.SGIDIndex),
		HopLimit:     a.GRH.HopLimit,
		TrafficClass: a.GRH.TrafficClass,
		SL:           a.SL,
		Port:         a.PortNum,
		DLID:         a.DLID,
		SrcPathBits:  a.SrcPathBits,
		StaticRate:   a.StaticRate,
	}
}

// beUint64 reads 8 raw big-endian bytes the kernel stored in a u64 field
// (node_guid of the query responses is be64, docs/abi.md §4.2).
func beUint64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}
