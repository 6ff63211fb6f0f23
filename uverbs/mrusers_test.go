package uverbs

import "testing"

// The kernel may give a closed MR's lkey to a new MR before the old one
// has left the PD's lookup: the old one's clean-up leaves the new entry,
// no cache keeps the lkey, and the next post naming it records its QP
// among the new MR's users.
func TestLKeyReusedBeforeForget(t *testing.T) {
	pd := &PD{}
	qp := &QP{pd: pd}
	old := fakeLKey(pd, 5)
	qp.trackRecvs([]RecvWR{{SGEs: []SGE{{LKey: 5}, {LKey: 6}}}}) // 6 names no MR
	if !qp.recvKeys.has(5) || qp.recvKeys.has(6) {
		t.Fatalf("cache %x after posts naming lkey 5 (an MR's) and 6 (none): want 5 only", qp.recvKeys)
	}
	if busy := releaseLKey(pd.beginCloseMR(old), 5); busy != "" {
		t.Fatalf("a QP without rings holds the MR: %s", busy)
	}
	if qp.recvKeys.has(5) {
		t.Fatal("MR.Close left the lkey in its user's cache")
	}
	// A post while the MR closes is recorded but not cached.
	qp.trackRecvs([]RecvWR{{SGEs: []SGE{{LKey: 5}}}})
	if qp.recvKeys.has(5) || len(old.users) != 1 {
		t.Fatalf("a post naming a closing MR: cached %v, %d users; want not cached, 1 user", qp.recvKeys.has(5), len(old.users))
	}
	// DEREG_MR, then the kernel reuses the lkey at once.
	mr := fakeLKey(pd, 5)
	pd.forgetMR(old)
	if pd.byLKey[5] != mr {
		t.Fatal("the old MR's clean-up dropped the new MR with its lkey")
	}
	if len(qp.mrs) != 0 || len(old.users) != 0 {
		t.Fatalf("the closed MR is still linked to its user: %d, %d", len(qp.mrs), len(old.users))
	}
	qp.trackRecvs([]RecvWR{{SGEs: []SGE{{LKey: 5}}}})
	if _, ok := mr.users[lkeyUser{qp: qp}]; !ok || !qp.recvKeys.has(5) {
		t.Fatal("a post naming the reused lkey is not among the new MR's users")
	}
	pd.dropUser(lkeyUser{qp: qp})
	if len(mr.users) != 0 || qp.mrs != nil {
		t.Fatal("a closed QP is still among the users")
	}
}

// A ring's cache holds the last four lkeys recorded; 0 is an lkey too.
func TestLKeyCache(t *testing.T) {
	var c lkeyCache
	if c.has(0) {
		t.Fatal("an empty cache has lkey 0")
	}
	for _, k := range []uint32{0, 7, 8, 9} {
		c.add(k)
	}
	if !c.has(0) || !c.has(7) || !c.has(8) || !c.has(9) || c.has(10) {
		t.Fatalf("cache %x: want 0, 7, 8 and 9", c)
	}
	c.add(10)
	if c.has(0) || !c.has(7) || !c.has(10) {
		t.Fatalf("cache %x after a fifth: want 7 to 10, the oldest (0) dropped", c)
	}
	c.forget(8)
	if c.has(8) || !c.has(7) || !c.has(9) || !c.has(10) {
		t.Fatalf("cache %x after forgetting 8: want 7, 9 and 10", c)
	}
}
