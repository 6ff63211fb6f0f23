package siw_test

import (
	"reflect"
	"testing"

	"github.com/goverbs/rdma/uverbs"
	"github.com/goverbs/rdma/uverbs/internal/siw"
)

// SendWR, RecvWR, SGE and WC have the fields of uverbs' types at the same
// offsets, with the same sizes and kinds, so that uverbs can hand its
// callers' values to this package without copying them.
func TestTypesMatchUverbs(t *testing.T) {
	for _, c := range []struct{ ours, theirs reflect.Type }{
		{reflect.TypeFor[siw.SendWR](), reflect.TypeFor[uverbs.SendWR]()},
		{reflect.TypeFor[siw.RecvWR](), reflect.TypeFor[uverbs.RecvWR]()},
		{reflect.TypeFor[siw.SGE](), reflect.TypeFor[uverbs.SGE]()},
		{reflect.TypeFor[siw.WC](), reflect.TypeFor[uverbs.WC]()},
	} {
		if c.ours.Size() != c.theirs.Size() || c.ours.NumField() != c.theirs.NumField() {
			t.Errorf("%v: %d bytes, %d fields; %v: %d bytes, %d fields", c.ours, c.ours.Size(), c.ours.NumField(), c.theirs, c.theirs.Size(), c.theirs.NumField())
			continue
		}
		for i := range c.theirs.NumField() {
			f, g := c.theirs.Field(i), c.ours.Field(i)
			if f.Name != g.Name || f.Offset != g.Offset || f.Type.Size() != g.Type.Size() || f.Type.Kind() != g.Type.Kind() {
				t.Errorf("%v.%s at %d (%v) but %v.%s at %d (%v)", c.theirs, f.Name, f.Offset, f.Type, c.ours, g.Name, g.Offset, g.Type)
			}
		}
	}
	// The opcode, flag and completion values are the verbs' values.
	for _, c := range []struct {
		name      string
		ours, get uint32
	}{
		{"OpWrite", uint32(siw.OpWrite), uint32(uverbs.OpWrite)},
		{"OpWriteImm", uint32(siw.OpWriteImm), uint32(uverbs.OpWriteImm)},
		{"OpSend", uint32(siw.OpSend), uint32(uverbs.OpSend)},
		{"OpSendImm", uint32(siw.OpSendImm), uint32(uverbs.OpSendImm)},
		{"OpRead", uint32(siw.OpRead), uint32(uverbs.OpRead)},
		{"OpAtomicCmpSwap", uint32(siw.OpAtomicCmpSwap), uint32(uverbs.OpAtomicCmpSwap)},
		{"OpAtomicFetchAdd", uint32(siw.OpAtomicFetchAdd), uint32(uverbs.OpAtomicFetchAdd)},
		{"SendFence", uint32(siw.SendFence), uint32(uverbs.SendFence)},
		{"SendSignaled", uint32(siw.SendSignaled), uint32(uverbs.SendSignaled)},
		{"SendSolicited", uint32(siw.SendSolicited), uint32(uverbs.SendSolicited)},
		{"SendInline", uint32(siw.SendInline), uint32(uverbs.SendInline)},
		{"WCSuccess", uint32(siw.WCSuccess), uint32(uverbs.WCSuccess)},
		{"WCLocalLengthError", uint32(siw.WCLocalLengthError), uint32(uverbs.WCLocalLengthError)},
		{"WCLocalQPOpError", uint32(siw.WCLocalQPOpError), uint32(uverbs.WCLocalQPOpError)},
		{"WCLocalProtectionError", uint32(siw.WCLocalProtectionError), uint32(uverbs.WCLocalProtectionError)},
		{"WCFlushError", uint32(siw.WCFlushError), uint32(uverbs.WCFlushError)},
		{"WCBadResponseError", uint32(siw.WCBadResponseError), uint32(uverbs.WCBadResponseError)},
		{"WCLocalAccessError", uint32(siw.WCLocalAccessError), uint32(uverbs.WCLocalAccessError)},
		{"WCRemoteInvalidRequestError", uint32(siw.WCRemoteInvalidRequestError), uint32(uverbs.WCRemoteInvalidRequestError)},
		{"WCRemoteAccessError", uint32(siw.WCRemoteAccessError), uint32(uverbs.WCRemoteAccessError)},
		{"WCGeneralError", uint32(siw.WCGeneralError), uint32(uverbs.WCGeneralError)},
		{"WCOpSend", uint32(siw.WCOpSend), uint32(uverbs.WCOpSend)},
		{"WCOpRDMAWrite", uint32(siw.WCOpRDMAWrite), uint32(uverbs.WCOpRDMAWrite)},
		{"WCOpRDMARead", uint32(siw.WCOpRDMARead), uint32(uverbs.WCOpRDMARead)},
		{"WCOpCompSwap", uint32(siw.WCOpCompSwap), uint32(uverbs.WCOpCompSwap)},
		{"WCOpFetchAdd", uint32(siw.WCOpFetchAdd), uint32(uverbs.WCOpFetchAdd)},
		{"WCOpLocalInv", uint32(siw.WCOpLocalInv), uint32(uverbs.WCOpLocalInv)},
		{"WCOpRecv", uint32(siw.WCOpRecv), uint32(uverbs.WCOpRecv)},
		{"WCWithInvalidate", uint32(siw.WCWithInvalidate), uint32(uverbs.WCWithInvalidate)},
	} {
		if c.ours != c.get {
			t.Errorf("%s = %d here, %d in uverbs", c.name, c.ours, c.get)
		}
	}
}
