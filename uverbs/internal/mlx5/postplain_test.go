package mlx5

import (
	"bytes"
	"slices"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/provider"
)

// TestPostPlain: every request that passes uverbs PostSend's check
// (provider.PlainSend and, if inline, provider.PlainInline, with the limits uverbs
// gives an mlx5 QP: the SQ's max_send_sge and its max_inline_data, 0 for
// libmlx5's −4) is posted by PostPlain as Post posts it, alone and in a
// list of three: the same ring, IDs, doorbell and BlueFlame bytes, and the
// same refusal when the queue is full. Over every opcode and flag set,
// with and without an address vector and a UD destination, SGE lists from
// none to two, inline data from 0 bytes to one over the limit, on RC, UC
// and UD QPs, max_inline_data as computed and −4.
func TestPostPlain(t *testing.T) {
	var av AddressVector
	data := aligned(512)
	posted, full := 0, 0
	for _, typ := range []QPType{QPTypeRC, QPTypeUC, QPTypeUD} {
		for _, noInline := range []bool{false, true} {
			a, b := newTestQPWith(t, typ, 2, true), newTestQPWith(t, typ, 2, true)
			if noInline {
				a.sq.cfg.MaxInline, b.sq.cfg.MaxInline = -4, -4
			}
			cfg := a.sq.cfg
			lim := provider.SendLimits{QPType: typ, MaxSGE: cfg.MaxSGE, MaxInline: max(cfg.MaxInline, 0)}
			maxInline := uint32(lim.MaxInline)
			shapes := [][]uint32{{}, {0}, {1}, {maxInline}, {maxInline + 1}, {16, 32}}
			for op := SendOpcode(0); int(op) <= len(deviceOpcode); op++ {
				for flags := SendFlags(0); flags <= 2*sendFlagsKnown+1; flags++ {
					for _, withAV := range []bool{false, true} {
						for _, qpn := range []uint32{0, 0x4321} {
							for _, shape := range shapes {
								wr := SendWR{ID: uint64(posted), Opcode: op, Flags: flags, ImmData: 0x0c0d0e0f, RemoteAddr: 0x123456789abc, RKey: 0x77, RemoteQPN: qpn}
								ud := provider.UDAddr{RemoteQPN: qpn}
								if withAV {
									wr.AV, ud.AHNum = &av, 1
								}
								off := uint64(0)
								for _, n := range shape {
									wr.SGEs = append(wr.SGEs, SGE{Addr: uintptrOf(data) + off, Length: n, LKey: 0x99})
									off += uint64(n)
								}
								if !provider.PlainSend(op, flags&^SendInline, len(wr.SGEs), ud, &lim) ||
									flags&SendInline != 0 && !provider.PlainInline(op, wr.SGEs, &lim) {
									continue
								}
								for _, list := range [][]SendWR{{wr}, {wr, wr, wr}} {
									ia, ea := a.sq.PostPlain(list)
									ib, eb := b.sq.Post(list)
									if ia != ib || (ea == nil) != (eb == nil) || (ea != nil && ea.Error() != eb.Error()) {
										t.Fatalf("%v QP, max_inline_data %d, %d × %+v: PostPlain %d, %v; Post %d, %v", typ, cfg.MaxInline, len(list), wr, ia, ea, ib, eb)
									}
									if !bytes.Equal(a.sq.ring, b.sq.ring) || !bytes.Equal(a.dbrec, b.dbrec) || !bytes.Equal(a.uar, b.uar) ||
										a.sq.head.Load() != b.sq.head.Load() || a.sq.curPost != b.sq.curPost ||
										!slices.Equal(a.sq.wrid, b.sq.wrid) || !slices.Equal(a.sq.wqeHead, b.sq.wqeHead) {
										t.Fatalf("%v QP, max_inline_data %d, %d × %+v: PostPlain and Post left different queues", typ, cfg.MaxInline, len(list), wr)
									}
									posted++
									if ea != nil {
										full++
									}
									if posted/16%4 != 0 { // every fourth run of 16 lists, none completes: the queue fills
										a.sq.Retire()
										b.sq.Retire()
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if full == 0 || full > posted/2 {
		t.Fatalf("%d of %d lists refused: want some, for a full queue, and most posted", full, posted)
	}
	t.Logf("%d lists posted both ways, %d refused for a full queue", posted, full)
}
