package nvmeof

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/rdmacm"
)

// Subsystem is an NVM subsystem a Target serves: its NQN, the strings
// Identify Controller reports, its namespaces and the hosts it admits.
// Set it up before Listen; the Target reads it once.
type Subsystem struct {
	// NQN names the subsystem (1 to 223 bytes; not the discovery NQN).
	NQN string
	// Serial (at most 20 ASCII bytes) defaults to hex digits derived from
	// the NQN; Model (at most 40) to "goverbs"; Firmware (at most 8) to
	// "1.0".
	Serial, Model, Firmware string
	// Namespaces are served with their IDs (TargetNamespace.ID, or their
	// place in the list counted from 1).
	Namespaces []*TargetNamespace
	// Hosts lists the host NQNs allowed to connect; empty allows any. The
	// discovery log lists the subsystem only to the hosts allowed.
	Hosts []string
}

// TargetConfig says how a Target serves its queues. The zero TargetConfig
// (or nil) takes up to 4 I/O queues of 128 entries each, commands of up to
// 128 KiB and 4 KiB of in-capsule data on I/O queues.
type TargetConfig struct {
	// QueueDepth is the most entries an I/O queue may have (CAP.MQES + 1),
	// 2 to 1024; default 128.
	QueueDepth int
	// MaxIOQueues is the most I/O queues a controller may have, 1 to 128;
	// default 4.
	MaxIOQueues int
	// MaxIOSize is the most data one command moves (MDTS): 4 KiB times a
	// power of two, up to 1 MiB; default 128 KiB. Each I/O queue keeps
	// min(QueueDepth, 8) buffers of this size registered (larger commands
	// beyond wait for one), one 4 KiB buffer per entry for commands of up
	// to 4 KiB, and QueueDepth × (64 + InlineDataSize) bytes of receive
	// buffers: about 2 MiB by default, pinned memory that counts against
	// RLIMIT_MEMLOCK.
	MaxIOSize int
	// InlineDataSize is how many bytes of data a command capsule may carry
	// on an I/O queue (IOCCSZ is 64 bytes more), up to 16 KiB; default
	// 4096, negative for none.
	InlineDataSize int
	// ConnectTimeout bounds each queue's RDMA connection setup once its
	// request has come, and then the wait for its Fabrics Connect
	// command; default 30 s.
	ConnectTimeout time.Duration
	// Logf, if set, receives a line for each controller made and ended
	// and each queue refused or ended by an error.
	Logf func(format string, args ...any)
	// Fault, if set, makes the target hostile, for testing hosts: it is
	// called with each command's queue ID and opcode once the command has
	// been carried out, before its response is sent, and what it returns
	// is done instead of the normal response; NoFault answers normally.
	// A held Async Event Request has no response to spoil. It is called
	// from many goroutines at once.
	Fault func(qid uint16, opcode uint8) Fault
}

// Fault is a misbehaviour TargetConfig.Fault asks for.
type Fault int

const (
	NoFault Fault = iota
	// FaultNoResponse sends no response at all.
	FaultNoResponse
	// FaultShortResponse sends a response capsule of 8 bytes.
	FaultShortResponse
	// FaultLongResponse sends a response capsule of 32 bytes, longer than
	// the host's receive buffers.
	FaultLongResponse
	// FaultUnknownCommandID answers with a command identifier that was
	// not sent (the command's with every bit flipped).
	FaultUnknownCommandID
	// FaultDuplicateResponse sends the response twice.
	FaultDuplicateResponse
)

var faultNames = [...]string{"NoFault", "FaultNoResponse", "FaultShortResponse", "FaultLongResponse", "FaultUnknownCommandID", "FaultDuplicateResponse"}

func (f Fault) String() string {
	if f >= 0 && int(f) < len(faultNames) {
		return faultNames[f]
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

type targetSettings struct {
	depth, maxQueues, maxIO, inline int
	mdts                            uint8
	connectTimeout                  time.Duration
	logf                            func(string, ...any)
	fault                           func(uint16, uint8) Fault
}

const (
	defaultTargetDepth  = 128
	defaultTargetQueues = 4
	maxIOSlots          = 8 // data buffers of an I/O queue
	adminSlots          = 2 // data buffers of an admin queue
)

func (c *TargetConfig) settings() (targetSettings, error) {
	var cfg TargetConfig
	if c != nil {
		cfg = *c
	}
	s := targetSettings{
		depth: cfg.QueueDepth, maxQueues: cfg.MaxIOQueues, maxIO: cfg.MaxIOSize, inline: cfg.InlineDataSize,
		connectTimeout: cfg.ConnectTimeout, logf: cfg.Logf, fault: cfg.Fault,
	}
	if s.depth == 0 {
		s.depth = defaultTargetDepth
	}
	if s.depth < 2 || s.depth > 1024 {
		return s, fmt.Errorf("nvmeof: QueueDepth %d: give 2 to 1024 entries: %w", s.depth, unix.EINVAL)
	}
	if s.maxQueues == 0 {
		s.maxQueues = defaultTargetQueues
	}
	if s.maxQueues < 1 || s.maxQueues > 128 {
		return s, fmt.Errorf("nvmeof: MaxIOQueues %d: give 1 to 128: %w", s.maxQueues, unix.EINVAL)
	}
	if s.maxIO == 0 {
		s.maxIO = defaultMaxIO
	}
	for m := 4096; m <= 1<<20; m *= 2 {
		if m == s.maxIO {
			s.mdts = uint8(log2(m / 4096))
			break
		}
	}
	if s.mdts == 0 && s.maxIO != 4096 {
		return s, fmt.Errorf("nvmeof: MaxIOSize %d: give 4 KiB times a power of two, at most 1 MiB (MDTS counts 4 KiB pages in powers of two): %w", s.maxIO, unix.EINVAL)
	}
	if s.inline == 0 {
		s.inline = 4096
	}
	if s.inline < 0 {
		s.inline = 0
	}
	if s.inline > 16<<10 || s.inline%16 != 0 {
		return s, fmt.Errorf("nvmeof: InlineDataSize %d: give a multiple of 16 up to 16 KiB (IOCCSZ counts 16-byte units): %w", s.inline, unix.EINVAL)
	}
	if s.connectTimeout <= 0 {
		s.connectTimeout = 30 * time.Second
	}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	return s, nil
}

// Target is an NVMe over Fabrics target on one RDMA address: the
// discovery controller and the subsystems given to Listen, each with
// controllers made on demand for the hosts that connect (the dynamic
// controller model). Its methods may be called from many goroutines.
type Target struct {
	set  targetSettings
	subs map[string]*tSubsystem
	disc *tSubsystem
	cap  uint64

	ln   *rdmacm.Listener
	addr netip.AddrPort

	cancel  context.CancelFunc // ends the accept loop's and the answers' context
	mu      sync.Mutex
	queues  map[*tQueue]struct{}
	closed  bool
	closing chan struct{}
	loop    sync.WaitGroup // the accept loop
	setups  sync.WaitGroup // requests being answered
	live    sync.WaitGroup // established queues until freed
	once    sync.Once
	cerr    error
}

// tSubsystem is a subsystem as served: the Subsystem's settings copied at
// Listen, and its controllers.
type tSubsystem struct {
	nqn, serial, model, firmware string
	discovery                    bool
	hosts                        map[string]bool // nil: any host
	ns                           []*tNamespace   // by ascending ID
	maxNSID                      uint32

	mu    sync.Mutex
	ctrls map[uint16]*tController
	next  uint16

	// SMART counters (NVMe base specification "SMART / Health
	// Information"): commands and bytes.
	readCmds, writeCmds, readBytes, writeBytes atomic.Uint64
}

type tNamespace struct {
	*TargetNamespace
	id    uint32
	ident nsIdentity
}

// Listen listens on address ("10.0.0.1:4420", ":4420", port 0 for any; no
// port is 4420)
// and serves subsystems there, and a discovery controller that lists
// them; it answers in the background until Close. A Subsystem's settings
// are checked and copied now: a bad one fails Listen with an error that
// says what to change, matching syscall.EINVAL.
func Listen(ctx context.Context, address string, cfg *TargetConfig, subsystems ...*Subsystem) (*Target, error) {
	if err := unix.RequireLinux(); err != nil {
		return nil, fmt.Errorf("nvmeof: %w", err)
	}
	t, err := newTarget(cfg, subsystems)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(address, ":") || strings.HasSuffix(address, "]") {
		address = fmt.Sprintf("%s:%d", address, DefaultPort)
	}
	recv := max(t.set.depth, adminDepth)
	t.ln, err = rdmacm.Listen(ctx, address, &rdmacm.Config{
		SendDepth:      3*recv + 1,
		RecvDepth:      recv,
		SendSGE:        1,
		RecvSGE:        1,
		CQDepth:        4*recv + 1,
		ConnectTimeout: t.set.connectTimeout,
		Backlog:        128,
	})
	if err != nil {
		return nil, fmt.Errorf("nvmeof: listen on %s: %w", address, err)
	}
	t.addr = t.ln.Addr()
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.loop.Add(1)
	go t.serve(ctx)
	return t, nil
}

// newTarget checks the configuration and subsystems and builds the
// Target's state without listening.
func newTarget(cfg *TargetConfig, subsystems []*Subsystem) (*Target, error) {
	set, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	t := &Target{
		set:     set,
		subs:    map[string]*tSubsystem{},
		queues:  map[*tQueue]struct{}{},
		closing: make(chan struct{}),
		// CAP: MQES (0-based), CQR (contiguous queues required), TO in
		// 500 ms units, CSS bit 37: the NVM command set; MPSMIN 0 (4 KiB).
		cap: uint64(set.depth-1) | 1<<16 | 15<<24 | 1<<37,
	}
	t.disc = &tSubsystem{nqn: DiscoveryNQN, discovery: true, serial: serialOf(DiscoveryNQN), model: "goverbs", firmware: "1.0", ctrls: map[uint16]*tController{}}
	if len(subsystems) == 0 {
		return nil, fmt.Errorf("nvmeof: a target needs at least one subsystem: %w", unix.EINVAL)
	}
	for i, s := range subsystems {
		ts, err := newSubsystem(s)
		if err != nil {
			return nil, fmt.Errorf("nvmeof: subsystem %d: %w", i, err)
		}
		if t.subs[ts.nqn] != nil {
			return nil, fmt.Errorf("nvmeof: subsystem %q is given twice: %w", ts.nqn, unix.EINVAL)
		}
		t.subs[ts.nqn] = ts
	}
	return t, nil
}

func serialOf(nqn string) string {
	h := sha256.Sum256([]byte(nqn))
	return hex.EncodeToString(h[:10])
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func newSubsystem(s *Subsystem) (*tSubsystem, error) {
	if s == nil {
		return nil, fmt.Errorf("nil *Subsystem: %w", unix.EINVAL)
	}
	if s.NQN == "" || len(s.NQN) > 223 || !isASCII(s.NQN) {
		return nil, fmt.Errorf("NQN %q: give 1 to 223 printable ASCII bytes, such as nqn.2024-01.io.example:disk1: %w", s.NQN, unix.EINVAL)
	}
	if s.NQN == DiscoveryNQN {
		return nil, fmt.Errorf("NQN %q is the discovery subsystem's, which every Target serves itself: %w", s.NQN, unix.EINVAL)
	}
	ts := &tSubsystem{nqn: s.NQN, serial: s.Serial, model: s.Model, firmware: s.Firmware, ctrls: map[uint16]*tController{}}
	if ts.serial == "" {
		ts.serial = serialOf(s.NQN)
	}
	if ts.model == "" {
		ts.model = "goverbs"
	}
	if ts.firmware == "" {
		ts.firmware = "1.0"
	}
	for _, f := range []struct {
		name, v string
		n       int
	}{{"Serial", ts.serial, 20}, {"Model", ts.model, 40}, {"Firmware", ts.firmware, 8}} {
		if len(f.v) > f.n || !isASCII(f.v) {
			return nil, fmt.Errorf("%s %q of %s: give at most %d printable ASCII bytes: %w", f.name, f.v, s.NQN, f.n, unix.EINVAL)
		}
	}
	if len(s.Hosts) > 0 {
		ts.hosts = map[string]bool{}
		for _, h := range s.Hosts {
			ts.hosts[h] = true
		}
	}
	seen := map[uint32]bool{}
	for i, ns := range s.Namespaces {
		if ns == nil || ns.store == nil {
			return nil, fmt.Errorf("namespace %d of %s: make it with MemoryNamespace, FileNamespace or NewNamespace: %w", i, s.NQN, unix.EINVAL)
		}
		id := ns.ID
		if id == 0 {
			id = uint32(i + 1)
		}
		if id >= 0xfffffffe {
			return nil, fmt.Errorf("namespace ID %#x of %s: give 1 to 0xFFFFFFFD: %w", id, s.NQN, unix.EINVAL)
		}
		if seen[id] {
			return nil, fmt.Errorf("namespace ID %d of %s is given twice: %w", id, s.NQN, unix.EINVAL)
		}
		seen[id] = true
		tn := &tNamespace{TargetNamespace: ns, id: id, ident: nsIdentity{
			blocks: uint64(ns.size / int64(ns.blockSize)), blockSize: ns.blockSize, readOnly: ns.ReadOnly,
			nguid: ns.NGUID, uuid: ns.UUID,
		}}
		// Identifiers derived from the subsystem and the ID: stable
		// across runs, and different for every namespace of every
		// subsystem.
		h := sha256.Sum256(binary.LittleEndian.AppendUint32([]byte(s.NQN+"\x00"), id))
		if tn.ident.nguid == [16]byte{} {
			copy(tn.ident.nguid[:], h[:16])
		}
		if tn.ident.uuid == [16]byte{} {
			copy(tn.ident.uuid[:], h[16:])
			tn.ident.uuid[6] = tn.ident.uuid[6]&0x0f | 0x80 // version 8: custom
			tn.ident.uuid[8] = tn.ident.uuid[8]&0x3f | 0x80 // RFC 9562 variant
		}
		ts.ns = append(ts.ns, tn)
		ts.maxNSID = max(ts.maxNSID, id)
	}
	slices.SortFunc(ts.ns, func(a, b *tNamespace) int { return int(int64(a.id) - int64(b.id)) })
	return ts, nil
}

func (s *tSubsystem) namespace(id uint32) *tNamespace {
	i, ok := slices.BinarySearchFunc(s.ns, id, func(n *tNamespace, id uint32) int { return int(int64(n.id) - int64(id)) })
	if !ok {
		return nil
	}
	return s.ns[i]
}

func (s *tSubsystem) allows(hostNQN string) bool { return s.hosts == nil || s.hosts[hostNQN] }

// Addr returns the address the Target listens on, with the port the
// kernel picked if 0 was asked for.
func (t *Target) Addr() netip.AddrPort { return t.addr }

// TargetController describes a controller a host has on a Target.
type TargetController struct {
	ID        uint16
	Subsystem string
	HostNQN   string
	HostID    [16]byte
	// IOQueues is how many I/O queues are connected.
	IOQueues int
}

// Controllers returns the controllers hosts have now, the discovery
// controllers among them, ordered by subsystem and ID.
func (t *Target) Controllers() []TargetController {
	var out []TargetController
	subs := []*tSubsystem{t.disc}
	for _, s := range t.subs {
		subs = append(subs, s)
	}
	for _, s := range subs {
		s.mu.Lock()
		for _, c := range s.ctrls {
			c.mu.Lock()
			out = append(out, TargetController{ID: c.id, Subsystem: s.nqn, HostNQN: c.hostNQN, HostID: c.hostID, IOQueues: max(len(c.queues)-1, 0)})
			c.mu.Unlock()
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b TargetController) int {
		if a.Subsystem != b.Subsystem {
			if a.Subsystem < b.Subsystem {
				return -1
			}
			return 1
		}
		return int(a.ID) - int(b.ID)
	})
	return out
}

// serve takes connection requests and answers each in a goroutine of its
// own, so that a host that stalls its handshake holds up no other.
func (t *Target) serve(ctx context.Context) {
	defer t.loop.Done()
	slots := make(chan struct{}, 64)
	for {
		req, err := t.ln.GetRequest(ctx)
		if err != nil {
			var ev *rdmacm.EventError
			if ctx.Err() != nil || errors.Is(err, rdmacm.ErrClosed) || errors.As(err, &ev) {
				if ctx.Err() == nil && !errors.Is(err, rdmacm.ErrClosed) {
					t.set.logf("nvmeof target %v: no longer listening: %v", t.addr, err)
				}
				return
			}
			// This side could not build one connection (no memory, say):
			// the CM refused it; the next host may fare better.
			t.set.logf("nvmeof target %v: %v", t.addr, err)
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-t.closing:
			req.Close()
			continue
		}
		t.setups.Add(1)
		go func() {
			defer t.setups.Done()
			defer func() { <-slots }()
			t.answer(ctx, req)
		}()
	}
}

// answer checks a queue's connection request, builds the queue and
// accepts it, or rejects it with the transport's status (NVMe over
// Fabrics RDMA transport, "RDMA_CM_REJECT").
func (t *Target) answer(ctx context.Context, req *rdmacm.Conn) {
	from := req.RemoteAddr()
	cmr, rej := parseCMRequest(req.PeerPrivateData(), t.set.maxQueues, t.set.depth)
	if rej != 0 {
		t.set.logf("nvmeof target %v: queue request from %v refused: %s", t.addr, from, cmRejectText(rej))
		req.Reject(cmReject(rej))
		return
	}
	q, err := t.newQueue(req, cmr)
	if err != nil {
		t.set.logf("nvmeof target %v: queue %d from %v: %v", t.addr, cmr.qid, from, err)
		req.Reject(cmReject(cmRejNoResources))
		if q != nil {
			q.buf.Close()
		}
		return
	}
	if err := req.Accept(ctx, cmAccept(q.depth)); err != nil {
		// Accept closed the connection, and with it the MR.
		t.set.logf("nvmeof target %v: queue %d from %v: %v", t.addr, cmr.qid, from, err)
		q.buf.Close()
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		req.Close()
		q.buf.Close()
		return
	}
	t.queues[q] = struct{}{}
	t.live.Add(1)
	t.mu.Unlock()
	q.start()
}

func cmRejectText(st uint16) string {
	if r, ok := cmRejectReason(cmReject(st)); ok {
		return r
	}
	return fmt.Sprint(st)
}

func (t *Target) removeQueue(q *tQueue) {
	t.mu.Lock()
	delete(t.queues, q)
	t.mu.Unlock()
	t.live.Done()
}

// subsystem finds a subsystem by NQN, the discovery subsystem included.
func (t *Target) subsystem(nqn string) *tSubsystem {
	if nqn == DiscoveryNQN {
		return t.disc
	}
	return t.subs[nqn]
}

// Close stops listening, disconnects every host's queues, ends every
// controller and frees everything, waiting for each queue's disconnect
// at most 3 s. Namespaces stay open: they are the caller's. Close is
// idempotent and safe on nil, and returns again what it returned first.
func (t *Target) Close() error {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		close(t.closing)
		if t.ln != nil {
			t.cancel()
			t.cerr = t.ln.Close()
		}
		t.loop.Wait()
		t.mu.Lock()
		t.closed = true
		qs := make([]*tQueue, 0, len(t.queues))
		for q := range t.queues {
			qs = append(qs, q)
		}
		t.mu.Unlock()
		t.setups.Wait()
		why := fmt.Errorf("%w: the target was closed", ErrClosed)
		for _, q := range qs {
			q.fail(why, false)
		}
		// Controllers whose queues ended meanwhile are gone already;
		// any left (a target with no listener, in tests) end here.
		for _, s := range append([]*tSubsystem{t.disc}, subsOf(t)...) {
			s.mu.Lock()
			cs := make([]*tController, 0, len(s.ctrls))
			for _, c := range s.ctrls {
				cs = append(cs, c)
			}
			s.mu.Unlock()
			for _, c := range cs {
				t.deleteController(c, why)
			}
		}
		t.live.Wait()
	})
	return t.cerr
}

func subsOf(t *Target) []*tSubsystem {
	out := make([]*tSubsystem, 0, len(t.subs))
	for _, s := range t.subs {
		out = append(out, s)
	}
	return out
}
