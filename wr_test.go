package rdma

import "testing"

// The texts of rdma-core's ibv_wr_opcode_str (libibverbs/enum_strs.c).
func TestWROpcodeString(t *testing.T) {
	for op, want := range map[WROpcode]string{OpWrite: "rdma-write", OpWriteImm: "rdma-write-with-imm", OpSend: "send",
		OpSendImm: "send-with-imm", OpRead: "rdma-read", OpAtomicCmpSwap: "atomic-cmp-and-swp",
		OpAtomicFetchAdd: "atomic-fetch-and-add", OpSendInv: "send-with-inv", 7: "opcode 7"} {
		if got := op.String(); got != want {
			t.Errorf("WROpcode(%d) = %q, want %q", uint32(op), got, want)
		}
	}
}
