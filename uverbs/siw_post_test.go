package uverbs

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goverbs/rdma/uverbs/internal/siw"
	"golang.org/x/sys/unix"
)

// The errors of a siw post as uverbs returns them: a full ring says how
// much room there was; a record of unsignaled sends that is full keeps
// siw's text, which says what to do; a refused doorbell after every
// request was written is no PostError (everything was posted), and when
// siw moved the QP to ERROR over it the record of the state follows.
func TestProviderPostErrorsOfSiw(t *testing.T) {
	err := providerPostError("post_send", 2, 9, 5, 4, siw.ErrQueueFull)
	if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), "room for 2 of 4") {
		t.Errorf("a full siw ring: %v, want ErrQueueFull saying the room", err)
	}
	detail := fmt.Errorf("signal a send at least every 4 requests: %w", siw.ErrQueueFull)
	err = providerPostError("post_send", 0, 9, 1, 4, detail)
	var pe *PostError
	if !errors.Is(err, ErrQueueFull) || !errors.As(err, &pe) || strings.Contains(err.Error(), "room for") ||
		!strings.Contains(err.Error(), "signal a send at least every 4 requests") {
		t.Errorf("a full record of unsignaled sends: %v, want a PostError matching ErrQueueFull with siw's text", err)
	}

	qp := &QP{}
	qp.state.Store(uint32(QPStateRTS))
	wrs := []SendWR{{ID: 1}, {ID: 2}}
	err = qp.sendError("post_send", wrs, len(wrs), fmt.Errorf("refused: %w (%w)", siw.ErrMovedToError, unix.EINVAL))
	if errors.As(err, &pe) || !errors.Is(err, unix.EINVAL) || strings.Contains(err.Error(), "nothing was posted") {
		t.Errorf("a refused doorbell: %v, want a plain error matching EINVAL", err)
	}
	if s := QPState(qp.state.Load()); s != QPStateError {
		t.Errorf("QP recorded in %v after siw moved it to ERROR, want ERR", s)
	}
	qp.state.Store(uint32(QPStateRTS))
	qp.sendError("post_send", wrs, len(wrs), fmt.Errorf("refused: %w", unix.ENOTCONN))
	if s := QPState(qp.state.Load()); s != QPStateRTS {
		t.Errorf("QP recorded in %v after a doorbell refused with ENOTCONN, want RTS", s)
	}
}

// siw ignores every move out of ERROR (kernel: siw_qp.c siw_qp_modify):
// such a Modify is refused before any command, saying to create a new
// QP, and the record stays ERROR.
func TestSiwModifyOutOfError(t *testing.T) {
	qp := &QP{ctx: &Device{dev: DeviceInfo{Name: "siw0", DriverID: DriverSIW}, deviceProvider: deviceProvider{kind: providers[DriverSIW]}}, qpn: 0x11}
	qp.state.Store(uint32(QPStateError))
	for _, s := range []QPState{QPStateReset, QPStateInit, QPStateRTR, QPStateRTS} {
		err := qp.modifyLocked(&QPAttr{State: s}, QPAttrState)
		if !errors.Is(err, ErrQPState) || !strings.Contains(err.Error(), "create a new QP") || !strings.Contains(err.Error(), "siw0") {
			t.Errorf("ERR -> %v on siw: %v; want ErrQPState saying to create a new QP", s, err)
		}
	}
	if s := QPState(qp.state.Load()); s != QPStateError {
		t.Errorf("record %v after refused moves, want ERR", s)
	}
}
