package main

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goverbs/rdma/uverbs"
)

// The measured loops follow perftest's run_iter_bw, run_iter_bw_server,
// run_iter_lat, run_iter_lat_send and run_iter_lat_write
// (perftest_resources.c @ v4.5-0.17). They allocate nothing: the work
// requests, SGEs, completion array and timestamp arrays are the session's.

// errTimeUp ends a loop in duration mode.
var errTimeUp = errors.New("duration over")

// prepSend sets the send work requests for messages of size bytes: the
// session's (the first QP's, for the latency loops) and each QP's.
func (s *session) prepSend(size int) {
	s.size = size
	s.swr[0] = s.sendWR(size, s.local, s.peer, s.sge[:])
	for _, st := range s.qps {
		st.swr[0] = s.sendWR(size, st.local, st.peer, st.sge[:])
	}
}

// sendWR is the work request of the test's verb from local to peer, its SGE
// in sge.
func (s *session) sendWR(size int, local uint64, peer dest, sge []uverbs.SGE) uverbs.SendWR {
	o := s.o
	sge[0] = uverbs.SGE{Addr: local, Length: uint32(size), LKey: s.mr.LKey()}
	wr := uverbs.SendWR{SGEs: sge, RemoteAddr: peer.VAddr, RKey: peer.RKey}
	switch o.verb {
	case write:
		wr.Op = uverbs.OpWrite
	case send:
		wr.Op = uverbs.OpSend
	case read:
		wr.Op = uverbs.OpRead
	case atomicOp:
		wr.Op, wr.CompareAdd = uverbs.OpAtomicFetchAdd, 1
	}
	if size <= o.inline {
		wr.Flags = uverbs.SendInline
	}
	return wr
}

// postRecvs posts n receives of size bytes on each QP, at most as many as
// it carries messages (qpIters), into its receive half of the buffer; a
// receive's ID is its QP's index (perftest: ctx_set_recv_wqes).
func (s *session) postRecvs(size, n int) error {
	s.rcnt = 0
	for i, st := range s.qps {
		st.rsge[0] = uverbs.SGE{Addr: st.recvBuf, Length: uint32(size), LKey: s.mr.LKey()}
		st.rwr[0] = uverbs.RecvWR{ID: uint64(i), SGEs: st.rsge[:]}
		st.rposted, st.rcnt = 0, 0
		for j := 0; j < min(n, s.qpIters(i)); j++ {
			if err := st.qp.PostRecv(st.rwr[:]); err != nil {
				return fmt.Errorf("couldn't post receive %d of %d on QP %d: %w", j+1, n, i, err)
			}
			st.rposted++
		}
	}
	return nil
}

// reap polls the CQ once and accounts its completions: a send's ID is its
// QP's index (above bit 32) and its number on that QP, and its completion
// means every send of that QP before it is done too; ccnt counts the sends
// known complete on all QPs, and comps[ccnt-1] is when that became known
// (perftest: run_iter_bw's totccnt and tcompleted). A receive's ID is its
// QP's index; it is counted and replaced while the run needs more.
func (s *session) reap() (int, error) {
	n, err := s.cq.Poll(s.wcs[:])
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		wc := &s.wcs[i]
		if wc.Status != uverbs.WCSuccess {
			return n, s.wcError(wc)
		}
		if wc.Opcode.IsRecv() {
			s.rcnt++
			st := s.qps[wc.ID]
			st.rcnt++
			if st.rposted < s.qpIters(int(wc.ID)) {
				if err := st.qp.PostRecv(st.rwr[:]); err != nil {
					return n, fmt.Errorf("couldn't post a receive after %d: %w", s.rcnt, err)
				}
				st.rposted++
			}
			// run_iter_bw_server: a credit after every rx_depth/3 receives
			// (counted from each multiple of rx_depth).
			if s.credits && st.rcnt%s.o.rxDepth%s.creditEvery == 0 {
				st.creditDue = true
			}
			continue
		}
		if wc.ID&creditID != 0 {
			s.qps[wc.ID&^creditID].scredit--
			continue
		}
		st := s.qps[wc.ID>>32]
		if done := int(wc.ID&0xffffffff) + 1; done > st.ccnt {
			s.ccnt += done - st.ccnt
			st.ccnt = done
		}
		if i := s.ccnt - 1; i < len(s.comps) {
			s.comps[i] = cycles()
		}
	}
	if s.credits {
		return n, s.postCredits()
	}
	return n, nil
}

// creditID marks the ID of a credit WRITE; the rest is its QP's index.
const creditID = 1 << 63

// postCredits sends each QP's due credit, its count of completed receives,
// as a signaled RDMA WRITE into the peer's credit word (perftest's
// ctrl_wr), if its send queue has room; else it stays due, and a later
// call sends the count of then. perftest waits for the room instead.
func (s *session) postCredits() error {
	for i, st := range s.qps {
		if !st.creditDue || st.scnt-st.ccnt+st.scredit >= s.o.txDepth {
			continue
		}
		atomic.StoreUint32(st.credOut, uint32(st.rcnt))
		st.csge[0] = uverbs.SGE{Addr: st.credInAddr + 4, Length: 4, LKey: s.mr.LKey()}
		st.cwr[0] = uverbs.SendWR{ID: creditID | uint64(i), Op: uverbs.OpWrite, Flags: uverbs.SendSignaled, SGEs: st.csge[:],
			RemoteAddr: st.peer.VAddr, RKey: st.peer.RKey}
		if err := st.qp.PostSend(st.cwr[:]); err != nil {
			return fmt.Errorf("couldn't post the credit of %d receives on QP %d: %w", st.rcnt, i, err)
		}
		st.scredit++
		st.creditDue = false
	}
	return nil
}

// finishCredits sends the credits still due and waits for every credit
// WRITE to complete (perftest: clean_scq_credit), by polling: no message of
// the peer's is coming.
func (s *session) finishCredits() error {
	for {
		left := false
		for _, st := range s.qps {
			left = left || st.creditDue || st.scredit > 0
		}
		if !left {
			return nil
		}
		n, err := s.reap()
		if err != nil {
			return err
		}
		if n == 0 {
			if err := s.idlePoll(); err != nil && !errors.Is(err, errTimeUp) {
				return err
			}
		}
	}
}

// creditShut reports whether the peer's credits keep st from sending more:
// perftest's sender keeps fewer than rx_depth messages beyond the count the
// receiver last wrote (run_iter_bw: swindow).
func (s *session) creditShut(st *qpState) bool {
	return s.credits && st.scnt+1-int(atomic.LoadUint32(st.credIn)) >= s.o.rxDepth
}

func (s *session) wcError(wc *uverbs.WC) error {
	return fmt.Errorf("completion with error: %v, opcode %v, wr_id %d (%d sends and %d receives completed)", wc.Status, wc.Opcode, wc.ID, s.ccnt, s.rcnt)
}

// idle is called when a poll found nothing: in event mode it sleeps until
// the next completion event and re-arms the CQ (perftest:
// ctx_notify_events); when polling it looks at the context and the
// duration now and then, and yields (runtime.Gosched) once per yieldEvery
// of polling. Go's sysmon preempts a goroutine that has run for 10 ms
// without a reschedule by signalling its thread (runtime/proc.go retake,
// forcePreemptNS); in the lab that pause was one of the slowest samples,
// and without it (GODEBUG=asyncpreemptoff=1) send_lat's p99.9 at 64 B
// dropped to about half. A yield while waiting anyway is cheaper: with
// nothing else to run the scheduler resumes the loop at once. The loop is
// not locked to its thread: a locked goroutine must be handed back to its
// own thread through the scheduler, which stalled it for milliseconds.
func (s *session) idle() error {
	if s.o.events {
		cq, err := s.ch.Wait(s.ctx)
		if err != nil {
			return fmt.Errorf("waiting for a completion event: %w", err)
		}
		return cq.ReqNotify(false)
	}
	return s.idlePoll()
}

// idlePoll is idle when polling, also with -e: for what no completion
// announces (the peer's credit).
func (s *session) idlePoll() error {
	if s.spin++; s.spin&1023 == 0 {
		if now := cycles(); now >= s.yieldAt {
			runtime.Gosched()
			s.yieldAt = cycles() + s.yieldEvery()
		}
		if err := s.ctx.Err(); err != nil {
			return err
		}
		if s.o.duration > 0 && s.durationOver() {
			return errTimeUp
		}
	}
	return nil
}

// yieldEvery is how long a polling loop runs between yields, in cycles():
// half of sysmon's 10 ms.
func (s *session) yieldEvery() int64 { return int64(s.clk.perUsec * 5000) }

// waitSends returns once the sends before n are complete.
func (s *session) waitSends(n int) error { return s.waitCount(&s.ccnt, n) }

// waitRecvs returns once n receives have completed.
func (s *session) waitRecvs(n int) error { return s.waitCount(&s.rcnt, n) }

// waitCount reaps completions until *count, which reap advances, reaches n.
func (s *session) waitCount(count *int, n int) error {
	for *count < n {
		got, err := s.reap()
		if err != nil {
			return err
		}
		if got == 0 {
			if err := s.idle(); err != nil {
				return err
			}
		}
	}
	return nil
}

// beginRun resets the counters and sets the duration's windows and the
// progress line's first time.
func (s *session) beginRun() {
	s.ccnt, s.spin, s.count = 0, 0, 0
	for _, st := range s.qps {
		st.scnt, st.ccnt, st.off = 0, 0, 0
		if s.credits {
			// The peer's credits of the last size are in (it waited for
			// their completions before the exchange since); as perftest
			// zeroes credit_buf after that exchange.
			atomic.StoreUint32(st.credIn, 0)
		}
	}
	clear(s.comps)
	s.started = time.Now()
	s.sampleFrom, s.sampleTo = -1, -1
	if s.o.duration > 0 {
		d, m := time.Duration(s.o.duration)*time.Second, time.Duration(s.o.margin)*time.Second
		s.sampleStart = s.started.Add(m)
		s.sampleEnd = s.started.Add(d - m)
		s.deadline = s.started.Add(d)
	}
	s.clk.stop()
	s.tickEvery = int64(s.clk.perUsec * 1e6)
	s.nextPrint = cycles() + 2*s.tickEvery
	if s.noProgress {
		s.nextPrint = math.MaxInt64
	}
	s.yieldAt = cycles() + s.yieldEvery()
}

// durationOver advances perftest's duration states (catch_alarm): samples
// are counted only between the margins; it reports whether the duration
// is over.
func (s *session) durationOver() bool {
	now := time.Now()
	if s.sampleFrom < 0 && !now.Before(s.sampleStart) {
		s.sampleFrom, s.sampleT0 = s.count, now
	}
	if s.sampleTo < 0 && !now.Before(s.sampleEnd) {
		s.sampleTo, s.sampleT1 = s.count, now
	}
	return !now.Before(s.deadline)
}

// progress prints how far a long run is, once a second after the first two.
//
//go:noinline
func (s *session) progress() {
	s.nextPrint = cycles() + s.tickEvery
	fmt.Fprintf(s.errOut, " %s: %d iterations in %.0f s\n", s.o.test, s.count, time.Since(s.started).Seconds())
	s.printed = true
}

// runOne runs the test at one size and prints its line.
func (s *session) runOne(size int) (bwResult, error) {
	o := s.o
	s.prepSend(size)
	var err error
	var r bwResult
	switch {
	case !o.lat && o.server == "" && !o.duplex:
		r, err = s.runBWServer(size)
	case !o.lat:
		r, err = s.runBW(size)
	case o.verb == write:
		err = s.runLatWrite(size)
	case o.verb == send:
		err = s.runLatSend(size)
	default:
		err = s.runLatRead()
	}
	if err != nil && !errors.Is(err, errTimeUp) {
		return r, err
	}
	s.clk.stop()
	if o.lat {
		rtt := 2
		if o.verb == read || o.verb == atomicOp {
			rtt = 1
		}
		if o.duration > 0 {
			printLatDuration(s.out, size, s.sampleTo-s.sampleFrom, s.sampleT1.Sub(s.sampleT0), rtt)
		} else {
			latStats(size, s.posts, s.clk.perUsec, rtt).print(s.out)
		}
		return r, nil
	}
	if !o.duplex {
		r.print(s.out) // -b prints both sides' sum once the reports are swapped
	}
	return r, nil
}

// runBW is the bandwidth client (run_iter_bw): for each QP in turn, post
// while it has fewer than -t requests in flight, one in -Q signaled (and
// its last), then take the completions there are; a completion of a QP's
// request j means all of that QP's before it are done. Addresses step
// through a page for messages up to half a page, as perftest's
// increase_loc_addr and increase_rem_addr do. With -b on send_bw both
// sides also receive as many messages as they send, and the server sends
// only once the first has arrived (run_iter_bi).
func (s *session) runBW(size int) (bwResult, error) {
	o := s.o
	iters := s.iters()
	total := iters * len(s.qps)
	if o.duration > 0 {
		total = iters // no end but the time
	}
	recvs := o.duplex && o.verb == send
	waitFirst := recvs && o.server == ""
	base := s.swr[0].Flags
	step := uint64(roundUp(size, 64))
	cycle := size <= 4096/2
	totscnt := 0
	s.beginRun()
	for totscnt < total || s.ccnt < total || (recvs && s.rcnt < total) {
		if waitFirst && s.rcnt > 0 {
			waitFirst = false
		}
		shut := false
		for i, st := range s.qps {
			if waitFirst {
				break
			}
			wr := &st.swr[0]
			for st.scnt < iters && st.scnt-st.ccnt+st.scredit < o.txDepth {
				if s.creditShut(st) {
					shut = true
					break
				}
				now := cycles()
				if s.posts != nil {
					s.posts[totscnt] = now
				}
				wr.ID = uint64(i)<<32 | uint64(st.scnt)
				wr.Flags = base
				if st.scnt%o.cqMod == o.cqMod-1 || st.scnt == iters-1 {
					wr.Flags |= uverbs.SendSignaled
				}
				if err := st.qp.PostSend(st.swr[:]); err != nil {
					return bwResult{}, fmt.Errorf("couldn't post send %d on QP %d: %w", st.scnt, i, err)
				}
				if cycle {
					if st.off += step; st.off >= 4096 {
						st.off = 0
					}
					st.sge[0].Addr = st.local + st.off
					if o.verb != send {
						wr.RemoteAddr = st.peer.VAddr + st.off
					}
				}
				st.scnt++
				totscnt++
				s.count = s.ccnt
				if now >= s.nextPrint {
					s.progress()
				}
			}
		}
		if o.duration > 0 && s.durationOver() {
			break
		}
		if shut {
			// The peer's credit comes as an RDMA WRITE, which no
			// completion announces: poll, also with -e.
			n, err := s.reap()
			if err == nil && n == 0 {
				err = s.idlePoll()
			}
			if errors.Is(err, errTimeUp) {
				break
			}
			if err != nil {
				return bwResult{}, err
			}
			continue
		}
		if s.ccnt >= totscnt && !(recvs && s.rcnt < total) {
			continue
		}
		if _, stop, err := s.reapOrIdle(); stop || err != nil {
			if err != nil {
				return bwResult{}, err
			}
			break
		}
	}
	if s.credits && recvs {
		if err := s.finishCredits(); err != nil {
			return bwResult{}, err
		}
	}
	if o.duration > 0 {
		return s.durationBW(size), nil
	}
	// With several QPs a completion may account for requests up to a
	// number that is not a multiple of -Q; the requests in between were
	// known complete by the time of the next completion.
	for j := len(s.comps) - 2; j >= 0; j-- {
		if s.comps[j] == 0 {
			s.comps[j] = s.comps[j+1]
		}
	}
	return bwStats(size, o.cqMod, s.posts, s.comps, s.clk.perUsec, o.gbits), nil
}

// stamp notes when send scnt is posted (for the latency samples).
func (s *session) stamp(scnt int) (now int64) {
	now = cycles()
	if s.posts != nil {
		s.posts[scnt] = now
	}
	return now
}

// lane is the QP that carries exchange k (from 0) of a latency run: with
// -q the exchanges go round-robin, k over QP k mod -q, one at a time (ours:
// perftest refuses -q in latency tests). It returns the QP's index, its
// state and the exchange's number on that QP (from 1), which write_lat
// writes into the message's last byte.
func (s *session) lane(k int) (int, *qpState, byte) {
	i := k % len(s.qps)
	return i, s.qps[i], byte(k/len(s.qps) + 1)
}

// post posts the QP's work request, named after the QP and the send's
// number on it, as reap reads it.
func (st *qpState) post(i int) error {
	st.swr[0].ID = uint64(i)<<32 | uint64(st.scnt)
	st.scnt++
	return st.qp.PostSend(st.swr[:])
}

// reapOrIdle takes the completions there are and, when there were none,
// idles once (a yield, or a wait with -e); stop says the test's time is up.
func (s *session) reapOrIdle() (n int, stop bool, err error) {
	if n, err = s.reap(); err != nil || n > 0 {
		return n, false, err
	}
	if err = s.idle(); errors.Is(err, errTimeUp) {
		return 0, true, nil
	}
	return 0, false, err
}

// durationBW is the bandwidth of the sampled window (perftest in duration
// mode has no peak).
func (s *session) durationBW(size int) bwResult {
	s.durationOver()
	r := bwResult{size: size, iters: s.sampleTo - s.sampleFrom}
	w := s.sampleT1.Sub(s.sampleT0).Seconds()
	if s.sampleFrom < 0 || s.sampleTo < 0 || w <= 0 {
		r.iters = 0
		return r
	}
	format := float64(0x100000)
	if s.o.gbits {
		format = 125000000
	}
	r.avg = float64(size) * float64(r.iters) / w / format
	r.msgRate = float64(r.iters) / w / 1e6
	return r
}

// runBWServer receives the messages of send_bw (run_iter_bw_server) and
// reports the rate from the poll that found the first receive to the end
// of the loop, as perftest's server (set_on_first_rx_packet, tcompleted[0]).
func (s *session) runBWServer(size int) (bwResult, error) {
	o := s.o
	iters := s.iters()
	if o.duration == 0 {
		iters *= len(s.qps) // each QP's receives
	}
	s.beginRun()
	var first, last int64
	for s.rcnt < iters {
		n, stop, err := s.reapOrIdle()
		if err != nil {
			return bwResult{}, err
		}
		if stop {
			break
		}
		if n == 0 {
			continue
		}
		now := cycles()
		if first == 0 {
			first = now
		}
		s.count = s.rcnt
		if now >= s.nextPrint {
			s.progress()
		}
		if o.duration > 0 && s.durationOver() {
			break
		}
	}
	last = cycles()
	if s.credits {
		if err := s.finishCredits(); err != nil {
			return bwResult{}, err
		}
	}
	if o.duration > 0 {
		return s.durationBW(size), nil
	}
	s.clk.stop()
	r := bwResult{size: size, iters: iters}
	if t := float64(last-first) / (s.clk.perUsec * 1e6); t > 0 {
		format := float64(0x100000)
		if o.gbits {
			format = 125000000
		}
		r.avg = float64(size) * float64(iters) / t / format
		r.peak = r.avg // the server has no per-message times to find a peak in
		r.msgRate = float64(iters) / t / 1e6
	}
	return r, nil
}

// runLatRead is read_lat and atomic_lat (run_iter_lat): post one signaled
// request, wait for its completion, again.
func (s *session) runLatRead() error {
	iters := s.iters()
	wr := &s.swr[0]
	wr.Flags |= uverbs.SendSignaled
	s.beginRun()
	for scnt := 0; scnt < iters; scnt++ {
		now := cycles()
		if s.posts != nil {
			s.posts[scnt] = now
		}
		wr.ID = uint64(scnt)
		if err := s.qp.PostSend(s.swr[:]); err != nil {
			return fmt.Errorf("couldn't post send %d: %w", scnt, err)
		}
		if err := s.waitSends(scnt + 1); err != nil {
			return err
		}
		s.count = scnt + 1
		if now >= s.nextPrint {
			s.progress()
		}
		if s.o.duration > 0 && s.durationOver() {
			return errTimeUp
		}
	}
	return nil
}

// runLatSend is send_lat (run_iter_lat_send): the client sends first; each
// side sends once it received; one send in -Q on each QP is signaled, and
// its QP's last, and waited for. With -q, exchange k goes over QP k mod -q
// (lane) on both sides.
func (s *session) runLatSend(size int) error {
	o := s.o
	iters := s.iters()
	client := o.server != ""
	base := s.qps[0].swr[0].Flags
	s.beginRun()
	// rcnt counts the receives this loop consumed; s.rcnt those completed,
	// which may be ahead when a receive was polled while waiting for a send.
	scnt, rcnt := 0, 0
	for scnt < iters || rcnt < iters {
		if rcnt < iters && !(scnt < 1 && client) {
			if err := s.waitRecvs(rcnt + 1); err != nil {
				return err
			}
			rcnt++
		}
		if scnt < iters {
			i, st, _ := s.lane(scnt)
			now := s.stamp(scnt)
			scnt++
			n := st.scnt + 1
			signaled := n%o.cqMod == 0 || n == s.qpIters(i)
			st.swr[0].Flags = base
			if signaled {
				st.swr[0].Flags |= uverbs.SendSignaled
			}
			if err := st.post(i); err != nil {
				return fmt.Errorf("couldn't post send %d: %w", scnt, err)
			}
			if signaled {
				if err := s.waitCount(&st.ccnt, st.scnt); err != nil {
					return err
				}
			}
			s.count = scnt
			if now >= s.nextPrint {
				s.progress()
			}
		}
		if o.duration > 0 && s.durationOver() {
			return errTimeUp
		}
	}
	return nil
}

// runLatWrite is write_lat (run_iter_lat_write): no receives; each side
// spins on the last byte of the message its peer writes into its buffer
// until it holds the exchange's number, and writes the next number in the
// last byte of its own message. The server writes first. With -q,
// exchange k goes over QP k mod -q (lane), into that QP's receive half,
// and the numbers count that QP's exchanges.
func (s *session) runLatWrite(size int) error {
	o := s.o
	iters := s.iters()
	server := o.server == ""
	for _, st := range s.qps {
		st.swr[0].Flags |= uverbs.SendSignaled
	}
	mem, base := s.buf.Bytes(), s.buf.Addr()
	s.beginRun()
	scnt, rcnt := 0, 0
	for scnt < iters || s.ccnt < iters || rcnt < iters {
		if rcnt < iters && !(scnt < 1 && server) {
			_, st, want := s.lane(rcnt)
			at := int(st.recvBuf-base) + size - 1
			pollAt, shift := wordOf(mem, at), uint(at&3*8)
			rcnt++
			for byte(atomic.LoadUint32(pollAt)>>shift) != want {
				if err := s.idle(); err != nil {
					return err
				}
			}
		}
		if scnt < iters {
			i, st, num := s.lane(scnt)
			now := s.stamp(scnt)
			scnt++
			mem[int(st.local-base)+size-1] = num
			if err := st.post(i); err != nil {
				return fmt.Errorf("couldn't post send %d: %w", scnt, err)
			}
			s.count = scnt
			if now >= s.nextPrint {
				s.progress()
			}
		}
		if s.ccnt < iters {
			if err := s.waitSends(min(scnt, iters)); err != nil {
				return err
			}
		}
		if o.duration > 0 && s.durationOver() {
			return errTimeUp
		}
	}
	return nil
}

// wordOf returns the aligned 32-bit word of mem that holds byte i: the
// spin loop loads it atomically so that it reads memory each time (perftest
// spins on a volatile char). The buffer is page aligned.
func wordOf(mem []byte, i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&mem[i&^3]))
}
