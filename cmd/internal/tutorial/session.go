package tutorial

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/goverbs/rdma/rdmacm"
	"github.com/goverbs/rdma/uverbs"
)

// session is one side of one protocol on one connection.
type session interface {
	// prepare registers memory and posts receives before the connection is
	// established (before CONNECT on the client, ACCEPT on the server), and
	// returns the private data to send with it.
	prepare(ep Endpoint) ([]byte, error)
	// run is the exchange once the connection is established. It returns
	// when this side is done; the caller then ends the connection.
	run(ctx context.Context, ep Endpoint) error
}

// env is what a session needs besides its endpoint.
type env struct {
	client  bool
	mode    string
	message string // the text this side sends (-s, or the tutorial's)
	tr      *Trace
	// out prints a result line for the user (stdout).
	out func(format string, args ...any)
}

// Mode is one exchange of a protocol.
type Mode struct {
	Name    string
	Port    int    // default port
	Summary string // one line for -h
	// Param is sent with CONNECT and ACCEPT.
	Param rdmacm.ConnParam
	// MaxMessage is the longest -s the peer's buffer takes (with its
	// terminating NUL where the tutorial sends one); 0: no limit here.
	MaxMessage int
	// DefaultMessage is the client's text without -s; "" means the
	// tutorial's own (geek: with the process id).
	DefaultMessage string
	// Imm: the exchange carries immediate data, which iWARP devices do
	// not have (checkDevice).
	Imm        bool
	newSession func(e env) session
}

// checkDevice refuses a mode the device cannot run: on an iWARP device
// (siw, for one) a mode with immediate data. iWARP's RDMAP has no
// immediate data (RFC 5040 has no such message), so siw refuses
// WRITE_WITH_IMM and SEND_WITH_IMM (kernel:
// drivers/infiniband/sw/siw/siw_verbs.c siw_post_send; rdma-core:
// providers/siw/siw.c map_send_opcode); the check comes before anything is
// posted or sent, so the peer is never left waiting for it.
func (m *Mode) checkDevice(p *Protocol, dev uverbs.DeviceInfo) error {
	if m.Imm && dev.Transport() == uverbs.TransportIWARP {
		var other []string
		for _, o := range p.Modes {
			if !o.Imm {
				other = append(other, o.Name)
			}
		}
		return fmt.Errorf("--proto %s mode %s cannot run on %s: it sends immediate data (RDMA WRITE with immediate), and %s is an iWARP device, which has none; use mode %s, or an InfiniBand or RoCE device (rxe)",
			p.Name, m.Name, dev.Name, dev.Name, strings.Join(other, " or "))
	}
	return nil
}

// Protocol is one tutorial.
type Protocol struct {
	Name    string
	Source  string // the C programs it speaks with
	Modes   []Mode // the first is the default
	Summary string
}

// Mode returns the mode called name ("" for the default).
func (p *Protocol) Mode(name string) (*Mode, error) {
	if name == "" {
		return &p.Modes[0], nil
	}
	for i := range p.Modes {
		if p.Modes[i].Name == name {
			return &p.Modes[i], nil
		}
	}
	return nil, fmt.Errorf("--proto %s has no mode %q; its modes: %s", p.Name, name, strings.Join(p.modeNames(), ", "))
}

func (p *Protocol) modeNames() []string {
	var n []string
	for _, m := range p.Modes {
		n = append(n, m.Name)
	}
	return n
}

func (p *Protocol) hasMode(name string) bool { return slices.Contains(p.modeNames(), name) }

// Protocols are the tutorials, the default first.
var Protocols = []*Protocol{geekProtocol, rdmaExampleProtocol, roceLabProtocol}

// LookupProtocol returns the protocol called name.
func LookupProtocol(name string) (*Protocol, error) {
	for _, p := range Protocols {
		if p.Name == name {
			return p, nil
		}
	}
	var names []string
	for _, p := range Protocols {
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("unknown protocol %q: use --proto %s", name, strings.Join(names, ", --proto "))
}
