package provider

import (
	"unsafe"

	"github.com/goverbs/rdma/internal/abi"
	"github.com/goverbs/rdma/internal/sys"
)

// PostSend is the write() command POST_SEND with no work request, the send
// doorbell of the drivers whose kernel side reads the send ring itself: rxe
// runs the QP's requester on the WQEs already in the ring (rdma-core:
// providers/rxe/rxe.c post_send_db; docs/abi.md §3.7), siw processes its
// send ring (kernel: siw_verbs.c siw_post_send; rdma-core: siw.c siw_db).
// It lives in an mmap'd page of its own, so that the response pointer
// inside it always points at memory that cannot move, and ringing it
// builds nothing: Device.Doorbell writes the PostSendLen bytes at it.
type PostSend struct {
	hdr  abi.UverbsCmdHdr
	cmd  abi.UverbsPostSend
	resp abi.UverbsPostSendResp
}

// PostSendLen is the length of the command a PostSend holds.
const PostSendLen = unsafe.Sizeof(abi.UverbsCmdHdr{}) + unsafe.Sizeof(abi.UverbsPostSend{})

// NewPostSend builds the doorbell of the QP handle in a page of its own;
// unmap the page after DESTROY_QP.
func NewPostSend(handle uint32, what string) (*sys.Mapping, *PostSend, error) {
	m, err := sys.MmapAnon(int(unsafe.Sizeof(PostSend{})), what)
	if err != nil {
		return nil, nil, err
	}
	db := (*PostSend)(unsafe.Pointer(unsafe.SliceData(m.Bytes())))
	db.hdr = abi.UverbsCmdHdr{
		Command:  abi.IB_USER_VERBS_CMD_POST_SEND,
		InWords:  uint16(PostSendLen / 4),
		OutWords: uint16(unsafe.Sizeof(abi.UverbsPostSendResp{}) / 4),
	}
	db.cmd = abi.UverbsPostSend{
		Response: uint64(uintptr(unsafe.Pointer(&db.resp))),
		QPHandle: handle,
		// Any wqe_size of at least sizeof(ib_uverbs_send_wr) is accepted
		// (kernel: core/uverbs_cmd.c ib_uverbs_post_send).
		WQESize: uint32(unsafe.Sizeof(abi.UverbsSendWR{})),
	}
	return m, db, nil
}

// Command reports whether the PostSend is a POST_SEND command (for tests).
func (db *PostSend) Command() uint32 { return db.hdr.Command }
