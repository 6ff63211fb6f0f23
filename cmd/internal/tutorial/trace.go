package tutorial

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/goverbs/rdma/uverbs"
)

// The step trace (-v). Each line is
//
//	[15:04:05.000 #0007 who] KIND  text
//
// as roce-lab's logf_impl prints it (src/common.h: "[%s #%04lu %s] %-5s "
// with the time of day in milliseconds and a step counter shared by the
// whole process). KIND tells the planes apart:
//
//	SLOW  control plane: CM channel, listen, resolve, PD/CQ/QP, MR
//	      registration, connect/accept, private data, ESTABLISHED, disconnect
//	FAST  fast path: each work request posted, each work completion
//	DATA  data plane: the bytes a message or an RDMA operation carried
//
// who is "server" or "client", or on the server the peer of a connection.
type Trace struct {
	out *traceOut
	who string
}

type traceOut struct {
	mu   sync.Mutex
	w    io.Writer
	step uint64
	now  func() time.Time
}

// Trace kinds.
const (
	Slow = "SLOW"
	Fast = "FAST"
	Data = "DATA"
)

// NewTrace returns a trace writing to w; a nil w gives a trace that
// prints nothing.
func NewTrace(w io.Writer, who string) *Trace {
	if w == nil {
		return &Trace{who: who}
	}
	return &Trace{out: &traceOut{w: w, now: time.Now}, who: who}
}

// With returns a trace of the same output and step counter for another
// actor.
func (t *Trace) With(who string) *Trace { return &Trace{out: t.out, who: who} }

// Enabled reports whether lines are printed.
func (t *Trace) Enabled() bool { return t != nil && t.out != nil }

// Logf prints one step of kind (Slow, Fast or Data).
func (t *Trace) Logf(kind, format string, args ...any) {
	if !t.Enabled() {
		return
	}
	o := t.out
	o.mu.Lock()
	defer o.mu.Unlock()
	o.step++
	fmt.Fprintf(o.w, "[%s #%04d %s] %-5s %s\n", o.now().Format("15:04:05.000"), o.step, t.who, kind, fmt.Sprintf(format, args...))
}

func (t *Trace) Slow(format string, args ...any) { t.Logf(Slow, format, args...) }
func (t *Trace) Fast(format string, args ...any) { t.Logf(Fast, format, args...) }
func (t *Trace) Data(format string, args ...any) { t.Logf(Data, format, args...) }

// wrOpName is the C name of a send opcode without IBV_WR_.
func wrOpName(op uverbs.WROpcode) string {
	switch op {
	case uverbs.OpSend:
		return "SEND"
	case uverbs.OpSendImm:
		return "SEND_WITH_IMM"
	case uverbs.OpWrite:
		return "RDMA_WRITE"
	case uverbs.OpWriteImm:
		return "RDMA_WRITE_WITH_IMM"
	case uverbs.OpRead:
		return "RDMA_READ"
	}
	return op.String()
}

func sgeText(s []uverbs.SGE) string {
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = fmt.Sprintf("{addr=%#x len=%d lkey=%#x}", e.Addr, e.Length, e.LKey)
	}
	return "sge=" + strings.Join(parts, ",")
}

func sendFlagsText(f uverbs.SendFlags) string {
	var names []string
	for _, x := range []struct {
		f    uverbs.SendFlags
		name string
	}{{uverbs.SendSignaled, "SIGNALED"}, {uverbs.SendFence, "FENCE"}, {uverbs.SendSolicited, "SOLICITED"}, {uverbs.SendInline, "INLINE"}} {
		if f&x.f != 0 {
			names = append(names, x.name)
		}
	}
	if len(names) == 0 {
		return "0"
	}
	return strings.Join(names, "|")
}

// sendWRText describes a send work request as the trace prints it.
func sendWRText(wr *uverbs.SendWR) string {
	s := fmt.Sprintf("post %s wr_id=%d %s", wrOpName(wr.Op), wr.ID, sgeText(wr.SGEs))
	switch wr.Op {
	case uverbs.OpWrite, uverbs.OpWriteImm, uverbs.OpRead:
		s += fmt.Sprintf(" remote_addr=%#x rkey=%#x", wr.RemoteAddr, wr.RKey)
	}
	if wr.Op == uverbs.OpWriteImm || wr.Op == uverbs.OpSendImm {
		s += fmt.Sprintf(" imm_data=%d", wr.Imm)
	}
	return s + " flags=" + sendFlagsText(wr.Flags)
}

func recvWRText(wr *uverbs.RecvWR) string {
	return fmt.Sprintf("post RECV wr_id=%d %s", wr.ID, sgeText(wr.SGEs))
}

// wcText describes a work completion: status by its C name and
// ibv_wc_status_str text; the opcode is not set on failed completions
// (ibv_poll_cq(3)).
func wcText(wc *uverbs.WC) string {
	s := fmt.Sprintf("WC wr_id=%d status=%s (%v)", wc.ID, wc.Status.Name(), wc.Status)
	if wc.Status == uverbs.WCSuccess {
		s += fmt.Sprintf(" opcode=%v byte_len=%d", wc.Opcode, wc.ByteLen)
		if wc.Flags&uverbs.WCWithImm != 0 {
			s += fmt.Sprintf(" imm_data=%d", wc.Imm)
		}
	}
	return s + fmt.Sprintf(" qp_num=%#x", wc.QPN)
}

// printable shows at most 64 bytes of b as text (up to a NUL) for the DATA
// lines.
func printable(b []byte) string {
	s := cstring(b)
	if len(s) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", s[:64], len(s))
	}
	return fmt.Sprintf("%q", s)
}
