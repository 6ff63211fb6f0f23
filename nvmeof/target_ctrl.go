package nvmeof

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// tController is a controller of the dynamic model: made by an admin
// queue's Connect for one host, joined by that host's I/O queues, and
// ended when its admin queue ends, a transport error ends one of its
// queues, its keep-alive timer expires, or the Target closes.
type tController struct {
	t       *Target
	sub     *tSubsystem
	id      uint16
	hostNQN string
	hostID  [16]byte

	// active is when the controller last received a command (unix
	// nanoseconds): with traffic based keep alive (CTRATT.TBKAS) any
	// command restarts the keep-alive timer, as the kernel's target does.
	active atomic.Int64

	mu      sync.Mutex
	dead    bool
	cc      uint32
	csts    uint32
	kato    time.Duration
	timer   *time.Timer
	aenCfg  uint32
	aers    int                 // Async Event Requests held
	queues  map[uint16]*session // connected queues by ID, the admin queue's 0
	errs    [errorLogEntries]errorEntry
	errNext uint64 // entries logged so far
}

// newController makes a controller of sub for the host of ci, with the
// admin queue s, and starts its keep-alive timer. It fails when every
// controller ID is taken (controller busy).
func (t *Target) newController(sub *tSubsystem, ci connectInfo, kato time.Duration, s *session) (*tController, uint16) {
	c := &tController{t: t, sub: sub, hostNQN: ci.hostNQN, hostID: ci.hostID, kato: kato, queues: map[uint16]*session{0: s}}
	c.active.Store(time.Now().UnixNano())
	sub.mu.Lock()
	// IDs 1 to 0xFFEF: the dynamic model's range (0xFFF0 and up are
	// reserved; the kernel's target uses the same by default).
	for range 0xffef {
		sub.next = sub.next%0xffef + 1
		if sub.ctrls[sub.next] == nil {
			c.id = sub.next
			break
		}
	}
	if c.id == 0 {
		sub.mu.Unlock()
		return nil, scConnectCtrlBusy
	}
	sub.ctrls[c.id] = c
	sub.mu.Unlock()
	c.mu.Lock()
	c.startTimerLocked()
	c.mu.Unlock()
	t.set.logf("nvmeof target %v: controller %d of %s made for %s", t.addr, c.id, sub.nqn, ci.hostNQN)
	return c, 0
}

// controller finds a live controller of the subsystem by ID, for the host
// that made it.
func (s *tSubsystem) controller(id uint16, hostNQN string) *tController {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.ctrls[id]
	if c == nil || c.hostNQN != hostNQN {
		return nil
	}
	return c
}

func (c *tController) startTimerLocked() {
	if c.kato <= 0 || c.dead {
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(c.kato, c.keepAliveCheck)
	} else {
		c.timer.Reset(c.kato)
	}
}

// keepAliveCheck runs when the keep-alive timer fires: a controller idle
// for KATO is ended, as the kernel's target ends it
// (drivers/nvme/target/core.c nvmet_keep_alive_timer); one that was busy
// meanwhile waits for the rest of the time.
func (c *tController) keepAliveCheck() {
	c.mu.Lock()
	kato := c.kato
	idle := time.Since(time.Unix(0, c.active.Load()))
	if c.dead || kato <= 0 {
		c.mu.Unlock()
		return
	}
	if idle < kato {
		c.timer.Reset(kato - idle)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.t.deleteController(c, fmt.Errorf("%w: keep alive timeout: no command from the host for %v (KATO %v)", ErrControllerLost, idle.Round(time.Millisecond), kato))
}

func (c *tController) touch() { c.active.Store(time.Now().UnixNano()) }

func (c *tController) setKATO(kato time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kato = kato
	if kato <= 0 {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	c.startTimerLocked()
}

// ready reports CC.EN and CSTS.RDY: commands other than Fabrics ones need
// both (the kernel's target: nvmet_check_ctrl_status). dead reports a
// controller that ended.
func (c *tController) ready() (ok, dead bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.dead && c.cc&ccEnable != 0 && c.csts&cstsReady != 0, c.dead
}

// CC fields checked when the host enables the controller.
const (
	ccCSSMask = 7 << 4
	ccMPSMask = 0xf << 7
	ccAMSMask = 7 << 11
)

// updateCC is a Property Set of CC: enabling checks the entry sizes, page
// size, arbitration and command set the host asks for (a setting this
// controller does not have makes it fatal, CSTS.CFS, as the kernel's
// target does: nvmet_start_ctrl); disabling clears CSTS.RDY; a shutdown
// request completes at once (CSTS.SHST = 10b).
func (c *tController) updateCC(v uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.cc
	c.cc = v
	switch {
	case v&ccEnable != 0 && old&ccEnable == 0:
		if v>>16&0xf != 6 || v>>20&0xf != 4 || v&(ccCSSMask|ccMPSMask|ccAMSMask) != 0 {
			c.csts |= cstsFatal
		} else {
			c.csts = c.csts&^cstsFatal | cstsReady
		}
	case v&ccEnable == 0 && old&ccEnable != 0:
		c.csts &^= cstsReady | cstsFatal
	}
	switch {
	case v&ccShnMask != 0 && old&ccShnMask == 0:
		c.csts = c.csts&^cstsReady | cstsShstDone
	case v&ccShnMask == 0 && old&ccShnMask != 0:
		c.csts &^= cstsShstMask
	}
}

// addQueue joins I/O queue qid to the controller.
func (c *tController) addQueue(qid uint16, s *session) uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.dead:
		return scConnectInvalidParam
	case c.cc&ccEnable == 0 || c.csts&cstsReady == 0:
		// I/O queues are made once the controller is ready.
		return scCmdSeqError
	case c.queues[qid] != nil:
		return scCmdSeqError
	}
	c.queues[qid] = s
	return 0
}

// removeQueue lets an I/O queue the host disconnected go.
func (c *tController) removeQueue(qid uint16, s *session) {
	c.mu.Lock()
	if c.queues[qid] == s {
		delete(c.queues, qid)
	}
	c.mu.Unlock()
}

// logError keeps a failed command in the Error Information log.
func (c *tController) logError(e errorEntry) {
	c.mu.Lock()
	c.errNext++
	e.count = c.errNext
	c.errs[(c.errNext-1)%errorLogEntries] = e
	c.mu.Unlock()
}

// deleteController ends a controller: its keep-alive timer stops, its ID
// is free again and every queue it has is ended with why.
func (t *Target) deleteController(c *tController, why error) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.dead = true
	if c.timer != nil {
		c.timer.Stop()
	}
	qs := make([]*session, 0, len(c.queues))
	for _, s := range c.queues {
		qs = append(qs, s)
	}
	c.queues = nil
	c.mu.Unlock()
	c.sub.mu.Lock()
	if c.sub.ctrls[c.id] == c {
		delete(c.sub.ctrls, c.id)
	}
	c.sub.mu.Unlock()
	t.set.logf("nvmeof target %v: controller %d of %s for %s ended: %v", t.addr, c.id, c.sub.nqn, c.hostNQN, why)
	for _, s := range qs {
		s.end(why)
	}
}
