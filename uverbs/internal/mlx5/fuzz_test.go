package mlx5

import (
	"encoding/hex"
	"errors"
	"testing"
)

// FuzzPoll feeds arbitrary completion entries (what a device, or a faulty
// one, writes) to a CQ with a QP, its receive queue and an SRQ registered:
// Poll must never panic or index outside the queues, whatever the opcode,
// counters, QPN or user index say, and must consume exactly the entries it
// reports or refuses.
func FuzzPoll(f *testing.F) {
	for _, s := range []cqeSpec{
		{opcode: cqeReq, qpn: 0x42, wqeOpcode: opcodeRDMARead, wqeCtr: 3},
		{opcode: cqeRespSendImm, qpn: 0x42, flagsRQPN: 0x30000001},
		{opcode: cqeRespSend, qpn: 0x42, srqnUIDX: 0x99, wqeCtr: 0xffff},
		{opcode: cqeReqErr, qpn: 0x42, syndrome: 0x05},
		{opcode: cqeRespErr, qpn: 0x43, syndrome: 0x22, vendor: 0x93},
		{opcode: cqeSigErr, qpn: 0x42},
	} {
		b, _ := hex.DecodeString(s.hex())
		f.Add(b, uint8(0))
		f.Add(b, uint8(1))
	}
	f.Fuzz(func(t *testing.T, cqe []byte, version uint8) {
		if len(cqe) > CQESize*4 {
			cqe = cqe[:CQESize*4]
		}
		ring := aligned(4 * CQESize)
		for i := range 4 {
			ring[i*CQESize+cqeOpOwn] = cqeInvalid << 4
		}
		copy(ring, cqe)
		cq, err := NewCQ(ring, aligned(8), aligned(4096), CQConfig{CQN: 1, Entries: 4, CQEVersion: int(version & 1)})
		if err != nil {
			t.Fatal(err)
		}
		srqCfg, srqBytes, err := SRQSize(&testLimits, 4, 1)
		if err != nil {
			t.Fatal(err)
		}
		srq, err := NewSRQ(aligned(srqBytes), aligned(8), srqCfg)
		if err != nil {
			t.Fatal(err)
		}
		sq := &SQ{cfg: SQConfig{WQECount: 8}, wrid: make([]uint64, 8), wqeHead: make([]uint32, 8)}
		rq := &RQ{cfg: RQConfig{WQECount: 4}, wrid: make([]uint64, 4)}
		cq.RegisterQP(0x42, &QP{SQ: sq, RQ: rq})
		cq.RegisterQP(0x43, &QP{SQ: sq, SRQ: srq})
		cq.RegisterSRQ(0x99, srq)
		wcs := make([]WC, 8)
		for range 3 {
			before := cq.ConsumerIndex()
			n, err := cq.Poll(wcs)
			consumed := int(cq.ConsumerIndex() - before)
			if err != nil && !errors.Is(err, ErrPoll) {
				t.Fatalf("Poll: %v", err)
			}
			want := n
			if err != nil {
				want++
			}
			if consumed != want || consumed > 4 {
				t.Fatalf("Poll returned %d (%v) but consumed %d entries", n, err, consumed)
			}
		}
	})
}
