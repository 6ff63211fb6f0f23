package proto

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Type is the kind of a frame.
type Type byte

// Frame types. "to the guest" is from the host, or for the Unix socket from
// /init to the program in the primary guest; "from the guest" the other way.
const (
	Request  Type = 'R' // to the guest: JSON Command to run
	Signal   Type = 'S' // to the guest: one byte, a signal number for the command
	Ack      Type = 'A' // to the guest, channel 0: exit status received, power off
	PowerOff Type = 'P' // from the primary guest: stop the peer guest at once; no body
	Begin    Type = 'B' // from the guest: JSON Started (the command started, or on the peer's channel 0: ready)
	Stdout   Type = 'O' // from the guest: command stdout bytes
	Stderr   Type = 'E' // from the guest: command stderr bytes
	Exit     Type = 'X' // from the guest: JSON Status, the last frame of a channel
	Fatal    Type = 'F' // from the guest, channel 0: setup failed, text
)

// MaxBody bounds a frame's body; Stream splits longer output.
const MaxBody = 1 << 20

const headerLen = 9

// Frame is one message.
type Frame struct {
	Type Type
	Chan uint32
	Body []byte
}

// Share is a host directory mounted in the guest at the same path, or at At.
type Share struct {
	Tag      string // the virtfs mount_tag
	Path     string
	ReadOnly bool
	At       string `json:",omitempty"` // the guest's mount point if not Path
}

// Role of a guest in the two-guest lab.
const (
	RolePrimary = "primary" // runs the lab's command; can reach the peer through /init
	RolePeer    = "peer"    // runs commands for the primary guest
)

// Net is one guest's side of the two-guest network: the virtio-net device
// (eth0) joined to the other guest's, with an IPv4 address and an rxe device
// on it.
type Net struct {
	Role     string
	Netdev   string // "eth0"
	Dev      string // this guest's rxe device on Netdev
	Addr     string // this guest's IPv4 address
	Prefix   int    // prefix length of Addr
	PeerDev  string // the other guest's rxe device
	PeerAddr string // the other guest's IPv4 address
}

// Command is the body of a Request frame. On channel 0 the host fills in
// everything; for a peer command (channels above 0) only Args, Dir and Env.
type Command struct {
	Args    []string // empty for the peer guest's channel 0: it waits for commands
	Dir     string
	Env     []string
	Root    string // mount tag of the host root
	Shares  []Share
	Verbose bool
	Net     *Net `json:",omitempty"` // the two-guest network; nil with one guest
	Siw     bool `json:",omitempty"` // siw.ko is loaded: add the siw devices (SiwLinks)
}

// Started is the body of a Begin frame.
type Started struct {
	Kernel string // uname -r of the guest
}

// Status is the body of an Exit frame.
type Status struct {
	Code   int
	Signal string `json:",omitempty"` // the signal that killed the command
	Error  string `json:",omitempty"` // why the command could not run or finish
	Gone   bool   `json:",omitempty"` // the peer guest stopped (powered off or died) first
}

// Environment of the command, set by /init. GOVERBS_LAB and the one-guest
// variables are described in package lab.
const (
	EnvLab       = "GOVERBS_LAB"            // "1" inside the lab
	EnvKernel    = "GOVERBS_LAB_KERNEL"     // uname -r
	EnvLoDev     = "GOVERBS_LAB_LO_DEV"     // rxe device on lo
	EnvVeth      = "GOVERBS_LAB_VETH"       // dev:netdev:ipv4,dev:netdev:ipv4
	EnvRole      = "GOVERBS_LAB_ROLE"       // RolePrimary or RolePeer (two guests only)
	EnvLocalDev  = "GOVERBS_LAB_LOCAL_DEV"  // this guest's rxe device on the two-guest network
	EnvLocalAddr = "GOVERBS_LAB_LOCAL_ADDR" // this guest's IPv4 address on it
	EnvPeerDev   = "GOVERBS_LAB_PEER_DEV"   // the other guest's rxe device
	EnvPeerAddr  = "GOVERBS_LAB_PEER_ADDR"  // the other guest's IPv4 address
	EnvPeerSock  = "GOVERBS_LAB_PEER_SOCK"  // primary only: /init's Unix socket for peer requests
	EnvSiw       = "GOVERBS_LAB_SIW"        // siw devices: dev:netdev:ipv4,dev:netdev:ipv4 (unset without siw)
	EnvModules   = "GOVERBS_LAB_MODULES"    // the directory of the modules the guest loaded at boot (ModulesDir)
)

// ModulesDir is where the guest sees the modules /init loaded at boot
// (name.ko, uncompressed), so that a test can load one again after
// unloading it.
const ModulesDir = "/run/goverbs-lab/modules"

// PeerSock is where the primary guest's /init listens for peer requests.
const PeerSock = "/run/goverbs-lab/peer.sock"

// Read reads one frame.
func Read(r io.Reader) (Frame, error) {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[5:])
	if n > MaxBody {
		return Frame{}, fmt.Errorf("control frame of %d bytes (limit %d)", n, MaxBody)
	}
	f := Frame{Type: Type(hdr[0]), Chan: binary.BigEndian.Uint32(hdr[1:]), Body: make([]byte, n)}
	if _, err := io.ReadFull(r, f.Body); err != nil {
		return Frame{}, err
	}
	return f, nil
}

// Writer writes whole frames; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Send writes one frame in a single Write.
func (w *Writer) Send(f Frame) error {
	if len(f.Body) > MaxBody {
		return fmt.Errorf("control frame of %d bytes (limit %d)", len(f.Body), MaxBody)
	}
	buf := make([]byte, headerLen, headerLen+len(f.Body))
	buf[0] = byte(f.Type)
	binary.BigEndian.PutUint32(buf[1:], f.Chan)
	binary.BigEndian.PutUint32(buf[5:], uint32(len(f.Body)))
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.w.Write(append(buf, f.Body...))
	return err
}

// SendJSON sends v encoded as JSON.
func (w *Writer) SendJSON(t Type, ch uint32, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.Send(Frame{Type: t, Chan: ch, Body: b})
}

// Stream returns an io.Writer that sends what is written to it as frames of
// type t on channel ch, split at MaxBody.
func (w *Writer) Stream(t Type, ch uint32) io.Writer { return stream{w, t, ch} }

type stream struct {
	w  *Writer
	t  Type
	ch uint32
}

func (s stream) Write(p []byte) (int, error) {
	for off := 0; off < len(p); {
		n := min(len(p)-off, MaxBody)
		if err := s.w.Send(Frame{Type: s.t, Chan: s.ch, Body: p[off : off+n]}); err != nil {
			return off, err
		}
		off += n
	}
	return len(p), nil
}
