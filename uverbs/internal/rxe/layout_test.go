package rxe

import (
	"testing"
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
)

// TestLayoutFacts checks every offset the codec uses, derived from
// internal/abi, against offsetof compiled on x86_64 from the kernel's
// layouts (kernel: drivers/infiniband/sw/rxe/rxe_queue.h struct
// rxe_queue_buf; include/uapi/rdma/rdma_user_rxe.h struct rxe_send_wqe,
// rxe_recv_wqe; include/uapi/rdma/ib_user_verbs.h struct ib_uverbs_wc).
func TestLayoutFacts(t *testing.T) {
	facts := []struct {
		name      string
		got, want int
	}{
		{"rxe_queue_buf.log2_elem_size", ringLog2ElemSize, 0},
		{"rxe_queue_buf.index_mask", ringIndexMask, 4},
		{"rxe_queue_buf.producer_index", ringProducer, 128},
		{"rxe_queue_buf.consumer_index", ringConsumer, 256},
		{"rxe_queue_buf.data", ringData, 384},
		{"sizeof(rxe_queue_buf)", int(unsafe.Sizeof(abi.RxeQueueBuf{})), 384},
		{"rxe_sge.addr", sgeAddr, 0},
		{"rxe_sge.length", sgeLength, 8},
		{"rxe_sge.lkey", sgeLKey, 12},
		{"sizeof(rxe_sge)", SGESize, 16},
		{"rxe_dma_info.length", dmaLength, 0},
		{"rxe_dma_info.resid", dmaResid, 4},
		{"rxe_dma_info.cur_sge", dmaCurSGE, 8},
		{"rxe_dma_info.num_sge", dmaNumSGE, 12},
		{"rxe_dma_info.sge_offset", dmaSGEOffset, 16},
		{"rxe_dma_info.sge", dmaPayload, 24},
		{"sizeof(rxe_dma_info)", int(unsafe.Sizeof(abi.RxeDMAInfo{})), 24},
		{"rxe_send_wqe.wr.wr_id", sendWRID, 0},
		{"rxe_send_wqe.wr.opcode", sendOpcode, 12},
		{"rxe_send_wqe.wr.send_flags", sendFlags, 16},
		{"rxe_send_wqe.wr.ex", sendEx, 20},
		{"rxe_send_wqe.wr.ex.invalidate_rkey", int(abi.RxeSendWROffExInvalidateRKey), 20},
		{"rxe_send_wqe.wr.wr.rdma.remote_addr", sendRDMAAddr, 24},
		{"rxe_send_wqe.wr.wr.rdma.rkey", sendRDMARKey, 32},
		{"rxe_send_wqe.wr.wr.atomic.remote_addr", sendAtomicAddr, 24},
		{"rxe_send_wqe.wr.wr.atomic.compare_add", sendAtomicCompareAdd, 32},
		{"rxe_send_wqe.wr.wr.atomic.swap", sendAtomicSwap, 40},
		{"rxe_send_wqe.wr.wr.atomic.rkey", sendAtomicRKey, 48},
		{"rxe_send_wqe.wr.wr.ud.remote_qpn", sendUDRemoteQPN, 24},
		{"rxe_send_wqe.wr.wr.ud.remote_qkey", sendUDRemoteQKey, 28},
		{"rxe_send_wqe.wr.wr.ud.ah_num", sendUDAHNum, 36},
		{"rxe_send_wqe.wr.wr.ud.av", sendUDAV, 56},
		{"sizeof(struct rxe_av)", avSize, 88},
		{"sizeof(rxe_send_wr)", int(unsafe.Sizeof(abi.RxeSendWR{})), 144},
		{"rxe_send_wqe.status", sendStatus, 144},
		{"rxe_send_wqe.state", sendState, 148},
		{"rxe_send_wqe.iova", sendIOVA, 152},
		{"rxe_send_wqe.dma", sendDMA, 184},
		{"rxe_send_wqe.dma.sge", SendWQEHeaderSize, 208},
		{"sizeof(rxe_send_wqe)", int(unsafe.Sizeof(abi.RxeSendWQE{})), 208},
		{"rxe_recv_wqe.wr_id", recvWRID, 0},
		{"rxe_recv_wqe.dma", recvDMA, 16},
		{"rxe_recv_wqe.dma.sge", RecvWQEHeaderSize, 40},
		{"sizeof(rxe_recv_wqe)", int(unsafe.Sizeof(abi.RxeRecvWQE{})), 40},
		{"ib_uverbs_wc.wr_id", wcWRID, 0},
		{"ib_uverbs_wc.status", wcStatus, 8},
		{"ib_uverbs_wc.opcode", wcOpcode, 12},
		{"ib_uverbs_wc.vendor_err", wcVendorErr, 16},
		{"ib_uverbs_wc.byte_len", wcByteLen, 20},
		{"ib_uverbs_wc.ex", wcEx, 24},
		{"ib_uverbs_wc.ex.invalidate_rkey", int(abi.UverbsWCOffExInvalidateRKey), 24},
		{"ib_uverbs_wc.qp_num", wcQPNum, 28},
		{"ib_uverbs_wc.src_qp", wcSrcQP, 32},
		{"ib_uverbs_wc.wc_flags", wcFlags, 36},
		{"ib_uverbs_wc.pkey_index", wcPKeyIndex, 40},
		{"ib_uverbs_wc.slid", wcSLID, 42},
		{"ib_uverbs_wc.sl", wcSL, 44},
		{"ib_uverbs_wc.dlid_path_bits", wcDLIDPathBits, 45},
		{"ib_uverbs_wc.port_num", wcPortNum, 46},
		{"sizeof(ib_uverbs_wc)", WCSize, 48},
	}
	for _, f := range facts {
		if f.got != f.want {
			t.Errorf("%s at %d, want %d", f.name, f.got, f.want)
		}
	}
}

// TestConstantsMatchABI checks the package's Go-typed constants against the
// UAPI values in internal/abi.
func TestConstantsMatchABI(t *testing.T) {
	ops := []struct {
		op   SendOpcode
		want int
	}{
		{OpRDMAWrite, abi.IB_UVERBS_WR_RDMA_WRITE},
		{OpRDMAWriteWithImm, abi.IB_UVERBS_WR_RDMA_WRITE_WITH_IMM},
		{OpSend, abi.IB_UVERBS_WR_SEND},
		{OpSendWithImm, abi.IB_UVERBS_WR_SEND_WITH_IMM},
		{OpRDMARead, abi.IB_UVERBS_WR_RDMA_READ},
		{OpAtomicCmpAndSwp, abi.IB_UVERBS_WR_ATOMIC_CMP_AND_SWP},
		{OpAtomicFetchAndAdd, abi.IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD},
		{OpLocalInv, abi.IB_UVERBS_WR_LOCAL_INV},
		{OpBindMW, abi.IB_UVERBS_WR_BIND_MW},
		{OpSendWithInv, abi.IB_UVERBS_WR_SEND_WITH_INV},
		{OpFlush, abi.IB_UVERBS_WR_FLUSH},
		{OpAtomicWrite, abi.IB_UVERBS_WR_ATOMIC_WRITE},
	}
	for _, o := range ops {
		if int(o.op) != o.want {
			t.Errorf("opcode %d, UAPI value %d", o.op, o.want)
		}
	}
	if QPTypeRC != abi.IB_UVERBS_QPT_RC || QPTypeUC != abi.IB_UVERBS_QPT_UC || QPTypeUD != abi.IB_UVERBS_QPT_UD {
		t.Error("QP type values differ from IB_UVERBS_QPT_*")
	}
	// The Go SGE has the layout of struct rxe_sge, so a caller's []SGE
	// could be handed over unchanged.
	if unsafe.Sizeof(SGE{}) != unsafe.Sizeof(abi.RxeSGE{}) ||
		unsafe.Offsetof(SGE{}.Length) != unsafe.Offsetof(abi.RxeSGE{}.Length) ||
		unsafe.Offsetof(SGE{}.LKey) != unsafe.Offsetof(abi.RxeSGE{}.LKey) {
		t.Error("SGE layout differs from struct rxe_sge")
	}
}
