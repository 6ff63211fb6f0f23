package nvmeof

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goverbs/rdma/internal/unix"
	"github.com/goverbs/rdma/rdmacm"
)

// Config says how a host connects. The zero Config (or nil) gives one I/O
// queue of depth 32, commands of up to 128 KiB, a 5 s keep-alive and the
// host's identity from /etc/nvme (nvme-cli's files), or a random one.
type Config struct {
	// HostNQN names this host to the target; default /etc/nvme/hostnqn,
	// or nqn.2014-08.org.nvmexpress:uuid:<HostID>.
	HostNQN string
	// HostID identifies this host; default the UUID in /etc/nvme/hostid,
	// or a random one per process.
	HostID [16]byte
	// IOQueues is how many I/O queues to ask for, each its own QP; the
	// controller may grant fewer. Default 1.
	IOQueues int
	// QueueDepth is how many commands each I/O queue has in flight at most
	// (default 32; the kernel's target takes up to 127).
	QueueDepth int
	// MaxIOSize is the most data one command carries (default 128 KiB, and
	// at most the controller's MDTS); larger reads and writes are split.
	// Each queue keeps QueueDepth × MaxIOSize bytes of registered memory.
	MaxIOSize int
	// KeepAlive is the keep-alive timeout given to the controller (KATO);
	// a Keep Alive command is sent every half of it. Default 5 s, the
	// kernel's host's (NVME_DEFAULT_KATO); negative turns it off.
	KeepAlive time.Duration
	// CommandTimeout is how long a command may go unanswered before the
	// controller is given up as lost (ErrControllerLost); default 30 s.
	CommandTimeout time.Duration
	// Source is the local address to connect from; unset lets the kernel
	// pick by route.
	Source netip.Addr
	// ConnectTimeout bounds each queue's RDMA connection; default 30 s.
	ConnectTimeout time.Duration
	// Logf, if set, receives the RDMA CM steps of each queue (see
	// rdmacm.Config.Logf).
	Logf func(format string, args ...any)
}

type settings struct {
	Config
	hostNQN string
}

const (
	defaultDepth   = 32
	defaultMaxIO   = 128 << 10
	adminDataSize  = identifySize
	shutdownWait   = 5 * time.Second
	defaultTimeout = 30 * time.Second
)

func (c *Config) settings() (settings, error) {
	var s settings
	if c != nil {
		s.Config = *c
	}
	if s.IOQueues <= 0 {
		s.IOQueues = 1
	}
	if s.QueueDepth <= 0 {
		s.QueueDepth = defaultDepth
	}
	if s.QueueDepth > 1023 {
		return s, fmt.Errorf("nvmeof: QueueDepth %d: a queue holds at most 1023 commands (MQES): %w", s.QueueDepth, unix.EINVAL)
	}
	if s.MaxIOSize <= 0 {
		s.MaxIOSize = defaultMaxIO
	}
	if s.MaxIOSize%4096 != 0 || s.MaxIOSize > 1<<24-4096 {
		return s, fmt.Errorf("nvmeof: MaxIOSize %d: give a multiple of 4096 below 16 MiB (an SGL's length has 24 bits): %w", s.MaxIOSize, unix.EINVAL)
	}
	if s.KeepAlive == 0 {
		s.KeepAlive = 5 * time.Second
	}
	if s.KeepAlive > 0 && (s.KeepAlive < 100*time.Millisecond || s.KeepAlive > 24*time.Hour) {
		return s, fmt.Errorf("nvmeof: KeepAlive %v: give 100ms to 24h, or a negative value for none: %w", s.KeepAlive, unix.EINVAL)
	}
	if s.CommandTimeout == 0 {
		s.CommandTimeout = defaultTimeout
	}
	if s.CommandTimeout < 100*time.Millisecond {
		return s, fmt.Errorf("nvmeof: CommandTimeout %v: give at least 100ms: %w", s.CommandTimeout, unix.EINVAL)
	}
	if s.HostID == [16]byte{} {
		s.HostID = defaultHostID()
	}
	s.hostNQN = s.HostNQN
	if s.hostNQN == "" {
		s.hostNQN = defaultHostNQN(s.HostID)
	}
	if len(s.hostNQN) > 223 {
		return s, fmt.Errorf("nvmeof: HostNQN is %d bytes; an NQN has at most 223: %w", len(s.hostNQN), unix.EINVAL)
	}
	return s, nil
}

func (s *settings) cm() rdmacm.Config {
	return rdmacm.Config{Source: s.Source, ConnectTimeout: s.ConnectTimeout, Logf: s.Logf}
}

var (
	hostIDOnce sync.Once
	hostID     [16]byte
)

// defaultHostID is /etc/nvme/hostid's UUID (nvme-cli's), else one random
// UUID for the process.
func defaultHostID() [16]byte {
	hostIDOnce.Do(func() {
		if b, err := os.ReadFile("/etc/nvme/hostid"); err == nil {
			if id, ok := parseUUID(strings.TrimSpace(string(b))); ok {
				hostID = id
				return
			}
		}
		rand.Read(hostID[:])
		hostID[6] = hostID[6]&0x0f | 0x40 // version 4
		hostID[8] = hostID[8]&0x3f | 0x80 // RFC 4122 variant
	})
	return hostID
}

func defaultHostNQN(id [16]byte) string {
	if b, err := os.ReadFile("/etc/nvme/hostnqn"); err == nil {
		if nqn := strings.TrimSpace(string(b)); nqn != "" && len(nqn) <= 223 {
			return nqn
		}
	}
	return "nqn.2014-08.org.nvmexpress:uuid:" + formatUUID(id)
}

func parseUUID(s string) ([16]byte, bool) {
	var id [16]byte
	h := strings.ReplaceAll(s, "-", "")
	if len(s) != 36 || len(h) != 32 {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return id, false
	}
	return id, true
}

func formatUUID(id [16]byte) string {
	h := hex.EncodeToString(id[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Controller is a connection to an NVMe controller over RDMA: its admin
// queue and its I/O queues. Its methods may be called from many
// goroutines at once.
type Controller struct {
	s       settings
	address string
	nqn     string
	cntlid  uint16
	cap     uint64
	cc      uint32
	info    ControllerInfo

	// qmu orders the setting of admin and io by Connect with lost, which
	// may run meanwhile when a queue ends under it.
	qmu   sync.Mutex
	admin *queue
	io    []*queue
	next  atomic.Uint32

	// lostMu orders lost with Close: once Close has begun, a queue's end
	// is Close's doing and starts no teardown of its own.
	lostMu     sync.Mutex
	lostBegun  bool
	lostClosed bool
	lostDone   chan struct{} // closed when lost's teardown has ended
	closeOnce  sync.Once
	closeErr   error
	closing    chan struct{} // closed by Close: the keep-alive stops
	kaDone     chan struct{}
}

// Connect connects to the subsystem nqn at address ("10.0.0.1:4420", or
// without a port for 4420) as the kernel's `nvme connect -t rdma` does: the
// admin queue, the controller enabled (CC.EN), Identify Controller, the
// number of I/O queues set, and those queues, each on its own RDMA
// connection. Everything made on the way is freed when it fails.
func Connect(ctx context.Context, address, nqn string, cfg *Config) (*Controller, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	return connect(ctx, address, nqn, s, true)
}

func connect(ctx context.Context, address, nqn string, s settings, ioQueues bool) (c *Controller, err error) {
	if err := unix.RequireLinux(); err != nil {
		return nil, fmt.Errorf("nvmeof: %w", err)
	}
	if nqn == "" || len(nqn) > 223 {
		return nil, fmt.Errorf("nvmeof: subsystem NQN %q: give the NQN the target serves (1 to 223 bytes; `nvme discover` or Discover lists them): %w", nqn, unix.EINVAL)
	}
	if !strings.Contains(address, ":") || strings.HasSuffix(address, "]") {
		address = fmt.Sprintf("%s:%d", address, DefaultPort)
	}
	c = &Controller{s: s, address: address, nqn: nqn, closing: make(chan struct{}), kaDone: make(chan struct{}), lostDone: make(chan struct{})}
	made := c // the returns below set c to nil
	defer func() {
		if err != nil {
			close(made.kaDone)
			made.stopLost()
			made.teardown(fmt.Errorf("%w: connect failed", ErrClosed))
		}
	}()
	kato := uint32(0)
	if s.KeepAlive > 0 {
		kato = uint32(s.KeepAlive / time.Millisecond)
	}
	admin, err := c.openQueue(ctx, 0, adminDepth, adminDataSize, kato, 0xffff)
	if err != nil {
		return nil, err
	}
	c.qmu.Lock()
	c.admin = admin
	c.qmu.Unlock()
	if c.cap, err = c.propertyGet(ctx, propCAP); err != nil {
		return nil, err
	}
	if err = c.enable(ctx); err != nil {
		return nil, err
	}
	if c.info, err = c.identifyController(ctx); err != nil {
		return nil, err
	}
	if ioQueues && nqn != DiscoveryNQN {
		if err = c.openIOQueues(ctx); err != nil {
			return nil, err
		}
	}
	// A queue that ended while the others were being connected has
	// ended the controller.
	if err = c.admin.failed(); err != nil {
		return nil, err
	}
	go c.keepAlive()
	return c, nil
}

// openQueue connects queue qid and sends its Fabrics Connect command:
// cntlid 0xFFFF on the admin queue (the target picks the controller),
// the admin queue's answer on the I/O queues.
func (c *Controller) openQueue(ctx context.Context, qid uint16, entries, dataSize int, kato uint32, cntlid uint16) (*queue, error) {
	// A queue that ends before its Connect has succeeded only fails the
	// connect; from then on its end ends the controller.
	var joined atomic.Bool
	q, err := dialQueue(ctx, queueConfig{
		address: c.address, qid: qid, entries: entries, dataSize: dataSize,
		timeout: c.s.CommandTimeout, cm: c.s.cm(),
		onFail: func(err error) {
			if joined.Load() {
				c.lost(err)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	cmd := connectCommand(qid, entries, kato)
	var data [connectDataSize]byte
	connectData(data[:], c.s.HostID, cntlid, c.nqn, c.s.hostNQN)
	cqe, err := q.exchange(ctx, fmt.Sprintf("connect queue %d", qid), &cmd, data[:], nil)
	if err != nil {
		q.close(fmt.Errorf("%w: connect failed", ErrClosed))
		return nil, err
	}
	joined.Store(true)
	if err := q.failed(); err != nil {
		c.lost(err) // it ended between the two
	}
	if qid == 0 {
		c.cntlid = uint16(cqe.result)
	}
	return q, nil
}

func (c *Controller) openIOQueues(ctx context.Context) error {
	cmd := setNumQueues(c.s.IOQueues)
	cqe, err := c.admin.exchange(ctx, "set features (number of queues)", &cmd, nil, nil)
	if err != nil {
		return err
	}
	n := min(c.s.IOQueues, int(cqe.result&0xffff)+1, int(cqe.result>>16&0xffff)+1)
	depth := min(c.s.QueueDepth, int(c.cap&0xffff)) // MQES is 0-based: entries = depth+1 <= MQES+1
	if depth < 1 {
		return fmt.Errorf("%w: the controller's queues hold %d entries (CAP.MQES)", ErrProtocol, c.cap&0xffff+1)
	}
	size := c.s.MaxIOSize
	if mdts := c.info.MaxDataTransfer; mdts > 0 && mdts < size {
		size = mdts
	}
	inline := 0
	if c.info.InCapsuleDataOffset == 0 && c.info.IOCommandCapsuleSize > sqeSize {
		inline = min(c.info.IOCommandCapsuleSize-sqeSize, size)
	}
	for i := 1; i <= n; i++ {
		q, err := c.openQueue(ctx, uint16(i), depth+1, size, 0, c.cntlid)
		if err != nil {
			return err
		}
		q.inline = inline
		c.qmu.Lock()
		c.io = append(c.io, q)
		c.qmu.Unlock()
	}
	return nil
}

func (c *Controller) propertyGet(ctx context.Context, off uint32) (uint64, error) {
	cmd := propertyGet(off)
	cqe, err := c.admin.exchange(ctx, fmt.Sprintf("property get %#x", off), &cmd, nil, nil)
	if off != propCAP {
		cqe.result &= 0xffffffff
	}
	return cqe.result, err
}

func (c *Controller) propertySet(ctx context.Context, off, v uint32) error {
	cmd := propertySet(off, v)
	_, err := c.admin.exchange(ctx, fmt.Sprintf("property set %#x", off), &cmd, nil, nil)
	return err
}

// enable sets CC.EN with 64-byte and 16-byte queue entries, the NVM command
// set and 4 KiB pages, and waits for CSTS.RDY, at most CAP.TO (in 500 ms
// units), as the kernel's nvme_enable_ctrl does.
func (c *Controller) enable(ctx context.Context) error {
	// We speak the NVM command set with 4 KiB pages: CAP.CSS bit 0 (CAP
	// bit 37) and CAP.MPSMIN 0 (bits 51:48), as the kernel's host checks
	// (drivers/nvme/host/core.c nvme_enable_ctrl).
	if c.cap&(1<<37) == 0 {
		return fmt.Errorf("nvmeof: the controller does not offer the NVM command set (CAP %#x): %w", c.cap, ErrNotSupported)
	}
	if mpsmin := c.cap >> 48 & 0xf; mpsmin != 0 {
		return fmt.Errorf("nvmeof: the controller's smallest memory page is %d bytes (CAP.MPSMIN); only 4096 is supported: %w", 4096<<mpsmin, ErrNotSupported)
	}
	c.cc = ccIOSQES | ccIOCQES | ccEnable
	if err := c.propertySet(ctx, propCC, c.cc); err != nil {
		return err
	}
	limit := time.Duration(c.cap>>24&0xff) * 500 * time.Millisecond
	return c.waitStatus(ctx, "enable", limit, func(csts uint32) bool { return csts&cstsReady != 0 })
}

func (c *Controller) waitStatus(ctx context.Context, what string, limit time.Duration, ok func(uint32) bool) error {
	deadline := time.Now().Add(max(limit, 500*time.Millisecond))
	for {
		csts, err := c.propertyGet(ctx, propCSTS)
		if err != nil {
			return err
		}
		if csts&cstsFatal != 0 {
			return fmt.Errorf("nvmeof: %s: the controller reports a fatal status (CSTS %#x)", what, csts)
		}
		if ok(uint32(csts)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nvmeof: %s: the controller's status is %#x after %v", what, csts, limit)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nvmeof: %s: %w", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// keepAlive sends Keep Alive every half of KATO until Close. A failure
// ends the controller, through the admin queue's fail; an unanswered one
// does when its KATO has passed (the target has given up on us then).
func (c *Controller) keepAlive() {
	defer close(c.kaDone)
	if c.s.KeepAlive <= 0 {
		<-c.closing
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.closing:
			cancel()
		case <-ctx.Done(): // the loop below ended first
		}
	}()
	t := time.NewTicker(c.s.KeepAlive / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.admin.dead:
			return
		case <-t.C:
			kctx, kcancel := context.WithTimeout(ctx, c.s.KeepAlive)
			cmd := keepAlive()
			_, err := c.admin.exchange(kctx, "keep alive", &cmd, nil, nil)
			kcancel()
			if err != nil && ctx.Err() == nil {
				c.admin.fail(fmt.Errorf("%w: %v", ErrControllerLost, err))
				return
			}
		}
	}
}

// lost ends every queue once one has ended: the controller's state is
// then unknown, as the kernel's host sees it (it resets the controller).
func (c *Controller) lost(err error) {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if c.lostBegun || c.lostClosed {
		return
	}
	c.lostBegun = true
	go func() {
		defer close(c.lostDone)
		c.qmu.Lock()
		admin, io := c.admin, slices.Clone(c.io)
		c.qmu.Unlock()
		for _, q := range io {
			q.fail(err)
		}
		if admin != nil {
			admin.fail(err)
		}
		// Then tear the connections down, as the kernel's host does in its
		// error recovery (nvme_rdma_error_recovery_work, which destroys
		// the queues' QPs and CM IDs): over iWARP the target's controller
		// cannot be freed until our side of each connection is gone (seen
		// with siw on 6.12: nvmet's port removal waits for it).
		for _, q := range io {
			q.close(err)
		}
		if admin != nil {
			admin.close(err)
		}
	}()
}

// stopLost keeps lost from starting and waits for a teardown it started.
func (c *Controller) stopLost() {
	c.lostMu.Lock()
	c.lostClosed = true
	begun := c.lostBegun
	c.lostMu.Unlock()
	if begun {
		<-c.lostDone
	}
}

// Err returns why the controller can no longer be used, or nil.
func (c *Controller) Err() error {
	if c == nil || c.admin == nil {
		return ErrClosed
	}
	return c.admin.failed()
}

// Close shuts the controller down and disconnects: the I/O queues are
// disconnected (commands still waiting end with ErrClosed), then CC.SHN
// asks for a normal shutdown and Close waits for CSTS.SHST to say it is
// complete (at most 5 s), then the admin queue is disconnected, the
// order of the kernel's host (drivers/nvme/host/rdma.c
// nvme_rdma_shutdown_ctrl). A controller already lost is only
// disconnected. Close is idempotent and safe on nil; it returns the
// shutdown's error, if any.
func (c *Controller) Close() error {
	if c == nil {
		return nil
	}
	c.closeOnce.Do(func() {
		close(c.closing)
		<-c.kaDone
		c.stopLost()
		c.closeErr = c.teardown(fmt.Errorf("%w: the controller was closed", ErrClosed))
	})
	return c.closeErr
}

func (c *Controller) teardown(why error) error {
	for _, q := range c.io {
		q.close(why)
	}
	var err error
	if c.admin != nil && c.admin.failed() == nil && c.cc&ccEnable != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownWait+time.Second)
		if err = c.propertySet(ctx, propCC, c.cc&^ccShnMask|ccShnNormal); err == nil {
			err = c.waitStatus(ctx, "shutdown", shutdownWait, func(csts uint32) bool { return csts&cstsShstMask == cstsShstDone })
		}
		cancel()
	}
	if c.admin != nil {
		c.admin.close(why)
	}
	return err
}

// ioQueue picks the I/O queue for the next command, in turn.
func (c *Controller) ioQueue() (*queue, error) {
	if len(c.io) == 0 {
		return nil, fmt.Errorf("nvmeof: a discovery controller has no I/O queues: %w", unix.EINVAL)
	}
	return c.io[int(c.next.Add(1))%len(c.io)], nil
}

// Info returns what Identify Controller said at Connect.
func (c *Controller) Info() ControllerInfo { return c.info }

// ID returns the controller ID the target gave.
func (c *Controller) ID() uint16 { return c.cntlid }

// IOQueues returns how many I/O queues the controller granted and their depth.
func (c *Controller) IOQueues() (queues, depth int) {
	if len(c.io) == 0 {
		return 0, 0
	}
	return len(c.io), c.io[0].slots
}

// Version returns the controller's NVMe version (property VS) as major,
// minor, tertiary.
func (c *Controller) Version(ctx context.Context) (major, minor, tertiary int, err error) {
	vs, err := c.propertyGet(ctx, propVS)
	return int(vs >> 16), int(vs >> 8 & 0xff), int(vs & 0xff), err
}

// Property reads a controller property (CAP is 8 bytes, the others 4), as
// `nvme get-property` does.
func (c *Controller) Property(ctx context.Context, offset uint32) (uint64, error) {
	return c.propertyGet(ctx, offset)
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
