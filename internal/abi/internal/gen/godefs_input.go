// Input of go tool cgo -godefs for package abi. It is read only by the
// generator in this directory (go generate ./internal/abi); it is never
// compiled into the module.
//
// Every struct listed here is emitted as a Go struct with the same layout;
// every constant as an untyped Go constant with its C name. Unions become
// byte arrays of the union's size; the offsets of the union members that
// callers need are emitted as <Type>Off<Path> constants computed with
// offsetof below, and the union variants that are anonymous structs get
// their own Go types through the __typeof__ typedefs below.

//go:build ignore

package abi

/*
#include <stddef.h>
#include <linux/types.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include <rdma/rdma_user_cm.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

// Anonymous struct members, named so that they get Go types.
#define goverbs_member(type, member) __typeof__(((type *)0)->member)
typedef goverbs_member(struct ib_uverbs_odp_caps, per_transport_caps) goverbs_uverbs_odp_per_transport_caps;
typedef goverbs_member(struct ib_uverbs_send_wr, wr.rdma) goverbs_uverbs_send_wr_rdma;
typedef goverbs_member(struct ib_uverbs_send_wr, wr.atomic) goverbs_uverbs_send_wr_atomic;
typedef goverbs_member(struct ib_uverbs_send_wr, wr.ud) goverbs_uverbs_send_wr_ud;
typedef goverbs_member(struct rxe_send_wr, wr.rdma) goverbs_rxe_send_wr_rdma;
typedef goverbs_member(struct rxe_send_wr, wr.atomic) goverbs_rxe_send_wr_atomic;
typedef goverbs_member(struct rxe_send_wr, wr.ud) goverbs_rxe_send_wr_ud;
typedef goverbs_member(struct rxe_send_wr, wr.mw) goverbs_rxe_send_wr_mw;

// Offsets of members that have no Go field: union members and flexible
// array members.
enum {
	goverbs_off_uverbs_wc_ex_imm_data = offsetof(struct ib_uverbs_wc, ex.imm_data),
	goverbs_off_uverbs_wc_ex_invalidate_rkey = offsetof(struct ib_uverbs_wc, ex.invalidate_rkey),
	goverbs_off_uverbs_poll_cq_resp_wc = offsetof(struct ib_uverbs_poll_cq_resp, wc),

	goverbs_off_uverbs_send_wr_ex_imm_data = offsetof(struct ib_uverbs_send_wr, ex.imm_data),
	goverbs_off_uverbs_send_wr_ex_invalidate_rkey = offsetof(struct ib_uverbs_send_wr, ex.invalidate_rkey),
	goverbs_off_uverbs_send_wr_wr_rdma = offsetof(struct ib_uverbs_send_wr, wr.rdma),
	goverbs_off_uverbs_send_wr_wr_rdma_remote_addr = offsetof(struct ib_uverbs_send_wr, wr.rdma.remote_addr),
	goverbs_off_uverbs_send_wr_wr_rdma_rkey = offsetof(struct ib_uverbs_send_wr, wr.rdma.rkey),
	goverbs_off_uverbs_send_wr_wr_atomic = offsetof(struct ib_uverbs_send_wr, wr.atomic),
	goverbs_off_uverbs_send_wr_wr_atomic_remote_addr = offsetof(struct ib_uverbs_send_wr, wr.atomic.remote_addr),
	goverbs_off_uverbs_send_wr_wr_atomic_compare_add = offsetof(struct ib_uverbs_send_wr, wr.atomic.compare_add),
	goverbs_off_uverbs_send_wr_wr_atomic_swap = offsetof(struct ib_uverbs_send_wr, wr.atomic.swap),
	goverbs_off_uverbs_send_wr_wr_atomic_rkey = offsetof(struct ib_uverbs_send_wr, wr.atomic.rkey),
	goverbs_off_uverbs_send_wr_wr_ud = offsetof(struct ib_uverbs_send_wr, wr.ud),
	goverbs_off_uverbs_send_wr_wr_ud_ah = offsetof(struct ib_uverbs_send_wr, wr.ud.ah),
	goverbs_off_uverbs_send_wr_wr_ud_remote_qpn = offsetof(struct ib_uverbs_send_wr, wr.ud.remote_qpn),
	goverbs_off_uverbs_send_wr_wr_ud_remote_qkey = offsetof(struct ib_uverbs_send_wr, wr.ud.remote_qkey),
	goverbs_off_uverbs_post_send_send_wr = offsetof(struct ib_uverbs_post_send, send_wr),
	goverbs_off_uverbs_post_recv_recv_wr = offsetof(struct ib_uverbs_post_recv, recv_wr),
	goverbs_off_uverbs_post_srq_recv_recv = offsetof(struct ib_uverbs_post_srq_recv, recv),
	goverbs_off_uverbs_ioctl_hdr_attrs = offsetof(struct ib_uverbs_ioctl_hdr, attrs),

	goverbs_off_rxe_send_wr_ex_imm_data = offsetof(struct rxe_send_wr, ex.imm_data),
	goverbs_off_rxe_send_wr_ex_invalidate_rkey = offsetof(struct rxe_send_wr, ex.invalidate_rkey),
	goverbs_off_rxe_send_wr_wr_rdma = offsetof(struct rxe_send_wr, wr.rdma),
	goverbs_off_rxe_send_wr_wr_rdma_remote_addr = offsetof(struct rxe_send_wr, wr.rdma.remote_addr),
	goverbs_off_rxe_send_wr_wr_rdma_rkey = offsetof(struct rxe_send_wr, wr.rdma.rkey),
	goverbs_off_rxe_send_wr_wr_atomic = offsetof(struct rxe_send_wr, wr.atomic),
	goverbs_off_rxe_send_wr_wr_atomic_remote_addr = offsetof(struct rxe_send_wr, wr.atomic.remote_addr),
	goverbs_off_rxe_send_wr_wr_atomic_compare_add = offsetof(struct rxe_send_wr, wr.atomic.compare_add),
	goverbs_off_rxe_send_wr_wr_atomic_swap = offsetof(struct rxe_send_wr, wr.atomic.swap),
	goverbs_off_rxe_send_wr_wr_atomic_rkey = offsetof(struct rxe_send_wr, wr.atomic.rkey),
	goverbs_off_rxe_send_wr_wr_ud = offsetof(struct rxe_send_wr, wr.ud),
	goverbs_off_rxe_send_wr_wr_ud_remote_qpn = offsetof(struct rxe_send_wr, wr.ud.remote_qpn),
	goverbs_off_rxe_send_wr_wr_ud_remote_qkey = offsetof(struct rxe_send_wr, wr.ud.remote_qkey),
	goverbs_off_rxe_send_wr_wr_ud_pkey_index = offsetof(struct rxe_send_wr, wr.ud.pkey_index),
	goverbs_off_rxe_send_wr_wr_ud_ah_num = offsetof(struct rxe_send_wr, wr.ud.ah_num),
	goverbs_off_rxe_send_wr_wr_ud_av = offsetof(struct rxe_send_wr, wr.ud.av),
	goverbs_off_rxe_send_wr_wr_mw = offsetof(struct rxe_send_wr, wr.mw),
	goverbs_off_rxe_send_wr_wr_mw_addr = offsetof(struct rxe_send_wr, wr.mw.addr),
	goverbs_off_rxe_send_wr_wr_mw_length = offsetof(struct rxe_send_wr, wr.mw.length),
	goverbs_off_rxe_send_wr_wr_mw_mr_lkey = offsetof(struct rxe_send_wr, wr.mw.mr_lkey),
	goverbs_off_rxe_send_wr_wr_mw_mw_rkey = offsetof(struct rxe_send_wr, wr.mw.mw_rkey),
	goverbs_off_rxe_send_wr_wr_mw_rkey = offsetof(struct rxe_send_wr, wr.mw.rkey),
	goverbs_off_rxe_send_wr_wr_mw_access = offsetof(struct rxe_send_wr, wr.mw.access),
	goverbs_off_rxe_dma_info_inline_data = offsetof(struct rxe_dma_info, inline_data),
	goverbs_off_rxe_dma_info_sge = offsetof(struct rxe_dma_info, sge),
	goverbs_off_rxe_send_wqe_dma_inline_data = offsetof(struct rxe_send_wqe, dma.inline_data),
	goverbs_off_rxe_send_wqe_dma_sge = offsetof(struct rxe_send_wqe, dma.sge),
	goverbs_off_rxe_recv_wqe_dma_sge = offsetof(struct rxe_recv_wqe, dma.sge),
	goverbs_off_rxe_queue_buf_data = offsetof(struct rxe_queue_buf, data),

	goverbs_off_ucm_query_path_resp_path_data = offsetof(struct rdma_ucm_query_path_resp, path_data),
	goverbs_off_ucm_event_resp_param_conn = offsetof(struct rdma_ucm_event_resp, param.conn),
	goverbs_off_ucm_event_resp_param_conn_private_data = offsetof(struct rdma_ucm_event_resp, param.conn.private_data),
	goverbs_off_ucm_event_resp_param_conn_private_data_len = offsetof(struct rdma_ucm_event_resp, param.conn.private_data_len),
	goverbs_off_ucm_event_resp_param_ud = offsetof(struct rdma_ucm_event_resp, param.ud),
	goverbs_off_ucm_event_resp_param_ud_ah_attr = offsetof(struct rdma_ucm_event_resp, param.ud.ah_attr),
	goverbs_off_ucm_event_resp_param_ud_private_data = offsetof(struct rdma_ucm_event_resp, param.ud.private_data),
	goverbs_off_ucm_event_resp_param_ud_private_data_len = offsetof(struct rdma_ucm_event_resp, param.ud.private_data_len),
};

// RDMA_NL_GET_TYPE evaluated by the C preprocessor, to check the Go version.
enum {
	goverbs_nl_get_type_nldev_get = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
};
*/
import "C"

// Socket address types used inside the RDMA CM and rxe structs (<linux/in.h>, <linux/in6.h>, <linux/socket.h>).
type (
	InAddr                C.struct_in_addr
	SockaddrIn            C.struct_sockaddr_in
	In6Addr               C.struct_in6_addr
	SockaddrIn6           C.struct_sockaddr_in6
	KernelSockaddrStorage C.struct___kernel_sockaddr_storage
)

// Write command headers and event descriptors (<rdma/ib_user_verbs.h>).
type (
	UverbsCmdHdr         C.struct_ib_uverbs_cmd_hdr
	UverbsExCmdHdr       C.struct_ib_uverbs_ex_cmd_hdr
	UverbsCompEventDesc  C.struct_ib_uverbs_comp_event_desc
	UverbsAsyncEventDesc C.struct_ib_uverbs_async_event_desc
)

// Context and device/port queries (<rdma/ib_user_verbs.h>).
type (
	UverbsGetContext        C.struct_ib_uverbs_get_context
	UverbsGetContextResp    C.struct_ib_uverbs_get_context_resp
	UverbsQueryDevice       C.struct_ib_uverbs_query_device
	UverbsQueryDeviceResp   C.struct_ib_uverbs_query_device_resp
	UverbsExQueryDevice     C.struct_ib_uverbs_ex_query_device
	UverbsODPCaps           C.struct_ib_uverbs_odp_caps
	UverbsRSSCaps           C.struct_ib_uverbs_rss_caps
	UverbsTMCaps            C.struct_ib_uverbs_tm_caps
	UverbsCQModerationCaps  C.struct_ib_uverbs_cq_moderation_caps
	UverbsExQueryDeviceResp C.struct_ib_uverbs_ex_query_device_resp
	UverbsQueryPort         C.struct_ib_uverbs_query_port
	UverbsQueryPortResp     C.struct_ib_uverbs_query_port_resp
)

// Protection domains, XRC domains, memory regions and memory windows (<rdma/ib_user_verbs.h>).
type (
	UverbsAllocPD      C.struct_ib_uverbs_alloc_pd
	UverbsAllocPDResp  C.struct_ib_uverbs_alloc_pd_resp
	UverbsDeallocPD    C.struct_ib_uverbs_dealloc_pd
	UverbsOpenXRCD     C.struct_ib_uverbs_open_xrcd
	UverbsOpenXRCDResp C.struct_ib_uverbs_open_xrcd_resp
	UverbsCloseXRCD    C.struct_ib_uverbs_close_xrcd
	UverbsRegMR        C.struct_ib_uverbs_reg_mr
	UverbsRegMRResp    C.struct_ib_uverbs_reg_mr_resp
	UverbsReregMR      C.struct_ib_uverbs_rereg_mr
	UverbsReregMRResp  C.struct_ib_uverbs_rereg_mr_resp
	UverbsDeregMR      C.struct_ib_uverbs_dereg_mr
	UverbsAllocMW      C.struct_ib_uverbs_alloc_mw
	UverbsAllocMWResp  C.struct_ib_uverbs_alloc_mw_resp
	UverbsDeallocMW    C.struct_ib_uverbs_dealloc_mw
)

// Completion channels and completion queues (<rdma/ib_user_verbs.h>).
type (
	UverbsCreateCompChannel     C.struct_ib_uverbs_create_comp_channel
	UverbsCreateCompChannelResp C.struct_ib_uverbs_create_comp_channel_resp
	UverbsCreateCQ              C.struct_ib_uverbs_create_cq
	UverbsExCreateCQ            C.struct_ib_uverbs_ex_create_cq
	UverbsCreateCQResp          C.struct_ib_uverbs_create_cq_resp
	UverbsExCreateCQResp        C.struct_ib_uverbs_ex_create_cq_resp
	UverbsResizeCQ              C.struct_ib_uverbs_resize_cq
	UverbsResizeCQResp          C.struct_ib_uverbs_resize_cq_resp
	UverbsPollCQ                C.struct_ib_uverbs_poll_cq
	UverbsWC                    C.struct_ib_uverbs_wc
	UverbsPollCQResp            C.struct_ib_uverbs_poll_cq_resp
	UverbsReqNotifyCQ           C.struct_ib_uverbs_req_notify_cq
	UverbsDestroyCQ             C.struct_ib_uverbs_destroy_cq
	UverbsDestroyCQResp         C.struct_ib_uverbs_destroy_cq_resp
	UverbsCQModeration          C.struct_ib_uverbs_cq_moderation
	UverbsExModifyCQ            C.struct_ib_uverbs_ex_modify_cq
)

// Address vectors and queue pairs (<rdma/ib_user_verbs.h>).
type (
	UverbsGlobalRoute    C.struct_ib_uverbs_global_route
	UverbsAHAttr         C.struct_ib_uverbs_ah_attr
	UverbsQPAttr         C.struct_ib_uverbs_qp_attr
	UverbsCreateQP       C.struct_ib_uverbs_create_qp
	UverbsExCreateQP     C.struct_ib_uverbs_ex_create_qp
	UverbsOpenQP         C.struct_ib_uverbs_open_qp
	UverbsCreateQPResp   C.struct_ib_uverbs_create_qp_resp
	UverbsExCreateQPResp C.struct_ib_uverbs_ex_create_qp_resp
	UverbsQPDest         C.struct_ib_uverbs_qp_dest
	UverbsQueryQP        C.struct_ib_uverbs_query_qp
	UverbsQueryQPResp    C.struct_ib_uverbs_query_qp_resp
	UverbsModifyQP       C.struct_ib_uverbs_modify_qp
	UverbsExModifyQP     C.struct_ib_uverbs_ex_modify_qp
	UverbsExModifyQPResp C.struct_ib_uverbs_ex_modify_qp_resp
	UverbsDestroyQP      C.struct_ib_uverbs_destroy_qp
	UverbsDestroyQPResp  C.struct_ib_uverbs_destroy_qp_resp
)

// Work requests posted through the kernel (<rdma/ib_user_verbs.h>).
type (
	UverbsSGE             C.struct_ib_uverbs_sge
	UverbsSendWR          C.struct_ib_uverbs_send_wr
	UverbsPostSend        C.struct_ib_uverbs_post_send
	UverbsPostSendResp    C.struct_ib_uverbs_post_send_resp
	UverbsRecvWR          C.struct_ib_uverbs_recv_wr
	UverbsPostRecv        C.struct_ib_uverbs_post_recv
	UverbsPostRecvResp    C.struct_ib_uverbs_post_recv_resp
	UverbsPostSRQRecv     C.struct_ib_uverbs_post_srq_recv
	UverbsPostSRQRecvResp C.struct_ib_uverbs_post_srq_recv_resp
)

// Address handles and multicast (<rdma/ib_user_verbs.h>).
type (
	UverbsCreateAH     C.struct_ib_uverbs_create_ah
	UverbsCreateAHResp C.struct_ib_uverbs_create_ah_resp
	UverbsDestroyAH    C.struct_ib_uverbs_destroy_ah
	UverbsAttachMcast  C.struct_ib_uverbs_attach_mcast
	UverbsDetachMcast  C.struct_ib_uverbs_detach_mcast
)

// Shared receive queues, work queues and indirection tables (<rdma/ib_user_verbs.h>).
type (
	UverbsCreateSRQ               C.struct_ib_uverbs_create_srq
	UverbsCreateXSRQ              C.struct_ib_uverbs_create_xsrq
	UverbsCreateSRQResp           C.struct_ib_uverbs_create_srq_resp
	UverbsModifySRQ               C.struct_ib_uverbs_modify_srq
	UverbsQuerySRQ                C.struct_ib_uverbs_query_srq
	UverbsQuerySRQResp            C.struct_ib_uverbs_query_srq_resp
	UverbsDestroySRQ              C.struct_ib_uverbs_destroy_srq
	UverbsDestroySRQResp          C.struct_ib_uverbs_destroy_srq_resp
	UverbsExCreateWQ              C.struct_ib_uverbs_ex_create_wq
	UverbsExCreateWQResp          C.struct_ib_uverbs_ex_create_wq_resp
	UverbsExDestroyWQ             C.struct_ib_uverbs_ex_destroy_wq
	UverbsExDestroyWQResp         C.struct_ib_uverbs_ex_destroy_wq_resp
	UverbsExModifyWQ              C.struct_ib_uverbs_ex_modify_wq
	UverbsExCreateRWQIndTable     C.struct_ib_uverbs_ex_create_rwq_ind_table
	UverbsExCreateRWQIndTableResp C.struct_ib_uverbs_ex_create_rwq_ind_table_resp
	UverbsExDestroyRWQIndTable    C.struct_ib_uverbs_ex_destroy_rwq_ind_table
)

// The ioctl ABI (<rdma/rdma_user_ioctl_cmds.h>, <rdma/ib_user_ioctl_verbs.h>).
type (
	UverbsAttr            C.struct_ib_uverbs_attr
	UverbsIoctlHdr        C.struct_ib_uverbs_ioctl_hdr
	UverbsQueryPortRespEx C.struct_ib_uverbs_query_port_resp_ex
	UverbsQPCap           C.struct_ib_uverbs_qp_cap
	UverbsGIDEntry        C.struct_ib_uverbs_gid_entry
)

// The rxe provider: driver data of the write commands and the shared queue memory (<rdma/rdma_user_rxe.h>).
type (
	RxeGlobalRoute   C.struct_rxe_global_route
	RxeAV            C.struct_rxe_av
	RxeSendWR        C.struct_rxe_send_wr
	RxeSGE           C.struct_rxe_sge
	RxeMminfo        C.struct_mminfo
	RxeDMAInfo       C.struct_rxe_dma_info
	RxeSendWQE       C.struct_rxe_send_wqe
	RxeRecvWQE       C.struct_rxe_recv_wqe
	RxeCreateAHResp  C.struct_rxe_create_ah_resp
	RxeCreateCQResp  C.struct_rxe_create_cq_resp
	RxeResizeCQResp  C.struct_rxe_resize_cq_resp
	RxeCreateQPResp  C.struct_rxe_create_qp_resp
	RxeCreateSRQResp C.struct_rxe_create_srq_resp
	RxeModifySRQCmd  C.struct_rxe_modify_srq_cmd
	RxeQueueBuf      C.struct_rxe_queue_buf
)

// Path records returned by the RDMA CM (<rdma/ib_user_sa.h>).
type (
	IBUserPathRec C.struct_ib_user_path_rec
	IBPathRecData C.struct_ib_path_rec_data
)

// The RDMA CM write ABI of /dev/infiniband/rdma_cm (<rdma/rdma_user_cm.h>).
type (
	UcmCmdHdr         C.struct_rdma_ucm_cmd_hdr
	UcmCreateID       C.struct_rdma_ucm_create_id
	UcmCreateIDResp   C.struct_rdma_ucm_create_id_resp
	UcmDestroyID      C.struct_rdma_ucm_destroy_id
	UcmDestroyIDResp  C.struct_rdma_ucm_destroy_id_resp
	UcmBindIP         C.struct_rdma_ucm_bind_ip
	UcmBind           C.struct_rdma_ucm_bind
	UcmResolveIP      C.struct_rdma_ucm_resolve_ip
	UcmResolveAddr    C.struct_rdma_ucm_resolve_addr
	UcmResolveRoute   C.struct_rdma_ucm_resolve_route
	UcmQuery          C.struct_rdma_ucm_query
	UcmQueryRouteResp C.struct_rdma_ucm_query_route_resp
	UcmQueryAddrResp  C.struct_rdma_ucm_query_addr_resp
	UcmQueryPathResp  C.struct_rdma_ucm_query_path_resp
	UcmConnParam      C.struct_rdma_ucm_conn_param
	UcmUDParam        C.struct_rdma_ucm_ud_param
	UcmECE            C.struct_rdma_ucm_ece
	UcmConnect        C.struct_rdma_ucm_connect
	UcmListen         C.struct_rdma_ucm_listen
	UcmAccept         C.struct_rdma_ucm_accept
	UcmReject         C.struct_rdma_ucm_reject
	UcmDisconnect     C.struct_rdma_ucm_disconnect
	UcmInitQPAttr     C.struct_rdma_ucm_init_qp_attr
	UcmNotify         C.struct_rdma_ucm_notify
	UcmJoinIPMcast    C.struct_rdma_ucm_join_ip_mcast
	UcmJoinMcast      C.struct_rdma_ucm_join_mcast
	UcmGetEvent       C.struct_rdma_ucm_get_event
	UcmEventResp      C.struct_rdma_ucm_event_resp
	UcmSetOption      C.struct_rdma_ucm_set_option
	UcmMigrateID      C.struct_rdma_ucm_migrate_id
	UcmMigrateResp    C.struct_rdma_ucm_migrate_resp
)

// Anonymous members of the structs above. The union variants are laid over
// the union's byte array at the <Type>OffWR<Variant> offset.
type (
	UverbsODPCapsPerTransportCaps C.goverbs_uverbs_odp_per_transport_caps // member per_transport_caps of struct ib_uverbs_odp_caps

	UverbsSendWRRDMA   C.goverbs_uverbs_send_wr_rdma   // member wr.rdma of struct ib_uverbs_send_wr
	UverbsSendWRAtomic C.goverbs_uverbs_send_wr_atomic // member wr.atomic of struct ib_uverbs_send_wr
	UverbsSendWRUD     C.goverbs_uverbs_send_wr_ud     // member wr.ud of struct ib_uverbs_send_wr

	RxeSendWRRDMA   C.goverbs_rxe_send_wr_rdma   // member wr.rdma of struct rxe_send_wr
	RxeSendWRAtomic C.goverbs_rxe_send_wr_atomic // member wr.atomic of struct rxe_send_wr
	RxeSendWRUD     C.goverbs_rxe_send_wr_ud     // member wr.ud of struct rxe_send_wr
	RxeSendWRMW     C.goverbs_rxe_send_wr_mw     // member wr.mw of struct rxe_send_wr
)

// Byte offsets of union members and flexible array members, which have no Go
// field of their own.
const (
	UverbsWCOffExImmData                   = C.goverbs_off_uverbs_wc_ex_imm_data
	UverbsWCOffExInvalidateRKey            = C.goverbs_off_uverbs_wc_ex_invalidate_rkey
	UverbsPollCQRespOffWC                  = C.goverbs_off_uverbs_poll_cq_resp_wc
	UverbsSendWROffExImmData               = C.goverbs_off_uverbs_send_wr_ex_imm_data
	UverbsSendWROffExInvalidateRKey        = C.goverbs_off_uverbs_send_wr_ex_invalidate_rkey
	UverbsSendWROffWRRDMA                  = C.goverbs_off_uverbs_send_wr_wr_rdma
	UverbsSendWROffWRRDMARemoteAddr        = C.goverbs_off_uverbs_send_wr_wr_rdma_remote_addr
	UverbsSendWROffWRRDMARKey              = C.goverbs_off_uverbs_send_wr_wr_rdma_rkey
	UverbsSendWROffWRAtomic                = C.goverbs_off_uverbs_send_wr_wr_atomic
	UverbsSendWROffWRAtomicRemoteAddr      = C.goverbs_off_uverbs_send_wr_wr_atomic_remote_addr
	UverbsSendWROffWRAtomicCompareAdd      = C.goverbs_off_uverbs_send_wr_wr_atomic_compare_add
	UverbsSendWROffWRAtomicSwap            = C.goverbs_off_uverbs_send_wr_wr_atomic_swap
	UverbsSendWROffWRAtomicRKey            = C.goverbs_off_uverbs_send_wr_wr_atomic_rkey
	UverbsSendWROffWRUD                    = C.goverbs_off_uverbs_send_wr_wr_ud
	UverbsSendWROffWRUDAH                  = C.goverbs_off_uverbs_send_wr_wr_ud_ah
	UverbsSendWROffWRUDRemoteQPN           = C.goverbs_off_uverbs_send_wr_wr_ud_remote_qpn
	UverbsSendWROffWRUDRemoteQKey          = C.goverbs_off_uverbs_send_wr_wr_ud_remote_qkey
	UverbsPostSendOffSendWR                = C.goverbs_off_uverbs_post_send_send_wr
	UverbsPostRecvOffRecvWR                = C.goverbs_off_uverbs_post_recv_recv_wr
	UverbsPostSRQRecvOffRecv               = C.goverbs_off_uverbs_post_srq_recv_recv
	UverbsIoctlHdrOffAttrs                 = C.goverbs_off_uverbs_ioctl_hdr_attrs
	RxeSendWROffExImmData                  = C.goverbs_off_rxe_send_wr_ex_imm_data
	RxeSendWROffExInvalidateRKey           = C.goverbs_off_rxe_send_wr_ex_invalidate_rkey
	RxeSendWROffWRRDMA                     = C.goverbs_off_rxe_send_wr_wr_rdma
	RxeSendWROffWRRDMARemoteAddr           = C.goverbs_off_rxe_send_wr_wr_rdma_remote_addr
	RxeSendWROffWRRDMARKey                 = C.goverbs_off_rxe_send_wr_wr_rdma_rkey
	RxeSendWROffWRAtomic                   = C.goverbs_off_rxe_send_wr_wr_atomic
	RxeSendWROffWRAtomicRemoteAddr         = C.goverbs_off_rxe_send_wr_wr_atomic_remote_addr
	RxeSendWROffWRAtomicCompareAdd         = C.goverbs_off_rxe_send_wr_wr_atomic_compare_add
	RxeSendWROffWRAtomicSwap               = C.goverbs_off_rxe_send_wr_wr_atomic_swap
	RxeSendWROffWRAtomicRKey               = C.goverbs_off_rxe_send_wr_wr_atomic_rkey
	RxeSendWROffWRUD                       = C.goverbs_off_rxe_send_wr_wr_ud
	RxeSendWROffWRUDRemoteQPN              = C.goverbs_off_rxe_send_wr_wr_ud_remote_qpn
	RxeSendWROffWRUDRemoteQKey             = C.goverbs_off_rxe_send_wr_wr_ud_remote_qkey
	RxeSendWROffWRUDPKeyIndex              = C.goverbs_off_rxe_send_wr_wr_ud_pkey_index
	RxeSendWROffWRUDAHNum                  = C.goverbs_off_rxe_send_wr_wr_ud_ah_num
	RxeSendWROffWRUDAV                     = C.goverbs_off_rxe_send_wr_wr_ud_av
	RxeSendWROffWRMW                       = C.goverbs_off_rxe_send_wr_wr_mw
	RxeSendWROffWRMWAddr                   = C.goverbs_off_rxe_send_wr_wr_mw_addr
	RxeSendWROffWRMWLength                 = C.goverbs_off_rxe_send_wr_wr_mw_length
	RxeSendWROffWRMWMRLKey                 = C.goverbs_off_rxe_send_wr_wr_mw_mr_lkey
	RxeSendWROffWRMWMWRKey                 = C.goverbs_off_rxe_send_wr_wr_mw_mw_rkey
	RxeSendWROffWRMWRKey                   = C.goverbs_off_rxe_send_wr_wr_mw_rkey
	RxeSendWROffWRMWAccess                 = C.goverbs_off_rxe_send_wr_wr_mw_access
	RxeDMAInfoOffInlineData                = C.goverbs_off_rxe_dma_info_inline_data
	RxeDMAInfoOffSGE                       = C.goverbs_off_rxe_dma_info_sge
	RxeSendWQEOffDMAInlineData             = C.goverbs_off_rxe_send_wqe_dma_inline_data
	RxeSendWQEOffDMASGE                    = C.goverbs_off_rxe_send_wqe_dma_sge
	RxeRecvWQEOffDMASGE                    = C.goverbs_off_rxe_recv_wqe_dma_sge
	RxeQueueBufOffData                     = C.goverbs_off_rxe_queue_buf_data
	UcmQueryPathRespOffPathData            = C.goverbs_off_ucm_query_path_resp_path_data
	UcmEventRespOffParamConn               = C.goverbs_off_ucm_event_resp_param_conn
	UcmEventRespOffParamConnPrivateData    = C.goverbs_off_ucm_event_resp_param_conn_private_data
	UcmEventRespOffParamConnPrivateDataLen = C.goverbs_off_ucm_event_resp_param_conn_private_data_len
	UcmEventRespOffParamUD                 = C.goverbs_off_ucm_event_resp_param_ud
	UcmEventRespOffParamUDAHAttr           = C.goverbs_off_ucm_event_resp_param_ud_ah_attr
	UcmEventRespOffParamUDPrivateData      = C.goverbs_off_ucm_event_resp_param_ud_private_data
	UcmEventRespOffParamUDPrivateDataLen   = C.goverbs_off_ucm_event_resp_param_ud_private_data_len
)

// RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET) as computed by the C
// macro; the test checks the Go RDMA_NL_GET_TYPE against it.
const rdmaNLGetTypeNLDEVGet = C.goverbs_nl_get_type_nldev_get

// #define constants from <rdma/ib_user_verbs.h>.
const (
	IB_USER_VERBS_ABI_VERSION          = C.IB_USER_VERBS_ABI_VERSION
	IB_USER_VERBS_CMD_THRESHOLD        = C.IB_USER_VERBS_CMD_THRESHOLD
	IB_USER_VERBS_CMD_COMMAND_MASK     = C.IB_USER_VERBS_CMD_COMMAND_MASK
	IB_USER_VERBS_CMD_FLAG_EXTENDED    = C.IB_USER_VERBS_CMD_FLAG_EXTENDED
	IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE = C.IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE
	IB_DEVICE_NAME_MAX                 = C.IB_DEVICE_NAME_MAX
)

// enum ib_uverbs_write_cmds from <rdma/ib_user_verbs.h>.
const (
	IB_USER_VERBS_CMD_GET_CONTEXT         = C.IB_USER_VERBS_CMD_GET_CONTEXT
	IB_USER_VERBS_CMD_QUERY_DEVICE        = C.IB_USER_VERBS_CMD_QUERY_DEVICE
	IB_USER_VERBS_CMD_QUERY_PORT          = C.IB_USER_VERBS_CMD_QUERY_PORT
	IB_USER_VERBS_CMD_ALLOC_PD            = C.IB_USER_VERBS_CMD_ALLOC_PD
	IB_USER_VERBS_CMD_DEALLOC_PD          = C.IB_USER_VERBS_CMD_DEALLOC_PD
	IB_USER_VERBS_CMD_CREATE_AH           = C.IB_USER_VERBS_CMD_CREATE_AH
	IB_USER_VERBS_CMD_MODIFY_AH           = C.IB_USER_VERBS_CMD_MODIFY_AH
	IB_USER_VERBS_CMD_QUERY_AH            = C.IB_USER_VERBS_CMD_QUERY_AH
	IB_USER_VERBS_CMD_DESTROY_AH          = C.IB_USER_VERBS_CMD_DESTROY_AH
	IB_USER_VERBS_CMD_REG_MR              = C.IB_USER_VERBS_CMD_REG_MR
	IB_USER_VERBS_CMD_REG_SMR             = C.IB_USER_VERBS_CMD_REG_SMR
	IB_USER_VERBS_CMD_REREG_MR            = C.IB_USER_VERBS_CMD_REREG_MR
	IB_USER_VERBS_CMD_QUERY_MR            = C.IB_USER_VERBS_CMD_QUERY_MR
	IB_USER_VERBS_CMD_DEREG_MR            = C.IB_USER_VERBS_CMD_DEREG_MR
	IB_USER_VERBS_CMD_ALLOC_MW            = C.IB_USER_VERBS_CMD_ALLOC_MW
	IB_USER_VERBS_CMD_BIND_MW             = C.IB_USER_VERBS_CMD_BIND_MW
	IB_USER_VERBS_CMD_DEALLOC_MW          = C.IB_USER_VERBS_CMD_DEALLOC_MW
	IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL = C.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL
	IB_USER_VERBS_CMD_CREATE_CQ           = C.IB_USER_VERBS_CMD_CREATE_CQ
	IB_USER_VERBS_CMD_RESIZE_CQ           = C.IB_USER_VERBS_CMD_RESIZE_CQ
	IB_USER_VERBS_CMD_DESTROY_CQ          = C.IB_USER_VERBS_CMD_DESTROY_CQ
	IB_USER_VERBS_CMD_POLL_CQ             = C.IB_USER_VERBS_CMD_POLL_CQ
	IB_USER_VERBS_CMD_PEEK_CQ             = C.IB_USER_VERBS_CMD_PEEK_CQ
	IB_USER_VERBS_CMD_REQ_NOTIFY_CQ       = C.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ
	IB_USER_VERBS_CMD_CREATE_QP           = C.IB_USER_VERBS_CMD_CREATE_QP
	IB_USER_VERBS_CMD_QUERY_QP            = C.IB_USER_VERBS_CMD_QUERY_QP
	IB_USER_VERBS_CMD_MODIFY_QP           = C.IB_USER_VERBS_CMD_MODIFY_QP
	IB_USER_VERBS_CMD_DESTROY_QP          = C.IB_USER_VERBS_CMD_DESTROY_QP
	IB_USER_VERBS_CMD_POST_SEND           = C.IB_USER_VERBS_CMD_POST_SEND
	IB_USER_VERBS_CMD_POST_RECV           = C.IB_USER_VERBS_CMD_POST_RECV
	IB_USER_VERBS_CMD_ATTACH_MCAST        = C.IB_USER_VERBS_CMD_ATTACH_MCAST
	IB_USER_VERBS_CMD_DETACH_MCAST        = C.IB_USER_VERBS_CMD_DETACH_MCAST
	IB_USER_VERBS_CMD_CREATE_SRQ          = C.IB_USER_VERBS_CMD_CREATE_SRQ
	IB_USER_VERBS_CMD_MODIFY_SRQ          = C.IB_USER_VERBS_CMD_MODIFY_SRQ
	IB_USER_VERBS_CMD_QUERY_SRQ           = C.IB_USER_VERBS_CMD_QUERY_SRQ
	IB_USER_VERBS_CMD_DESTROY_SRQ         = C.IB_USER_VERBS_CMD_DESTROY_SRQ
	IB_USER_VERBS_CMD_POST_SRQ_RECV       = C.IB_USER_VERBS_CMD_POST_SRQ_RECV
	IB_USER_VERBS_CMD_OPEN_XRCD           = C.IB_USER_VERBS_CMD_OPEN_XRCD
	IB_USER_VERBS_CMD_CLOSE_XRCD          = C.IB_USER_VERBS_CMD_CLOSE_XRCD
	IB_USER_VERBS_CMD_CREATE_XSRQ         = C.IB_USER_VERBS_CMD_CREATE_XSRQ
	IB_USER_VERBS_CMD_OPEN_QP             = C.IB_USER_VERBS_CMD_OPEN_QP
)

// Anonymous enum from <rdma/ib_user_verbs.h>.
const (
	IB_USER_VERBS_EX_CMD_QUERY_DEVICE        = C.IB_USER_VERBS_EX_CMD_QUERY_DEVICE
	IB_USER_VERBS_EX_CMD_CREATE_CQ           = C.IB_USER_VERBS_EX_CMD_CREATE_CQ
	IB_USER_VERBS_EX_CMD_CREATE_QP           = C.IB_USER_VERBS_EX_CMD_CREATE_QP
	IB_USER_VERBS_EX_CMD_MODIFY_QP           = C.IB_USER_VERBS_EX_CMD_MODIFY_QP
	IB_USER_VERBS_EX_CMD_CREATE_FLOW         = C.IB_USER_VERBS_EX_CMD_CREATE_FLOW
	IB_USER_VERBS_EX_CMD_DESTROY_FLOW        = C.IB_USER_VERBS_EX_CMD_DESTROY_FLOW
	IB_USER_VERBS_EX_CMD_CREATE_WQ           = C.IB_USER_VERBS_EX_CMD_CREATE_WQ
	IB_USER_VERBS_EX_CMD_MODIFY_WQ           = C.IB_USER_VERBS_EX_CMD_MODIFY_WQ
	IB_USER_VERBS_EX_CMD_DESTROY_WQ          = C.IB_USER_VERBS_EX_CMD_DESTROY_WQ
	IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL  = C.IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL
	IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL = C.IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL
	IB_USER_VERBS_EX_CMD_MODIFY_CQ           = C.IB_USER_VERBS_EX_CMD_MODIFY_CQ
)

// enum ib_uverbs_ex_create_cq_flags from <rdma/ib_user_verbs.h>.
const (
	IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION = C.IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
	IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN       = C.IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN
)

// enum ib_uverbs_wc_opcode from <rdma/ib_user_verbs.h>.
const (
	IB_UVERBS_WC_SEND       = C.IB_UVERBS_WC_SEND
	IB_UVERBS_WC_RDMA_WRITE = C.IB_UVERBS_WC_RDMA_WRITE
	IB_UVERBS_WC_RDMA_READ  = C.IB_UVERBS_WC_RDMA_READ
	IB_UVERBS_WC_COMP_SWAP  = C.IB_UVERBS_WC_COMP_SWAP
	IB_UVERBS_WC_FETCH_ADD  = C.IB_UVERBS_WC_FETCH_ADD
	IB_UVERBS_WC_BIND_MW    = C.IB_UVERBS_WC_BIND_MW
	IB_UVERBS_WC_LOCAL_INV  = C.IB_UVERBS_WC_LOCAL_INV
	IB_UVERBS_WC_TSO        = C.IB_UVERBS_WC_TSO
)

// enum ib_uverbs_create_qp_mask from <rdma/ib_user_verbs.h>.
const (
	IB_UVERBS_CREATE_QP_MASK_IND_TABLE = C.IB_UVERBS_CREATE_QP_MASK_IND_TABLE
)

// Anonymous enum from <rdma/ib_user_verbs.h>.
const (
	IB_UVERBS_CREATE_QP_SUP_COMP_MASK = C.IB_UVERBS_CREATE_QP_SUP_COMP_MASK
)

// enum ib_uverbs_wr_opcode from <rdma/ib_user_verbs.h>.
const (
	IB_UVERBS_WR_RDMA_WRITE                  = C.IB_UVERBS_WR_RDMA_WRITE
	IB_UVERBS_WR_RDMA_WRITE_WITH_IMM         = C.IB_UVERBS_WR_RDMA_WRITE_WITH_IMM
	IB_UVERBS_WR_SEND                        = C.IB_UVERBS_WR_SEND
	IB_UVERBS_WR_SEND_WITH_IMM               = C.IB_UVERBS_WR_SEND_WITH_IMM
	IB_UVERBS_WR_RDMA_READ                   = C.IB_UVERBS_WR_RDMA_READ
	IB_UVERBS_WR_ATOMIC_CMP_AND_SWP          = C.IB_UVERBS_WR_ATOMIC_CMP_AND_SWP
	IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD        = C.IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD
	IB_UVERBS_WR_LOCAL_INV                   = C.IB_UVERBS_WR_LOCAL_INV
	IB_UVERBS_WR_BIND_MW                     = C.IB_UVERBS_WR_BIND_MW
	IB_UVERBS_WR_SEND_WITH_INV               = C.IB_UVERBS_WR_SEND_WITH_INV
	IB_UVERBS_WR_TSO                         = C.IB_UVERBS_WR_TSO
	IB_UVERBS_WR_RDMA_READ_WITH_INV          = C.IB_UVERBS_WR_RDMA_READ_WITH_INV
	IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP   = C.IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP
	IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD = C.IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD
)

// enum ib_uverbs_device_cap_flags from <rdma/ib_user_verbs.h>.
const (
	IB_UVERBS_DEVICE_RESIZE_MAX_WR         = C.IB_UVERBS_DEVICE_RESIZE_MAX_WR
	IB_UVERBS_DEVICE_BAD_PKEY_CNTR         = C.IB_UVERBS_DEVICE_BAD_PKEY_CNTR
	IB_UVERBS_DEVICE_BAD_QKEY_CNTR         = C.IB_UVERBS_DEVICE_BAD_QKEY_CNTR
	IB_UVERBS_DEVICE_RAW_MULTI             = C.IB_UVERBS_DEVICE_RAW_MULTI
	IB_UVERBS_DEVICE_AUTO_PATH_MIG         = C.IB_UVERBS_DEVICE_AUTO_PATH_MIG
	IB_UVERBS_DEVICE_CHANGE_PHY_PORT       = C.IB_UVERBS_DEVICE_CHANGE_PHY_PORT
	IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE    = C.IB_UVERBS_DEVICE_UD_AV_PORT_ENFORCE
	IB_UVERBS_DEVICE_CURR_QP_STATE_MOD     = C.IB_UVERBS_DEVICE_CURR_QP_STATE_MOD
	IB_UVERBS_DEVICE_SHUTDOWN_PORT         = C.IB_UVERBS_DEVICE_SHUTDOWN_PORT
	IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT     = C.IB_UVERBS_DEVICE_PORT_ACTIVE_EVENT
	IB_UVERBS_DEVICE_SYS_IMAGE_GUID        = C.IB_UVERBS_DEVICE_SYS_IMAGE_GUID
	IB_UVERBS_DEVICE_RC_RNR_NAK_GEN        = C.IB_UVERBS_DEVICE_RC_RNR_NAK_GEN
	IB_UVERBS_DEVICE_SRQ_RESIZE            = C.IB_UVERBS_DEVICE_SRQ_RESIZE
	IB_UVERBS_DEVICE_N_NOTIFY_CQ           = C.IB_UVERBS_DEVICE_N_NOTIFY_CQ
	IB_UVERBS_DEVICE_MEM_WINDOW            = C.IB_UVERBS_DEVICE_MEM_WINDOW
	IB_UVERBS_DEVICE_UD_IP_CSUM            = C.IB_UVERBS_DEVICE_UD_IP_CSUM
	IB_UVERBS_DEVICE_XRC                   = C.IB_UVERBS_DEVICE_XRC
	IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS    = C.IB_UVERBS_DEVICE_MEM_MGT_EXTENSIONS
	IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A    = C.IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2A
	IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B    = C.IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B
	IB_UVERBS_DEVICE_RC_IP_CSUM            = C.IB_UVERBS_DEVICE_RC_IP_CSUM
	IB_UVERBS_DEVICE_RAW_IP_CSUM           = C.IB_UVERBS_DEVICE_RAW_IP_CSUM
	IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING = C.IB_UVERBS_DEVICE_MANAGED_FLOW_STEERING
	IB_UVERBS_DEVICE_RAW_SCATTER_FCS       = C.IB_UVERBS_DEVICE_RAW_SCATTER_FCS
	IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING = C.IB_UVERBS_DEVICE_PCI_WRITE_END_PADDING
)

// enum ib_uverbs_raw_packet_caps from <rdma/ib_user_verbs.h>.
const (
	IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING = C.IB_UVERBS_RAW_PACKET_CAP_CVLAN_STRIPPING
	IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS     = C.IB_UVERBS_RAW_PACKET_CAP_SCATTER_FCS
	IB_UVERBS_RAW_PACKET_CAP_IP_CSUM         = C.IB_UVERBS_RAW_PACKET_CAP_IP_CSUM
	IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP      = C.IB_UVERBS_RAW_PACKET_CAP_DELAY_DROP
)

// #define constants from <rdma/rdma_user_ioctl_cmds.h>.
const (
	RDMA_IOCTL_MAGIC = C.RDMA_IOCTL_MAGIC
	RDMA_VERBS_IOCTL = C.RDMA_VERBS_IOCTL
)

// Anonymous enum from <rdma/rdma_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_F_MANDATORY    = C.UVERBS_ATTR_F_MANDATORY
	UVERBS_ATTR_F_VALID_OUTPUT = C.UVERBS_ATTR_F_VALID_OUTPUT
)

// #define constants from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ID_NS_MASK             = C.UVERBS_ID_NS_MASK
	UVERBS_ID_NS_SHIFT            = C.UVERBS_ID_NS_SHIFT
	UVERBS_UDATA_DRIVER_DATA_NS   = C.UVERBS_UDATA_DRIVER_DATA_NS
	UVERBS_UDATA_DRIVER_DATA_FLAG = C.UVERBS_UDATA_DRIVER_DATA_FLAG
)

// enum uverbs_default_objects from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_OBJECT_DEVICE       = C.UVERBS_OBJECT_DEVICE
	UVERBS_OBJECT_PD           = C.UVERBS_OBJECT_PD
	UVERBS_OBJECT_COMP_CHANNEL = C.UVERBS_OBJECT_COMP_CHANNEL
	UVERBS_OBJECT_CQ           = C.UVERBS_OBJECT_CQ
	UVERBS_OBJECT_QP           = C.UVERBS_OBJECT_QP
	UVERBS_OBJECT_SRQ          = C.UVERBS_OBJECT_SRQ
	UVERBS_OBJECT_AH           = C.UVERBS_OBJECT_AH
	UVERBS_OBJECT_MR           = C.UVERBS_OBJECT_MR
	UVERBS_OBJECT_MW           = C.UVERBS_OBJECT_MW
	UVERBS_OBJECT_FLOW         = C.UVERBS_OBJECT_FLOW
	UVERBS_OBJECT_XRCD         = C.UVERBS_OBJECT_XRCD
	UVERBS_OBJECT_RWQ_IND_TBL  = C.UVERBS_OBJECT_RWQ_IND_TBL
	UVERBS_OBJECT_WQ           = C.UVERBS_OBJECT_WQ
	UVERBS_OBJECT_FLOW_ACTION  = C.UVERBS_OBJECT_FLOW_ACTION
	UVERBS_OBJECT_DM           = C.UVERBS_OBJECT_DM
	UVERBS_OBJECT_COUNTERS     = C.UVERBS_OBJECT_COUNTERS
	UVERBS_OBJECT_ASYNC_EVENT  = C.UVERBS_OBJECT_ASYNC_EVENT
)

// Anonymous enum from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_UHW_IN  = C.UVERBS_ATTR_UHW_IN
	UVERBS_ATTR_UHW_OUT = C.UVERBS_ATTR_UHW_OUT
)

// enum uverbs_methods_device from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_INVOKE_WRITE    = C.UVERBS_METHOD_INVOKE_WRITE
	UVERBS_METHOD_INFO_HANDLES    = C.UVERBS_METHOD_INFO_HANDLES
	UVERBS_METHOD_QUERY_PORT      = C.UVERBS_METHOD_QUERY_PORT
	UVERBS_METHOD_GET_CONTEXT     = C.UVERBS_METHOD_GET_CONTEXT
	UVERBS_METHOD_QUERY_CONTEXT   = C.UVERBS_METHOD_QUERY_CONTEXT
	UVERBS_METHOD_QUERY_GID_TABLE = C.UVERBS_METHOD_QUERY_GID_TABLE
	UVERBS_METHOD_QUERY_GID_ENTRY = C.UVERBS_METHOD_QUERY_GID_ENTRY
)

// enum uverbs_attrs_invoke_write_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_CORE_IN   = C.UVERBS_ATTR_CORE_IN
	UVERBS_ATTR_CORE_OUT  = C.UVERBS_ATTR_CORE_OUT
	UVERBS_ATTR_WRITE_CMD = C.UVERBS_ATTR_WRITE_CMD
)

// enum uverbs_attrs_query_port_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_QUERY_PORT_PORT_NUM = C.UVERBS_ATTR_QUERY_PORT_PORT_NUM
	UVERBS_ATTR_QUERY_PORT_RESP     = C.UVERBS_ATTR_QUERY_PORT_RESP
)

// enum uverbs_attrs_get_context_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS = C.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS
	UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT     = C.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT
)

// enum uverbs_attrs_query_context_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS = C.UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS
	UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT     = C.UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT
)

// enum uverbs_attrs_create_cq_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_CREATE_CQ_HANDLE       = C.UVERBS_ATTR_CREATE_CQ_HANDLE
	UVERBS_ATTR_CREATE_CQ_CQE          = C.UVERBS_ATTR_CREATE_CQ_CQE
	UVERBS_ATTR_CREATE_CQ_USER_HANDLE  = C.UVERBS_ATTR_CREATE_CQ_USER_HANDLE
	UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL = C.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL
	UVERBS_ATTR_CREATE_CQ_COMP_VECTOR  = C.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR
	UVERBS_ATTR_CREATE_CQ_FLAGS        = C.UVERBS_ATTR_CREATE_CQ_FLAGS
	UVERBS_ATTR_CREATE_CQ_RESP_CQE     = C.UVERBS_ATTR_CREATE_CQ_RESP_CQE
	UVERBS_ATTR_CREATE_CQ_EVENT_FD     = C.UVERBS_ATTR_CREATE_CQ_EVENT_FD
)

// enum uverbs_attrs_destroy_cq_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_CQ_HANDLE = C.UVERBS_ATTR_DESTROY_CQ_HANDLE
	UVERBS_ATTR_DESTROY_CQ_RESP   = C.UVERBS_ATTR_DESTROY_CQ_RESP
)

// enum uverbs_attrs_create_qp_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_CREATE_QP_HANDLE           = C.UVERBS_ATTR_CREATE_QP_HANDLE
	UVERBS_ATTR_CREATE_QP_XRCD_HANDLE      = C.UVERBS_ATTR_CREATE_QP_XRCD_HANDLE
	UVERBS_ATTR_CREATE_QP_PD_HANDLE        = C.UVERBS_ATTR_CREATE_QP_PD_HANDLE
	UVERBS_ATTR_CREATE_QP_SRQ_HANDLE       = C.UVERBS_ATTR_CREATE_QP_SRQ_HANDLE
	UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE   = C.UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE
	UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE   = C.UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE
	UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE = C.UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE
	UVERBS_ATTR_CREATE_QP_USER_HANDLE      = C.UVERBS_ATTR_CREATE_QP_USER_HANDLE
	UVERBS_ATTR_CREATE_QP_CAP              = C.UVERBS_ATTR_CREATE_QP_CAP
	UVERBS_ATTR_CREATE_QP_TYPE             = C.UVERBS_ATTR_CREATE_QP_TYPE
	UVERBS_ATTR_CREATE_QP_FLAGS            = C.UVERBS_ATTR_CREATE_QP_FLAGS
	UVERBS_ATTR_CREATE_QP_SOURCE_QPN       = C.UVERBS_ATTR_CREATE_QP_SOURCE_QPN
	UVERBS_ATTR_CREATE_QP_EVENT_FD         = C.UVERBS_ATTR_CREATE_QP_EVENT_FD
	UVERBS_ATTR_CREATE_QP_RESP_CAP         = C.UVERBS_ATTR_CREATE_QP_RESP_CAP
	UVERBS_ATTR_CREATE_QP_RESP_QP_NUM      = C.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM
)

// enum uverbs_attrs_destroy_qp_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_QP_HANDLE = C.UVERBS_ATTR_DESTROY_QP_HANDLE
	UVERBS_ATTR_DESTROY_QP_RESP   = C.UVERBS_ATTR_DESTROY_QP_RESP
)

// enum uverbs_methods_qp from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_QP_CREATE  = C.UVERBS_METHOD_QP_CREATE
	UVERBS_METHOD_QP_DESTROY = C.UVERBS_METHOD_QP_DESTROY
)

// enum uverbs_attrs_create_srq_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_CREATE_SRQ_HANDLE       = C.UVERBS_ATTR_CREATE_SRQ_HANDLE
	UVERBS_ATTR_CREATE_SRQ_PD_HANDLE    = C.UVERBS_ATTR_CREATE_SRQ_PD_HANDLE
	UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE  = C.UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE
	UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE    = C.UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE
	UVERBS_ATTR_CREATE_SRQ_USER_HANDLE  = C.UVERBS_ATTR_CREATE_SRQ_USER_HANDLE
	UVERBS_ATTR_CREATE_SRQ_MAX_WR       = C.UVERBS_ATTR_CREATE_SRQ_MAX_WR
	UVERBS_ATTR_CREATE_SRQ_MAX_SGE      = C.UVERBS_ATTR_CREATE_SRQ_MAX_SGE
	UVERBS_ATTR_CREATE_SRQ_LIMIT        = C.UVERBS_ATTR_CREATE_SRQ_LIMIT
	UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS = C.UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS
	UVERBS_ATTR_CREATE_SRQ_TYPE         = C.UVERBS_ATTR_CREATE_SRQ_TYPE
	UVERBS_ATTR_CREATE_SRQ_EVENT_FD     = C.UVERBS_ATTR_CREATE_SRQ_EVENT_FD
	UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR  = C.UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR
	UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE = C.UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE
	UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM = C.UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM
)

// enum uverbs_attrs_destroy_srq_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_SRQ_HANDLE = C.UVERBS_ATTR_DESTROY_SRQ_HANDLE
	UVERBS_ATTR_DESTROY_SRQ_RESP   = C.UVERBS_ATTR_DESTROY_SRQ_RESP
)

// enum uverbs_methods_srq from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_SRQ_CREATE  = C.UVERBS_METHOD_SRQ_CREATE
	UVERBS_METHOD_SRQ_DESTROY = C.UVERBS_METHOD_SRQ_DESTROY
)

// enum uverbs_methods_cq from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_CQ_CREATE  = C.UVERBS_METHOD_CQ_CREATE
	UVERBS_METHOD_CQ_DESTROY = C.UVERBS_METHOD_CQ_DESTROY
)

// enum uverbs_attrs_create_wq_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_CREATE_WQ_HANDLE       = C.UVERBS_ATTR_CREATE_WQ_HANDLE
	UVERBS_ATTR_CREATE_WQ_PD_HANDLE    = C.UVERBS_ATTR_CREATE_WQ_PD_HANDLE
	UVERBS_ATTR_CREATE_WQ_CQ_HANDLE    = C.UVERBS_ATTR_CREATE_WQ_CQ_HANDLE
	UVERBS_ATTR_CREATE_WQ_USER_HANDLE  = C.UVERBS_ATTR_CREATE_WQ_USER_HANDLE
	UVERBS_ATTR_CREATE_WQ_TYPE         = C.UVERBS_ATTR_CREATE_WQ_TYPE
	UVERBS_ATTR_CREATE_WQ_EVENT_FD     = C.UVERBS_ATTR_CREATE_WQ_EVENT_FD
	UVERBS_ATTR_CREATE_WQ_MAX_WR       = C.UVERBS_ATTR_CREATE_WQ_MAX_WR
	UVERBS_ATTR_CREATE_WQ_MAX_SGE      = C.UVERBS_ATTR_CREATE_WQ_MAX_SGE
	UVERBS_ATTR_CREATE_WQ_FLAGS        = C.UVERBS_ATTR_CREATE_WQ_FLAGS
	UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR  = C.UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR
	UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE = C.UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE
	UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM  = C.UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM
)

// enum uverbs_attrs_destroy_wq_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_WQ_HANDLE = C.UVERBS_ATTR_DESTROY_WQ_HANDLE
	UVERBS_ATTR_DESTROY_WQ_RESP   = C.UVERBS_ATTR_DESTROY_WQ_RESP
)

// enum uverbs_methods_wq from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_WQ_CREATE  = C.UVERBS_METHOD_WQ_CREATE
	UVERBS_METHOD_WQ_DESTROY = C.UVERBS_METHOD_WQ_DESTROY
)

// enum uverbs_attrs_alloc_dm_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_ALLOC_DM_HANDLE    = C.UVERBS_ATTR_ALLOC_DM_HANDLE
	UVERBS_ATTR_ALLOC_DM_LENGTH    = C.UVERBS_ATTR_ALLOC_DM_LENGTH
	UVERBS_ATTR_ALLOC_DM_ALIGNMENT = C.UVERBS_ATTR_ALLOC_DM_ALIGNMENT
)

// enum uverbs_attrs_free_dm_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_FREE_DM_HANDLE = C.UVERBS_ATTR_FREE_DM_HANDLE
)

// enum uverbs_methods_dm from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_DM_ALLOC = C.UVERBS_METHOD_DM_ALLOC
	UVERBS_METHOD_DM_FREE  = C.UVERBS_METHOD_DM_FREE
)

// enum uverbs_attrs_reg_dm_mr_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_REG_DM_MR_HANDLE       = C.UVERBS_ATTR_REG_DM_MR_HANDLE
	UVERBS_ATTR_REG_DM_MR_OFFSET       = C.UVERBS_ATTR_REG_DM_MR_OFFSET
	UVERBS_ATTR_REG_DM_MR_LENGTH       = C.UVERBS_ATTR_REG_DM_MR_LENGTH
	UVERBS_ATTR_REG_DM_MR_PD_HANDLE    = C.UVERBS_ATTR_REG_DM_MR_PD_HANDLE
	UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS = C.UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS
	UVERBS_ATTR_REG_DM_MR_DM_HANDLE    = C.UVERBS_ATTR_REG_DM_MR_DM_HANDLE
	UVERBS_ATTR_REG_DM_MR_RESP_LKEY    = C.UVERBS_ATTR_REG_DM_MR_RESP_LKEY
	UVERBS_ATTR_REG_DM_MR_RESP_RKEY    = C.UVERBS_ATTR_REG_DM_MR_RESP_RKEY
)

// enum uverbs_methods_mr from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_DM_MR_REG     = C.UVERBS_METHOD_DM_MR_REG
	UVERBS_METHOD_MR_DESTROY    = C.UVERBS_METHOD_MR_DESTROY
	UVERBS_METHOD_ADVISE_MR     = C.UVERBS_METHOD_ADVISE_MR
	UVERBS_METHOD_QUERY_MR      = C.UVERBS_METHOD_QUERY_MR
	UVERBS_METHOD_REG_DMABUF_MR = C.UVERBS_METHOD_REG_DMABUF_MR
)

// enum uverbs_attrs_mr_destroy_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_MR_HANDLE = C.UVERBS_ATTR_DESTROY_MR_HANDLE
)

// enum uverbs_attrs_advise_mr_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_ADVISE_MR_PD_HANDLE = C.UVERBS_ATTR_ADVISE_MR_PD_HANDLE
	UVERBS_ATTR_ADVISE_MR_ADVICE    = C.UVERBS_ATTR_ADVISE_MR_ADVICE
	UVERBS_ATTR_ADVISE_MR_FLAGS     = C.UVERBS_ATTR_ADVISE_MR_FLAGS
	UVERBS_ATTR_ADVISE_MR_SGE_LIST  = C.UVERBS_ATTR_ADVISE_MR_SGE_LIST
)

// enum uverbs_attrs_query_mr_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_QUERY_MR_HANDLE      = C.UVERBS_ATTR_QUERY_MR_HANDLE
	UVERBS_ATTR_QUERY_MR_RESP_LKEY   = C.UVERBS_ATTR_QUERY_MR_RESP_LKEY
	UVERBS_ATTR_QUERY_MR_RESP_RKEY   = C.UVERBS_ATTR_QUERY_MR_RESP_RKEY
	UVERBS_ATTR_QUERY_MR_RESP_LENGTH = C.UVERBS_ATTR_QUERY_MR_RESP_LENGTH
	UVERBS_ATTR_QUERY_MR_RESP_IOVA   = C.UVERBS_ATTR_QUERY_MR_RESP_IOVA
)

// enum uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_REG_DMABUF_MR_HANDLE       = C.UVERBS_ATTR_REG_DMABUF_MR_HANDLE
	UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE    = C.UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE
	UVERBS_ATTR_REG_DMABUF_MR_OFFSET       = C.UVERBS_ATTR_REG_DMABUF_MR_OFFSET
	UVERBS_ATTR_REG_DMABUF_MR_LENGTH       = C.UVERBS_ATTR_REG_DMABUF_MR_LENGTH
	UVERBS_ATTR_REG_DMABUF_MR_IOVA         = C.UVERBS_ATTR_REG_DMABUF_MR_IOVA
	UVERBS_ATTR_REG_DMABUF_MR_FD           = C.UVERBS_ATTR_REG_DMABUF_MR_FD
	UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS = C.UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS
	UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY    = C.UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY
	UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY    = C.UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY
)

// enum uverbs_attrs_create_counters_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_CREATE_COUNTERS_HANDLE = C.UVERBS_ATTR_CREATE_COUNTERS_HANDLE
)

// enum uverbs_attrs_destroy_counters_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_COUNTERS_HANDLE = C.UVERBS_ATTR_DESTROY_COUNTERS_HANDLE
)

// enum uverbs_attrs_read_counters_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_READ_COUNTERS_HANDLE = C.UVERBS_ATTR_READ_COUNTERS_HANDLE
	UVERBS_ATTR_READ_COUNTERS_BUFF   = C.UVERBS_ATTR_READ_COUNTERS_BUFF
	UVERBS_ATTR_READ_COUNTERS_FLAGS  = C.UVERBS_ATTR_READ_COUNTERS_FLAGS
)

// enum uverbs_methods_actions_counters_ops from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_COUNTERS_CREATE  = C.UVERBS_METHOD_COUNTERS_CREATE
	UVERBS_METHOD_COUNTERS_DESTROY = C.UVERBS_METHOD_COUNTERS_DESTROY
	UVERBS_METHOD_COUNTERS_READ    = C.UVERBS_METHOD_COUNTERS_READ
)

// enum uverbs_attrs_info_handles_id from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_INFO_OBJECT_ID     = C.UVERBS_ATTR_INFO_OBJECT_ID
	UVERBS_ATTR_INFO_TOTAL_HANDLES = C.UVERBS_ATTR_INFO_TOTAL_HANDLES
	UVERBS_ATTR_INFO_HANDLES_LIST  = C.UVERBS_ATTR_INFO_HANDLES_LIST
)

// enum uverbs_methods_pd from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_PD_DESTROY = C.UVERBS_METHOD_PD_DESTROY
)

// enum uverbs_attrs_pd_destroy_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_PD_HANDLE = C.UVERBS_ATTR_DESTROY_PD_HANDLE
)

// enum uverbs_methods_mw from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_MW_DESTROY = C.UVERBS_METHOD_MW_DESTROY
)

// enum uverbs_attrs_mw_destroy_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_MW_HANDLE = C.UVERBS_ATTR_DESTROY_MW_HANDLE
)

// enum uverbs_methods_xrcd from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_XRCD_DESTROY = C.UVERBS_METHOD_XRCD_DESTROY
)

// enum uverbs_attrs_xrcd_destroy_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_XRCD_HANDLE = C.UVERBS_ATTR_DESTROY_XRCD_HANDLE
)

// enum uverbs_methods_ah from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_AH_DESTROY = C.UVERBS_METHOD_AH_DESTROY
)

// enum uverbs_attrs_ah_destroy_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_AH_HANDLE = C.UVERBS_ATTR_DESTROY_AH_HANDLE
)

// enum uverbs_methods_rwq_ind_tbl from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_RWQ_IND_TBL_DESTROY = C.UVERBS_METHOD_RWQ_IND_TBL_DESTROY
)

// enum uverbs_attrs_rwq_ind_tbl_destroy_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE = C.UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE
)

// enum uverbs_methods_flow from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_FLOW_DESTROY = C.UVERBS_METHOD_FLOW_DESTROY
)

// enum uverbs_attrs_flow_destroy_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_DESTROY_FLOW_HANDLE = C.UVERBS_ATTR_DESTROY_FLOW_HANDLE
)

// enum uverbs_method_async_event from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_METHOD_ASYNC_EVENT_ALLOC = C.UVERBS_METHOD_ASYNC_EVENT_ALLOC
)

// enum uverbs_attrs_async_event_create from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE = C.UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE
)

// enum uverbs_attrs_query_gid_table_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE       = C.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE
	UVERBS_ATTR_QUERY_GID_TABLE_FLAGS            = C.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS
	UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES     = C.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES
	UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES = C.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES
)

// enum uverbs_attrs_query_gid_entry_cmd_attr_ids from <rdma/ib_user_ioctl_cmds.h>.
const (
	UVERBS_ATTR_QUERY_GID_ENTRY_PORT       = C.UVERBS_ATTR_QUERY_GID_ENTRY_PORT
	UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX  = C.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX
	UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS      = C.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS
	UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY = C.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY
)

// #define constants from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_ACCESS_OPTIONAL_FIRST = C.IB_UVERBS_ACCESS_OPTIONAL_FIRST
	IB_UVERBS_ACCESS_OPTIONAL_LAST  = C.IB_UVERBS_ACCESS_OPTIONAL_LAST
)

// enum ib_uverbs_core_support from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS = C.IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS
)

// enum ib_uverbs_access_flags from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_ACCESS_LOCAL_WRITE      = C.IB_UVERBS_ACCESS_LOCAL_WRITE
	IB_UVERBS_ACCESS_REMOTE_WRITE     = C.IB_UVERBS_ACCESS_REMOTE_WRITE
	IB_UVERBS_ACCESS_REMOTE_READ      = C.IB_UVERBS_ACCESS_REMOTE_READ
	IB_UVERBS_ACCESS_REMOTE_ATOMIC    = C.IB_UVERBS_ACCESS_REMOTE_ATOMIC
	IB_UVERBS_ACCESS_MW_BIND          = C.IB_UVERBS_ACCESS_MW_BIND
	IB_UVERBS_ACCESS_ZERO_BASED       = C.IB_UVERBS_ACCESS_ZERO_BASED
	IB_UVERBS_ACCESS_ON_DEMAND        = C.IB_UVERBS_ACCESS_ON_DEMAND
	IB_UVERBS_ACCESS_HUGETLB          = C.IB_UVERBS_ACCESS_HUGETLB
	IB_UVERBS_ACCESS_RELAXED_ORDERING = C.IB_UVERBS_ACCESS_RELAXED_ORDERING
	IB_UVERBS_ACCESS_OPTIONAL_RANGE   = C.IB_UVERBS_ACCESS_OPTIONAL_RANGE
)

// enum ib_uverbs_srq_type from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_SRQT_BASIC = C.IB_UVERBS_SRQT_BASIC
	IB_UVERBS_SRQT_XRC   = C.IB_UVERBS_SRQT_XRC
	IB_UVERBS_SRQT_TM    = C.IB_UVERBS_SRQT_TM
)

// enum ib_uverbs_wq_type from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_WQT_RQ = C.IB_UVERBS_WQT_RQ
)

// enum ib_uverbs_wq_flags from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING       = C.IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING
	IB_UVERBS_WQ_FLAGS_SCATTER_FCS           = C.IB_UVERBS_WQ_FLAGS_SCATTER_FCS
	IB_UVERBS_WQ_FLAGS_DELAY_DROP            = C.IB_UVERBS_WQ_FLAGS_DELAY_DROP
	IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING = C.IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING
)

// enum ib_uverbs_qp_type from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_QPT_RC         = C.IB_UVERBS_QPT_RC
	IB_UVERBS_QPT_UC         = C.IB_UVERBS_QPT_UC
	IB_UVERBS_QPT_UD         = C.IB_UVERBS_QPT_UD
	IB_UVERBS_QPT_RAW_PACKET = C.IB_UVERBS_QPT_RAW_PACKET
	IB_UVERBS_QPT_XRC_INI    = C.IB_UVERBS_QPT_XRC_INI
	IB_UVERBS_QPT_XRC_TGT    = C.IB_UVERBS_QPT_XRC_TGT
	IB_UVERBS_QPT_DRIVER     = C.IB_UVERBS_QPT_DRIVER
)

// enum ib_uverbs_qp_create_flags from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK = C.IB_UVERBS_QP_CREATE_BLOCK_MULTICAST_LOOPBACK
	IB_UVERBS_QP_CREATE_SCATTER_FCS              = C.IB_UVERBS_QP_CREATE_SCATTER_FCS
	IB_UVERBS_QP_CREATE_CVLAN_STRIPPING          = C.IB_UVERBS_QP_CREATE_CVLAN_STRIPPING
	IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING    = C.IB_UVERBS_QP_CREATE_PCI_WRITE_END_PADDING
	IB_UVERBS_QP_CREATE_SQ_SIG_ALL               = C.IB_UVERBS_QP_CREATE_SQ_SIG_ALL
)

// enum ib_uverbs_query_port_cap_flags from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_PCF_SM                              = C.IB_UVERBS_PCF_SM
	IB_UVERBS_PCF_NOTICE_SUP                      = C.IB_UVERBS_PCF_NOTICE_SUP
	IB_UVERBS_PCF_TRAP_SUP                        = C.IB_UVERBS_PCF_TRAP_SUP
	IB_UVERBS_PCF_OPT_IPD_SUP                     = C.IB_UVERBS_PCF_OPT_IPD_SUP
	IB_UVERBS_PCF_AUTO_MIGR_SUP                   = C.IB_UVERBS_PCF_AUTO_MIGR_SUP
	IB_UVERBS_PCF_SL_MAP_SUP                      = C.IB_UVERBS_PCF_SL_MAP_SUP
	IB_UVERBS_PCF_MKEY_NVRAM                      = C.IB_UVERBS_PCF_MKEY_NVRAM
	IB_UVERBS_PCF_PKEY_NVRAM                      = C.IB_UVERBS_PCF_PKEY_NVRAM
	IB_UVERBS_PCF_LED_INFO_SUP                    = C.IB_UVERBS_PCF_LED_INFO_SUP
	IB_UVERBS_PCF_SM_DISABLED                     = C.IB_UVERBS_PCF_SM_DISABLED
	IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP              = C.IB_UVERBS_PCF_SYS_IMAGE_GUID_SUP
	IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP       = C.IB_UVERBS_PCF_PKEY_SW_EXT_PORT_TRAP_SUP
	IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP             = C.IB_UVERBS_PCF_EXTENDED_SPEEDS_SUP
	IB_UVERBS_PCF_CM_SUP                          = C.IB_UVERBS_PCF_CM_SUP
	IB_UVERBS_PCF_SNMP_TUNNEL_SUP                 = C.IB_UVERBS_PCF_SNMP_TUNNEL_SUP
	IB_UVERBS_PCF_REINIT_SUP                      = C.IB_UVERBS_PCF_REINIT_SUP
	IB_UVERBS_PCF_DEVICE_MGMT_SUP                 = C.IB_UVERBS_PCF_DEVICE_MGMT_SUP
	IB_UVERBS_PCF_VENDOR_CLASS_SUP                = C.IB_UVERBS_PCF_VENDOR_CLASS_SUP
	IB_UVERBS_PCF_DR_NOTICE_SUP                   = C.IB_UVERBS_PCF_DR_NOTICE_SUP
	IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP             = C.IB_UVERBS_PCF_CAP_MASK_NOTICE_SUP
	IB_UVERBS_PCF_BOOT_MGMT_SUP                   = C.IB_UVERBS_PCF_BOOT_MGMT_SUP
	IB_UVERBS_PCF_LINK_LATENCY_SUP                = C.IB_UVERBS_PCF_LINK_LATENCY_SUP
	IB_UVERBS_PCF_CLIENT_REG_SUP                  = C.IB_UVERBS_PCF_CLIENT_REG_SUP
	IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP      = C.IB_UVERBS_PCF_LINK_SPEED_WIDTH_TABLE_SUP
	IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP  = C.IB_UVERBS_PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP
	IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP = C.IB_UVERBS_PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP
	IB_UVERBS_PCF_MCAST_FDB_TOP_SUP               = C.IB_UVERBS_PCF_MCAST_FDB_TOP_SUP
	IB_UVERBS_PCF_HIERARCHY_INFO_SUP              = C.IB_UVERBS_PCF_HIERARCHY_INFO_SUP
	IB_UVERBS_PCF_IP_BASED_GIDS                   = C.IB_UVERBS_PCF_IP_BASED_GIDS
)

// enum ib_uverbs_query_port_flags from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_QPF_GRH_REQUIRED = C.IB_UVERBS_QPF_GRH_REQUIRED
)

// enum ib_uverbs_read_counters_flags from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_READ_COUNTERS_PREFER_CACHED = C.IB_UVERBS_READ_COUNTERS_PREFER_CACHED
)

// enum ib_uverbs_advise_mr_advice from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH          = C.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH
	IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE    = C.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
	IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = C.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
)

// enum ib_uverbs_advise_mr_flag from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_ADVISE_MR_FLAG_FLUSH = C.IB_UVERBS_ADVISE_MR_FLAG_FLUSH
)

// enum rdma_driver_id from <rdma/ib_user_ioctl_verbs.h>.
const (
	RDMA_DRIVER_UNKNOWN    = C.RDMA_DRIVER_UNKNOWN
	RDMA_DRIVER_MLX5       = C.RDMA_DRIVER_MLX5
	RDMA_DRIVER_MLX4       = C.RDMA_DRIVER_MLX4
	RDMA_DRIVER_CXGB3      = C.RDMA_DRIVER_CXGB3
	RDMA_DRIVER_CXGB4      = C.RDMA_DRIVER_CXGB4
	RDMA_DRIVER_MTHCA      = C.RDMA_DRIVER_MTHCA
	RDMA_DRIVER_BNXT_RE    = C.RDMA_DRIVER_BNXT_RE
	RDMA_DRIVER_OCRDMA     = C.RDMA_DRIVER_OCRDMA
	RDMA_DRIVER_NES        = C.RDMA_DRIVER_NES
	RDMA_DRIVER_I40IW      = C.RDMA_DRIVER_I40IW
	RDMA_DRIVER_IRDMA      = C.RDMA_DRIVER_IRDMA
	RDMA_DRIVER_VMW_PVRDMA = C.RDMA_DRIVER_VMW_PVRDMA
	RDMA_DRIVER_QEDR       = C.RDMA_DRIVER_QEDR
	RDMA_DRIVER_HNS        = C.RDMA_DRIVER_HNS
	RDMA_DRIVER_USNIC      = C.RDMA_DRIVER_USNIC
	RDMA_DRIVER_RXE        = C.RDMA_DRIVER_RXE
	RDMA_DRIVER_HFI1       = C.RDMA_DRIVER_HFI1
	RDMA_DRIVER_QIB        = C.RDMA_DRIVER_QIB
	RDMA_DRIVER_EFA        = C.RDMA_DRIVER_EFA
	RDMA_DRIVER_SIW        = C.RDMA_DRIVER_SIW
	RDMA_DRIVER_ERDMA      = C.RDMA_DRIVER_ERDMA
)

// enum ib_uverbs_gid_type from <rdma/ib_user_ioctl_verbs.h>.
const (
	IB_UVERBS_GID_TYPE_IB      = C.IB_UVERBS_GID_TYPE_IB
	IB_UVERBS_GID_TYPE_ROCE_V1 = C.IB_UVERBS_GID_TYPE_ROCE_V1
	IB_UVERBS_GID_TYPE_ROCE_V2 = C.IB_UVERBS_GID_TYPE_ROCE_V2
)

// Anonymous enum from <rdma/rdma_user_rxe.h>.
const (
	RXE_NETWORK_TYPE_IPV4 = C.RXE_NETWORK_TYPE_IPV4
	RXE_NETWORK_TYPE_IPV6 = C.RXE_NETWORK_TYPE_IPV6
)

// #define constants from <rdma/rdma_user_cm.h>.
const (
	RDMA_USER_CM_ABI_VERSION = C.RDMA_USER_CM_ABI_VERSION
	RDMA_MAX_PRIVATE_DATA    = C.RDMA_MAX_PRIVATE_DATA
)

// Anonymous enum from <rdma/rdma_user_cm.h>.
const (
	RDMA_USER_CM_CMD_CREATE_ID     = C.RDMA_USER_CM_CMD_CREATE_ID
	RDMA_USER_CM_CMD_DESTROY_ID    = C.RDMA_USER_CM_CMD_DESTROY_ID
	RDMA_USER_CM_CMD_BIND_IP       = C.RDMA_USER_CM_CMD_BIND_IP
	RDMA_USER_CM_CMD_RESOLVE_IP    = C.RDMA_USER_CM_CMD_RESOLVE_IP
	RDMA_USER_CM_CMD_RESOLVE_ROUTE = C.RDMA_USER_CM_CMD_RESOLVE_ROUTE
	RDMA_USER_CM_CMD_QUERY_ROUTE   = C.RDMA_USER_CM_CMD_QUERY_ROUTE
	RDMA_USER_CM_CMD_CONNECT       = C.RDMA_USER_CM_CMD_CONNECT
	RDMA_USER_CM_CMD_LISTEN        = C.RDMA_USER_CM_CMD_LISTEN
	RDMA_USER_CM_CMD_ACCEPT        = C.RDMA_USER_CM_CMD_ACCEPT
	RDMA_USER_CM_CMD_REJECT        = C.RDMA_USER_CM_CMD_REJECT
	RDMA_USER_CM_CMD_DISCONNECT    = C.RDMA_USER_CM_CMD_DISCONNECT
	RDMA_USER_CM_CMD_INIT_QP_ATTR  = C.RDMA_USER_CM_CMD_INIT_QP_ATTR
	RDMA_USER_CM_CMD_GET_EVENT     = C.RDMA_USER_CM_CMD_GET_EVENT
	RDMA_USER_CM_CMD_GET_OPTION    = C.RDMA_USER_CM_CMD_GET_OPTION
	RDMA_USER_CM_CMD_SET_OPTION    = C.RDMA_USER_CM_CMD_SET_OPTION
	RDMA_USER_CM_CMD_NOTIFY        = C.RDMA_USER_CM_CMD_NOTIFY
	RDMA_USER_CM_CMD_JOIN_IP_MCAST = C.RDMA_USER_CM_CMD_JOIN_IP_MCAST
	RDMA_USER_CM_CMD_LEAVE_MCAST   = C.RDMA_USER_CM_CMD_LEAVE_MCAST
	RDMA_USER_CM_CMD_MIGRATE_ID    = C.RDMA_USER_CM_CMD_MIGRATE_ID
	RDMA_USER_CM_CMD_QUERY         = C.RDMA_USER_CM_CMD_QUERY
	RDMA_USER_CM_CMD_BIND          = C.RDMA_USER_CM_CMD_BIND
	RDMA_USER_CM_CMD_RESOLVE_ADDR  = C.RDMA_USER_CM_CMD_RESOLVE_ADDR
	RDMA_USER_CM_CMD_JOIN_MCAST    = C.RDMA_USER_CM_CMD_JOIN_MCAST
)

// enum rdma_ucm_port_space from <rdma/rdma_user_cm.h>.
const (
	RDMA_PS_IPOIB = C.RDMA_PS_IPOIB
	RDMA_PS_IB    = C.RDMA_PS_IB
	RDMA_PS_TCP   = C.RDMA_PS_TCP
	RDMA_PS_UDP   = C.RDMA_PS_UDP
)

// Anonymous enum from <rdma/rdma_user_cm.h>.
const (
	RDMA_USER_CM_QUERY_ADDR = C.RDMA_USER_CM_QUERY_ADDR
	RDMA_USER_CM_QUERY_PATH = C.RDMA_USER_CM_QUERY_PATH
	RDMA_USER_CM_QUERY_GID  = C.RDMA_USER_CM_QUERY_GID
)

// Anonymous enum from <rdma/rdma_user_cm.h>.
const (
	RDMA_MC_JOIN_FLAG_FULLMEMBER          = C.RDMA_MC_JOIN_FLAG_FULLMEMBER
	RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER = C.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
	RDMA_MC_JOIN_FLAG_RESERVED            = C.RDMA_MC_JOIN_FLAG_RESERVED
)

// Anonymous enum from <rdma/rdma_user_cm.h>.
const (
	RDMA_OPTION_ID = C.RDMA_OPTION_ID
	RDMA_OPTION_IB = C.RDMA_OPTION_IB
)

// Anonymous enum from <rdma/rdma_user_cm.h>.
const (
	RDMA_OPTION_ID_TOS         = C.RDMA_OPTION_ID_TOS
	RDMA_OPTION_ID_REUSEADDR   = C.RDMA_OPTION_ID_REUSEADDR
	RDMA_OPTION_ID_AFONLY      = C.RDMA_OPTION_ID_AFONLY
	RDMA_OPTION_ID_ACK_TIMEOUT = C.RDMA_OPTION_ID_ACK_TIMEOUT
)

// Anonymous enum from <rdma/rdma_user_cm.h>.
const (
	RDMA_OPTION_IB_PATH = C.RDMA_OPTION_IB_PATH
)

// #define constants from <rdma/rdma_netlink.h>.
const (
	RDMA_NLA_F_MANDATORY = C.RDMA_NLA_F_MANDATORY
	RDMA_NLA_TYPE_MASK   = C.RDMA_NLA_TYPE_MASK
)

// Anonymous enum from <rdma/rdma_netlink.h>.
const (
	RDMA_NL_IWCM        = C.RDMA_NL_IWCM
	RDMA_NL_RSVD        = C.RDMA_NL_RSVD
	RDMA_NL_LS          = C.RDMA_NL_LS
	RDMA_NL_NLDEV       = C.RDMA_NL_NLDEV
	RDMA_NL_NUM_CLIENTS = C.RDMA_NL_NUM_CLIENTS
)

// Anonymous enum from <rdma/rdma_netlink.h>.
const (
	RDMA_NL_NUM_GROUPS = C.RDMA_NL_NUM_GROUPS
)

// Anonymous enum from <rdma/rdma_netlink.h>.
const (
	RDMA_NODE_IB_CA       = C.RDMA_NODE_IB_CA
	RDMA_NODE_IB_SWITCH   = C.RDMA_NODE_IB_SWITCH
	RDMA_NODE_IB_ROUTER   = C.RDMA_NODE_IB_ROUTER
	RDMA_NODE_RNIC        = C.RDMA_NODE_RNIC
	RDMA_NODE_USNIC       = C.RDMA_NODE_USNIC
	RDMA_NODE_USNIC_UDP   = C.RDMA_NODE_USNIC_UDP
	RDMA_NODE_UNSPECIFIED = C.RDMA_NODE_UNSPECIFIED
)

// enum rdma_nldev_command from <rdma/rdma_netlink.h>.
const (
	RDMA_NLDEV_CMD_UNSPEC          = C.RDMA_NLDEV_CMD_UNSPEC
	RDMA_NLDEV_CMD_GET             = C.RDMA_NLDEV_CMD_GET
	RDMA_NLDEV_CMD_SET             = C.RDMA_NLDEV_CMD_SET
	RDMA_NLDEV_CMD_NEWLINK         = C.RDMA_NLDEV_CMD_NEWLINK
	RDMA_NLDEV_CMD_DELLINK         = C.RDMA_NLDEV_CMD_DELLINK
	RDMA_NLDEV_CMD_PORT_GET        = C.RDMA_NLDEV_CMD_PORT_GET
	RDMA_NLDEV_CMD_SYS_GET         = C.RDMA_NLDEV_CMD_SYS_GET
	RDMA_NLDEV_CMD_SYS_SET         = C.RDMA_NLDEV_CMD_SYS_SET
	RDMA_NLDEV_CMD_RES_GET         = C.RDMA_NLDEV_CMD_RES_GET
	RDMA_NLDEV_CMD_RES_QP_GET      = C.RDMA_NLDEV_CMD_RES_QP_GET
	RDMA_NLDEV_CMD_RES_CM_ID_GET   = C.RDMA_NLDEV_CMD_RES_CM_ID_GET
	RDMA_NLDEV_CMD_RES_CQ_GET      = C.RDMA_NLDEV_CMD_RES_CQ_GET
	RDMA_NLDEV_CMD_RES_MR_GET      = C.RDMA_NLDEV_CMD_RES_MR_GET
	RDMA_NLDEV_CMD_RES_PD_GET      = C.RDMA_NLDEV_CMD_RES_PD_GET
	RDMA_NLDEV_CMD_GET_CHARDEV     = C.RDMA_NLDEV_CMD_GET_CHARDEV
	RDMA_NLDEV_CMD_STAT_SET        = C.RDMA_NLDEV_CMD_STAT_SET
	RDMA_NLDEV_CMD_STAT_GET        = C.RDMA_NLDEV_CMD_STAT_GET
	RDMA_NLDEV_CMD_STAT_DEL        = C.RDMA_NLDEV_CMD_STAT_DEL
	RDMA_NLDEV_CMD_RES_QP_GET_RAW  = C.RDMA_NLDEV_CMD_RES_QP_GET_RAW
	RDMA_NLDEV_CMD_RES_CQ_GET_RAW  = C.RDMA_NLDEV_CMD_RES_CQ_GET_RAW
	RDMA_NLDEV_CMD_RES_MR_GET_RAW  = C.RDMA_NLDEV_CMD_RES_MR_GET_RAW
	RDMA_NLDEV_CMD_RES_CTX_GET     = C.RDMA_NLDEV_CMD_RES_CTX_GET
	RDMA_NLDEV_CMD_RES_SRQ_GET     = C.RDMA_NLDEV_CMD_RES_SRQ_GET
	RDMA_NLDEV_CMD_STAT_GET_STATUS = C.RDMA_NLDEV_CMD_STAT_GET_STATUS
	RDMA_NLDEV_NUM_OPS             = C.RDMA_NLDEV_NUM_OPS
)

// enum rdma_nldev_print_type from <rdma/rdma_netlink.h>.
const (
	RDMA_NLDEV_PRINT_TYPE_UNSPEC = C.RDMA_NLDEV_PRINT_TYPE_UNSPEC
	RDMA_NLDEV_PRINT_TYPE_HEX    = C.RDMA_NLDEV_PRINT_TYPE_HEX
)

// enum rdma_nldev_attr from <rdma/rdma_netlink.h>.
const (
	RDMA_NLDEV_ATTR_UNSPEC                     = C.RDMA_NLDEV_ATTR_UNSPEC
	RDMA_NLDEV_ATTR_PAD                        = C.RDMA_NLDEV_ATTR_PAD
	RDMA_NLDEV_ATTR_DEV_INDEX                  = C.RDMA_NLDEV_ATTR_DEV_INDEX
	RDMA_NLDEV_ATTR_DEV_NAME                   = C.RDMA_NLDEV_ATTR_DEV_NAME
	RDMA_NLDEV_ATTR_PORT_INDEX                 = C.RDMA_NLDEV_ATTR_PORT_INDEX
	RDMA_NLDEV_ATTR_CAP_FLAGS                  = C.RDMA_NLDEV_ATTR_CAP_FLAGS
	RDMA_NLDEV_ATTR_FW_VERSION                 = C.RDMA_NLDEV_ATTR_FW_VERSION
	RDMA_NLDEV_ATTR_NODE_GUID                  = C.RDMA_NLDEV_ATTR_NODE_GUID
	RDMA_NLDEV_ATTR_SYS_IMAGE_GUID             = C.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID
	RDMA_NLDEV_ATTR_SUBNET_PREFIX              = C.RDMA_NLDEV_ATTR_SUBNET_PREFIX
	RDMA_NLDEV_ATTR_LID                        = C.RDMA_NLDEV_ATTR_LID
	RDMA_NLDEV_ATTR_SM_LID                     = C.RDMA_NLDEV_ATTR_SM_LID
	RDMA_NLDEV_ATTR_LMC                        = C.RDMA_NLDEV_ATTR_LMC
	RDMA_NLDEV_ATTR_PORT_STATE                 = C.RDMA_NLDEV_ATTR_PORT_STATE
	RDMA_NLDEV_ATTR_PORT_PHYS_STATE            = C.RDMA_NLDEV_ATTR_PORT_PHYS_STATE
	RDMA_NLDEV_ATTR_DEV_NODE_TYPE              = C.RDMA_NLDEV_ATTR_DEV_NODE_TYPE
	RDMA_NLDEV_ATTR_RES_SUMMARY                = C.RDMA_NLDEV_ATTR_RES_SUMMARY
	RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY          = C.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY
	RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME     = C.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME
	RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR     = C.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR
	RDMA_NLDEV_ATTR_RES_QP                     = C.RDMA_NLDEV_ATTR_RES_QP
	RDMA_NLDEV_ATTR_RES_QP_ENTRY               = C.RDMA_NLDEV_ATTR_RES_QP_ENTRY
	RDMA_NLDEV_ATTR_RES_LQPN                   = C.RDMA_NLDEV_ATTR_RES_LQPN
	RDMA_NLDEV_ATTR_RES_RQPN                   = C.RDMA_NLDEV_ATTR_RES_RQPN
	RDMA_NLDEV_ATTR_RES_RQ_PSN                 = C.RDMA_NLDEV_ATTR_RES_RQ_PSN
	RDMA_NLDEV_ATTR_RES_SQ_PSN                 = C.RDMA_NLDEV_ATTR_RES_SQ_PSN
	RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE         = C.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE
	RDMA_NLDEV_ATTR_RES_TYPE                   = C.RDMA_NLDEV_ATTR_RES_TYPE
	RDMA_NLDEV_ATTR_RES_STATE                  = C.RDMA_NLDEV_ATTR_RES_STATE
	RDMA_NLDEV_ATTR_RES_PID                    = C.RDMA_NLDEV_ATTR_RES_PID
	RDMA_NLDEV_ATTR_RES_KERN_NAME              = C.RDMA_NLDEV_ATTR_RES_KERN_NAME
	RDMA_NLDEV_ATTR_RES_CM_ID                  = C.RDMA_NLDEV_ATTR_RES_CM_ID
	RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY            = C.RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY
	RDMA_NLDEV_ATTR_RES_PS                     = C.RDMA_NLDEV_ATTR_RES_PS
	RDMA_NLDEV_ATTR_RES_SRC_ADDR               = C.RDMA_NLDEV_ATTR_RES_SRC_ADDR
	RDMA_NLDEV_ATTR_RES_DST_ADDR               = C.RDMA_NLDEV_ATTR_RES_DST_ADDR
	RDMA_NLDEV_ATTR_RES_CQ                     = C.RDMA_NLDEV_ATTR_RES_CQ
	RDMA_NLDEV_ATTR_RES_CQ_ENTRY               = C.RDMA_NLDEV_ATTR_RES_CQ_ENTRY
	RDMA_NLDEV_ATTR_RES_CQE                    = C.RDMA_NLDEV_ATTR_RES_CQE
	RDMA_NLDEV_ATTR_RES_USECNT                 = C.RDMA_NLDEV_ATTR_RES_USECNT
	RDMA_NLDEV_ATTR_RES_POLL_CTX               = C.RDMA_NLDEV_ATTR_RES_POLL_CTX
	RDMA_NLDEV_ATTR_RES_MR                     = C.RDMA_NLDEV_ATTR_RES_MR
	RDMA_NLDEV_ATTR_RES_MR_ENTRY               = C.RDMA_NLDEV_ATTR_RES_MR_ENTRY
	RDMA_NLDEV_ATTR_RES_RKEY                   = C.RDMA_NLDEV_ATTR_RES_RKEY
	RDMA_NLDEV_ATTR_RES_LKEY                   = C.RDMA_NLDEV_ATTR_RES_LKEY
	RDMA_NLDEV_ATTR_RES_IOVA                   = C.RDMA_NLDEV_ATTR_RES_IOVA
	RDMA_NLDEV_ATTR_RES_MRLEN                  = C.RDMA_NLDEV_ATTR_RES_MRLEN
	RDMA_NLDEV_ATTR_RES_PD                     = C.RDMA_NLDEV_ATTR_RES_PD
	RDMA_NLDEV_ATTR_RES_PD_ENTRY               = C.RDMA_NLDEV_ATTR_RES_PD_ENTRY
	RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY         = C.RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY
	RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY     = C.RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY
	RDMA_NLDEV_ATTR_NDEV_INDEX                 = C.RDMA_NLDEV_ATTR_NDEV_INDEX
	RDMA_NLDEV_ATTR_NDEV_NAME                  = C.RDMA_NLDEV_ATTR_NDEV_NAME
	RDMA_NLDEV_ATTR_DRIVER                     = C.RDMA_NLDEV_ATTR_DRIVER
	RDMA_NLDEV_ATTR_DRIVER_ENTRY               = C.RDMA_NLDEV_ATTR_DRIVER_ENTRY
	RDMA_NLDEV_ATTR_DRIVER_STRING              = C.RDMA_NLDEV_ATTR_DRIVER_STRING
	RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE          = C.RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE
	RDMA_NLDEV_ATTR_DRIVER_S32                 = C.RDMA_NLDEV_ATTR_DRIVER_S32
	RDMA_NLDEV_ATTR_DRIVER_U32                 = C.RDMA_NLDEV_ATTR_DRIVER_U32
	RDMA_NLDEV_ATTR_DRIVER_S64                 = C.RDMA_NLDEV_ATTR_DRIVER_S64
	RDMA_NLDEV_ATTR_DRIVER_U64                 = C.RDMA_NLDEV_ATTR_DRIVER_U64
	RDMA_NLDEV_ATTR_RES_PDN                    = C.RDMA_NLDEV_ATTR_RES_PDN
	RDMA_NLDEV_ATTR_RES_CQN                    = C.RDMA_NLDEV_ATTR_RES_CQN
	RDMA_NLDEV_ATTR_RES_MRN                    = C.RDMA_NLDEV_ATTR_RES_MRN
	RDMA_NLDEV_ATTR_RES_CM_IDN                 = C.RDMA_NLDEV_ATTR_RES_CM_IDN
	RDMA_NLDEV_ATTR_RES_CTXN                   = C.RDMA_NLDEV_ATTR_RES_CTXN
	RDMA_NLDEV_ATTR_LINK_TYPE                  = C.RDMA_NLDEV_ATTR_LINK_TYPE
	RDMA_NLDEV_SYS_ATTR_NETNS_MODE             = C.RDMA_NLDEV_SYS_ATTR_NETNS_MODE
	RDMA_NLDEV_ATTR_DEV_PROTOCOL               = C.RDMA_NLDEV_ATTR_DEV_PROTOCOL
	RDMA_NLDEV_NET_NS_FD                       = C.RDMA_NLDEV_NET_NS_FD
	RDMA_NLDEV_ATTR_CHARDEV_TYPE               = C.RDMA_NLDEV_ATTR_CHARDEV_TYPE
	RDMA_NLDEV_ATTR_CHARDEV_NAME               = C.RDMA_NLDEV_ATTR_CHARDEV_NAME
	RDMA_NLDEV_ATTR_CHARDEV_ABI                = C.RDMA_NLDEV_ATTR_CHARDEV_ABI
	RDMA_NLDEV_ATTR_CHARDEV                    = C.RDMA_NLDEV_ATTR_CHARDEV
	RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID           = C.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID
	RDMA_NLDEV_ATTR_STAT_MODE                  = C.RDMA_NLDEV_ATTR_STAT_MODE
	RDMA_NLDEV_ATTR_STAT_RES                   = C.RDMA_NLDEV_ATTR_STAT_RES
	RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK        = C.RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK
	RDMA_NLDEV_ATTR_STAT_COUNTER               = C.RDMA_NLDEV_ATTR_STAT_COUNTER
	RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY         = C.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY
	RDMA_NLDEV_ATTR_STAT_COUNTER_ID            = C.RDMA_NLDEV_ATTR_STAT_COUNTER_ID
	RDMA_NLDEV_ATTR_STAT_HWCOUNTERS            = C.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY       = C.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME  = C.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE = C.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE
	RDMA_NLDEV_ATTR_DEV_DIM                    = C.RDMA_NLDEV_ATTR_DEV_DIM
	RDMA_NLDEV_ATTR_RES_RAW                    = C.RDMA_NLDEV_ATTR_RES_RAW
	RDMA_NLDEV_ATTR_RES_CTX                    = C.RDMA_NLDEV_ATTR_RES_CTX
	RDMA_NLDEV_ATTR_RES_CTX_ENTRY              = C.RDMA_NLDEV_ATTR_RES_CTX_ENTRY
	RDMA_NLDEV_ATTR_RES_SRQ                    = C.RDMA_NLDEV_ATTR_RES_SRQ
	RDMA_NLDEV_ATTR_RES_SRQ_ENTRY              = C.RDMA_NLDEV_ATTR_RES_SRQ_ENTRY
	RDMA_NLDEV_ATTR_RES_SRQN                   = C.RDMA_NLDEV_ATTR_RES_SRQN
	RDMA_NLDEV_ATTR_MIN_RANGE                  = C.RDMA_NLDEV_ATTR_MIN_RANGE
	RDMA_NLDEV_ATTR_MAX_RANGE                  = C.RDMA_NLDEV_ATTR_MAX_RANGE
	RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK           = C.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX       = C.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX
	RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC     = C.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC
	RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE   = C.RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE
	RDMA_NLDEV_ATTR_DRIVER_DETAILS             = C.RDMA_NLDEV_ATTR_DRIVER_DETAILS
	RDMA_NLDEV_ATTR_RES_SUBTYPE                = C.RDMA_NLDEV_ATTR_RES_SUBTYPE
	RDMA_NLDEV_ATTR_MAX                        = C.RDMA_NLDEV_ATTR_MAX
)

// enum rdma_nl_counter_mode from <rdma/rdma_netlink.h>.
const (
	RDMA_COUNTER_MODE_NONE   = C.RDMA_COUNTER_MODE_NONE
	RDMA_COUNTER_MODE_AUTO   = C.RDMA_COUNTER_MODE_AUTO
	RDMA_COUNTER_MODE_MANUAL = C.RDMA_COUNTER_MODE_MANUAL
	RDMA_COUNTER_MODE_MAX    = C.RDMA_COUNTER_MODE_MAX
)

// enum rdma_nl_counter_mask from <rdma/rdma_netlink.h>.
const (
	RDMA_COUNTER_MASK_QP_TYPE = C.RDMA_COUNTER_MASK_QP_TYPE
	RDMA_COUNTER_MASK_PID     = C.RDMA_COUNTER_MASK_PID
)

// Anonymous enum from <rdma/ib_user_sa.h>.
const (
	IB_PATH_GMP             = C.IB_PATH_GMP
	IB_PATH_PRIMARY         = C.IB_PATH_PRIMARY
	IB_PATH_ALTERNATE       = C.IB_PATH_ALTERNATE
	IB_PATH_OUTBOUND        = C.IB_PATH_OUTBOUND
	IB_PATH_INBOUND         = C.IB_PATH_INBOUND
	IB_PATH_INBOUND_REVERSE = C.IB_PATH_INBOUND_REVERSE
	IB_PATH_BIDIRECTIONAL   = C.IB_PATH_BIDIRECTIONAL
)
