package uverbs

import (
	"fmt"
	"strings"
)

// Which rings may hold work naming an MR.
//
// MR.Close must refuse while a work request the kernel has not retired
// names the MR's lkey (docs/robustness.md §2). Rather than look through the
// rings of every QP and SRQ of the PD (rdmacm shares one PD among all the
// connections of a process), each MR keeps its users: the QPs and SRQs
// whose posts named its lkey. MR.Close looks through their rings only.
//
//   - Each ring (a QP's send queue, its receive queue, an SRQ) has an
//     lkeyCache of the last four lkeys its posts named, under the ring's
//     lock, which the post holds anyway. A post compares each SGE's lkey
//     with it (inline SGEs excepted: their bytes are copied at post time
//     and the device never sees their lkey).
//   - On a miss the post, still under the ring's lock, calls
//     PD.noteLKey: under PD.usersMu it looks the lkey up among the PD's
//     open MRs (PD.byLKey) and, if one has it, records the QP or SRQ among
//     the MR's users (MR.users, and the reverse in its mrs) and caches the
//     lkey. An lkey that names no open MR of the PD is not cached: the
//     device refuses such work (a local protection error), and the next
//     post that names it looks again, so that an MR registered later with
//     that lkey still learns its users.
//   - MR.Close (mr.go) marks the MR closing and copies its users under
//     usersMu; then for each user it takes the ring locks, removes the
//     lkey from the caches and looks through the rings for work naming
//     it (usesLKey); if any, it clears closing and refuses. Otherwise it
//     deregisters and, under usersMu, takes the MR out of byLKey and out
//     of its users' mrs.
//   - QP.Close and SRQ.Close, once the rings are destroyed, take
//     themselves out of the users of every MR in their mrs.
//
// Races, with lock order ring lock → usersMu and MR.mu → ring lock (no one
// takes a ring lock or MR.mu under usersMu):
//
//   - Post against MR.Close. A ring caches an lkey only in noteLKey,
//     under usersMu and while the MR is not closing, together with
//     recording its QP or SRQ among the MR's users. So every ring that
//     can hit the lkey in its cache belongs to a user MR.Close copied
//     after setting closing, and MR.Close removes the lkey from that
//     cache under the ring's lock before it deregisters: a post before
//     that is seen by the scan, a post after it misses. A post that
//     misses while the MR is closing is recorded among the users but not
//     cached: if the kernel keeps the MR (ErrBusy, or DEREG_MR failing),
//     a later Close still finds it. When the deregistration succeeds, no
//     cache holds the lkey, so when the kernel gives the lkey to a new MR
//     (it reuses keys), the first post naming it misses and records
//     itself among the new MR's users. Work posted on a ring after
//     MR.Close has looked at it, naming the MR being closed, is the
//     caller's race, as with rdma-core's ibv_dereg_mr; the device then
//     refuses it once the MR is gone.
//   - byLKey against lkey reuse. The kernel may give a closed MR's lkey to
//     a new MR as soon as DEREG_MR returns, before the old MR leaves
//     byLKey: addMR then replaces the entry, and the old MR's clean-up
//     removes the entry only if it is still its own.
//   - QP.Close (or SRQ.Close) against MR.Close. The QP stays among the
//     users until its rings are destroyed, so MR.Close sees the work the
//     QP's drain has not retired yet. Once closed, its rings are gone
//     (usesLKey reports nothing) and no post can add it again (posts check
//     closed first), so taking it out of the users at the end of Close is
//     final; an MR.Close that copied it before finds nothing on it.
//
// Four entries: a ring whose posts cycle through a few MRs (rping's send
// queue names three) would otherwise miss on every post and take the PD's
// usersMu, which all the connections of a device share under rdmacm.
type lkeyCache [4]uint64

// lkeyCached marks a filled cache entry; an lkey is 32 bits, so 0 is free.
const lkeyCached = 1 << 32

// has reports whether the ring's posts recorded lkey (under the ring's
// lock). A compare or four: the hot path's whole cost.
func (c *lkeyCache) has(lkey uint32) bool {
	k := uint64(lkey) | lkeyCached
	return c[0] == k || c[1] == k || c[2] == k || c[3] == k
}

// add puts lkey first and drops the oldest entry.
func (c *lkeyCache) add(lkey uint32) {
	c[3], c[2], c[1], c[0] = c[2], c[1], c[0], uint64(lkey)|lkeyCached
}

func (c *lkeyCache) forget(lkey uint32) {
	k := uint64(lkey) | lkeyCached
	for i := range c {
		if c[i] == k {
			c[i] = 0
		}
	}
}

// lkeyUser is a QP or an SRQ among an MR's users (one of the two is set).
type lkeyUser struct {
	qp  *QP
	srq *SRQ
}

// mrs returns the MRs whose users include u; under PD.usersMu.
func (u lkeyUser) mrs() *map[*MR]struct{} {
	if u.qp != nil {
		return &u.qp.mrs
	}
	return &u.srq.mrs
}

// noteLKey records u among the users of the open MR of pd whose lkey is
// lkey, if there is one, and caches lkey in c unless that MR is closing.
// The caller holds the lock of c's ring. It is the slow path of a post: it
// allocates when u first uses the MR.
//
//go:noinline
func (pd *PD) noteLKey(u lkeyUser, c *lkeyCache, lkey uint32) {
	pd.usersMu.Lock()
	if mr := pd.byLKey[lkey]; mr != nil {
		if mr.users == nil {
			mr.users = make(map[lkeyUser]struct{})
		}
		mr.users[u] = struct{}{}
		mrs := u.mrs()
		if *mrs == nil {
			*mrs = make(map[*MR]struct{})
		}
		(*mrs)[mr] = struct{}{}
		if !mr.closing {
			c.add(lkey)
		}
	}
	pd.usersMu.Unlock()
}

// beginCloseMR marks mr closing and returns its users.
func (pd *PD) beginCloseMR(mr *MR) []lkeyUser {
	pd.usersMu.Lock()
	defer pd.usersMu.Unlock()
	mr.closing = true
	users := make([]lkeyUser, 0, len(mr.users))
	for u := range mr.users {
		users = append(users, u)
	}
	return users
}

// reopenMR clears closing, when MR.Close refuses or the kernel keeps the
// region.
func (pd *PD) reopenMR(mr *MR) {
	pd.usersMu.Lock()
	mr.closing = false
	pd.usersMu.Unlock()
}

// forgetMR takes a deregistered mr out of byLKey and out of its users.
func (pd *PD) forgetMR(mr *MR) {
	pd.usersMu.Lock()
	if pd.byLKey[mr.lkey] == mr { // else a new MR has the lkey already
		delete(pd.byLKey, mr.lkey)
	}
	for u := range mr.users {
		delete(*u.mrs(), mr)
	}
	mr.users = nil
	pd.usersMu.Unlock()
}

// dropUser takes a closed QP or SRQ out of the users of its MRs.
func (pd *PD) dropUser(u lkeyUser) {
	pd.usersMu.Lock()
	mrs := u.mrs()
	for mr := range *mrs {
		delete(mr.users, u)
	}
	*mrs = nil
	pd.usersMu.Unlock()
}

// releaseLKey removes lkey from u's caches and describes u's outstanding
// work naming it, or returns "" if there is none. It takes u's ring locks.
func (u lkeyUser) releaseLKey(lkey uint32) string {
	if u.qp != nil {
		if used, s, r := u.qp.releaseLKey(lkey); used {
			return fmt.Sprintf("QP %#x has %d send and %d receive work requests outstanding, some naming the MR's lkey %#x", u.qp.qpn, s, r, lkey)
		}
		return ""
	}
	if used, n := u.srq.releaseLKey(lkey); used {
		return fmt.Sprintf("SRQ %#x has %d receive work requests posted, some naming the MR's lkey %#x", u.srq.srqn, n, lkey)
	}
	return ""
}

// releaseLKey runs releaseLKey on every user and joins what they say.
func releaseLKey(users []lkeyUser, lkey uint32) string {
	var parts []string
	for _, u := range users {
		if s := u.releaseLKey(lkey); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// trackSends records the lkeys of wrs' SGEs (inline requests excepted) that
// the send queue's cache lacks. The caller holds sendMu.
func (qp *QP) trackSends(wrs []SendWR) {
	for i := range wrs {
		if wrs[i].Flags&SendInline != 0 {
			continue
		}
		for _, g := range wrs[i].SGEs {
			if !qp.sendKeys.has(g.LKey) {
				qp.pd.noteLKey(lkeyUser{qp: qp}, &qp.sendKeys, g.LKey)
			}
		}
	}
}

// trackRecvs records the lkeys of wrs' SGEs that the receive queue's cache
// lacks. The caller holds recvMu.
func (qp *QP) trackRecvs(wrs []RecvWR) {
	for i := range wrs {
		for _, g := range wrs[i].SGEs {
			if !qp.recvKeys.has(g.LKey) {
				qp.pd.noteLKey(lkeyUser{qp: qp}, &qp.recvKeys, g.LKey)
			}
		}
	}
}

// trackRecvs records the lkeys of wrs' SGEs that the SRQ's cache lacks.
// The caller holds mu.
func (srq *SRQ) trackRecvs(wrs []RecvWR) {
	for i := range wrs {
		for _, g := range wrs[i].SGEs {
			if !srq.keys.has(g.LKey) {
				srq.pd.noteLKey(lkeyUser{srq: srq}, &srq.keys, g.LKey)
			}
		}
	}
}
