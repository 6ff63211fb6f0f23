package provider

import (
	"testing"

	"github.com/goverbs/rdma"
)

// TestPlainSend checks that every request PlainSend lets past (its flags
// without SendInline, and with SendInline PlainInline too, as PostSend asks
// them), CheckSend accepts, over every opcode, flag set, SGE count and
// length and kind of UD address, and that the common requests are plain.
func TestPlainSend(t *testing.T) {
	plain := 0
	for _, typ := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		for cfgs := range 3 * 2 {
			maxSGE, maxInline := cfgs%3, 64*(cfgs/3)
			lim := &SendLimits{QPType: typ, MaxSGE: maxSGE, MaxInline: maxInline}
			for op := rdma.WROpcode(0); op <= OpAtomicWrite+1; op++ {
				for flags := rdma.SendFlags(0); flags <= 2*SendFlagsKnown+1; flags++ {
					for nsge := 0; nsge <= 2; nsge++ {
						for _, length := range []uint32{0, 64, 65, 1<<32 - 1} {
							sges := make([]rdma.SGE, nsge)
							for i := range sges {
								sges[i] = rdma.SGE{Addr: 0x1000, Length: length, LKey: 7}
							}
							for _, ud := range []UDAddr{{}, {RemoteQPN: 5, RemoteQKey: 7, AHNum: 1}, {RemoteQPN: 5}} {
								if !PlainSend(op, flags&^rdma.SendInline, nsge, ud, lim) || flags&rdma.SendInline != 0 && !PlainInline(op, sges, lim) {
									continue
								}
								plain++
								if err := CheckSend(op, flags, sges, 0x1001, ud, lim); err != nil {
									t.Errorf("%v QP (max_send_sge %d, max_inline_data %d): PlainSend passed opcode %d, flags %#x, %d SGEs of %d bytes, %+v, which CheckSend refuses: %v",
										typ, maxSGE, maxInline, op, flags, nsge, length, ud, err)
								}
							}
						}
					}
				}
			}
		}
	}
	rc := &SendLimits{QPType: QPTypeRC, MaxSGE: 1, MaxInline: 64}
	ud := &SendLimits{QPType: QPTypeUD, MaxSGE: 1, MaxInline: 64}
	for _, c := range []struct {
		op    rdma.WROpcode
		flags rdma.SendFlags
		ud    UDAddr
		lim   *SendLimits
	}{
		{rdma.OpWrite, rdma.SendSignaled, UDAddr{}, rc},
		{rdma.OpRead, rdma.SendSignaled | rdma.SendFence, UDAddr{}, rc},
		{rdma.OpSendImm, rdma.SendSolicited, UDAddr{}, rc},
		{rdma.OpSend, rdma.SendSignaled | rdma.SendInline, UDAddr{}, rc},
		{rdma.OpSend, rdma.SendSignaled, UDAddr{RemoteQPN: 5, RemoteQKey: 7, AHNum: 1}, ud},
	} {
		if !PlainSend(c.op, c.flags&^rdma.SendInline, 1, c.ud, c.lim) || c.flags&rdma.SendInline != 0 && !PlainInline(c.op, []rdma.SGE{{Length: 64}}, c.lim) {
			t.Errorf("opcode %d, flags %#x on a %v QP is not plain", c.op, c.flags, c.lim.QPType)
		}
	}
	t.Logf("%d plain requests checked", plain)
}
