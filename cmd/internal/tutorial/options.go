package tutorial

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/goverbs/rdma/internal/cmdline"
)

// Options are the command line of rdma-server and rdma-client.
type Options struct {
	sys system // the machine's, from ParseArgs

	Server  bool
	Proto   *Protocol
	Mode    *Mode
	Addr    string // server: the address to listen on ("" = all); client: the server's
	Port    int
	Message string // client: -s, or the mode's default
	Verbose bool
}

// errHelp: -h was given.
var errHelp = errors.New("help requested")

// ParseArgs reads the command line of rdma-server (server) or rdma-client:
//
//	rdma-server [--proto P] [-a ADDR] [-p PORT] [-v] [MODE]
//	rdma-client [--proto P] [-a ADDR] [-p PORT] [-s STRING] [-v] [MODE] [ADDR [PORT]]
//
// Flags may come before or after the words; -flag and --flag are the same.
func ParseArgs(server bool, args []string) (Options, error) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	proto := fs.String("proto", "geek", "")
	addr := fs.String("a", "", "")
	port := fs.Int("p", 0, "")
	verbose := fs.Bool("v", false, "")
	var msg *string
	if !server {
		msg = fs.String("s", "", "")
	}
	words, err := cmdline.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return Options{}, errHelp
	}
	if err != nil {
		return Options{}, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	o := Options{sys: machine, Server: server, Addr: *addr, Port: *port, Verbose: *verbose}
	p, err := LookupProtocol(*proto)
	if err != nil {
		return o, cmdline.Usagef("%v", err)
	}
	o.Proto = p
	modeName := ""
	if len(words) > 0 && (p.hasMode(words[0]) || server) {
		modeName, words = words[0], words[1:]
	}
	if o.Mode, err = p.Mode(modeName); err != nil {
		return o, cmdline.Usagef("%v", err)
	}
	if server {
		if len(words) > 0 {
			return o, cmdline.Usagef("unexpected %q: rdma-server takes the address with -a and the port with -p", words[0])
		}
	} else {
		if len(words) > 2 {
			return o, cmdline.Usagef("unexpected %q: rdma-client takes [MODE] [ADDR [PORT]]", words[2])
		}
		if len(words) > 0 {
			if set["a"] && *addr != words[0] {
				return o, cmdline.Usagef("two server addresses, -a %s and %s: give one", *addr, words[0])
			}
			o.Addr = words[0]
		}
		if len(words) > 1 {
			n, err := strconv.Atoi(words[1])
			if err != nil {
				return o, cmdline.Usagef("port %q: not a number", words[1])
			}
			if set["p"] && *port != n {
				return o, cmdline.Usagef("two ports, -p %d and %s: give one", *port, words[1])
			}
			o.Port = n
		}
		if o.Addr == "" {
			return o, cmdline.Usagef("give the server's address: rdma-client --proto %s %s ADDR [PORT] (or -a ADDR)", p.Name, o.Mode.Name)
		}
	}
	if set["p"] || o.Port != 0 {
		if o.Port < 1 || o.Port > 65535 {
			return o, cmdline.Usagef("port %d: give 1 to 65535", o.Port)
		}
	} else {
		o.Port = o.Mode.Port
	}
	if !server {
		o.Message = o.Mode.DefaultMessage
		if p == geekProtocol {
			o.Message = geekMessage(true, os.Getpid())
		}
		if set["s"] {
			o.Message = *msg
		}
		if err := checkMessage(o); err != nil {
			return o, err
		}
	}
	return o, nil
}

// checkMessage refuses a -s that cannot fit the peer's buffer.
func checkMessage(o Options) error {
	n := len(o.Message)
	switch o.Proto {
	case rdmaExampleProtocol:
		if n == 0 {
			return cmdline.Usagef("-s \"\": rdma-example needs a string of at least one byte")
		}
		if n > o.Mode.MaxMessage {
			return cmdline.Usagef("-s is %d bytes; the rdma-example server here registers at most %d", n, o.Mode.MaxMessage)
		}
	default:
		// The C programs send the string with its NUL (geek: sprintf into
		// the buffer; roce-lab: strlen + 1).
		if n+1 > o.Mode.MaxMessage {
			return cmdline.Usagef("-s is %d bytes; with its terminating NUL it must fit the peer's %d-byte buffer (--proto %s)", n, o.Mode.MaxMessage, o.Proto.Name)
		}
	}
	return nil
}

// Usage writes the -h text of rdma-server (server) or rdma-client.
func Usage(w io.Writer, server bool) {
	var b strings.Builder
	if server {
		b.WriteString(`Usage: rdma-server [--proto P] [-a ADDR] [-p PORT] [-v] [MODE]

Serves the classic RDMA tutorials' clients, ours or their C programs, many at
once, until stopped with Ctrl-C (SIGINT) or SIGTERM. Each connection's peer is
printed when it connects and when it ends.

  --proto P  protocol (tutorial) to speak; default geek
  -a ADDR    local address to listen on (an address of a netdev with an RDMA
             device); default all addresses (0.0.0.0)
  -p PORT    port; default the mode's (below)
  -v         step trace on stderr: numbered, timestamped lines, SLOW for the
             control plane (CM, PD/CQ/QP, MRs), FAST for each work request and
             completion, DATA for the bytes moved
  -h         this help
  MODE       the protocol's exchange; default its first mode
`)
	} else {
		b.WriteString(`Usage: rdma-client [--proto P] [-a ADDR] [-p PORT] [-s STRING] [-v] [MODE] [ADDR [PORT]]

Connects to an rdma-server (or the tutorial's C server) and runs one exchange.

  --proto P  protocol (tutorial) to speak; default geek
  -a ADDR    the server's address (or give ADDR after MODE)
  -p PORT    the server's port (or give PORT after ADDR); default the mode's
  -s STRING  the text to send (geek, roce-lab: with its NUL it must fit the
             peer's buffer; rdma-example: the buffer's length)
  -v         step trace on stderr: numbered, timestamped lines, SLOW for the
             control plane (CM, PD/CQ/QP, MRs), FAST for each work request and
             completion, DATA for the bytes moved
  -h         this help
  MODE       the protocol's exchange; default its first mode
`)
	}
	b.WriteString("\nProtocols and modes:\n")
	for _, p := range Protocols {
		fmt.Fprintf(&b, "\n  %s: %s\n    speaks with %s\n", p.Name, p.Summary, p.Source)
		for _, m := range p.Modes {
			fmt.Fprintf(&b, "    %-10s port %-5d %s\n", m.Name, m.Port, m.Summary)
		}
	}
	b.WriteString("\nExamples (server first, then the client on another host or netdev):\n")
	for _, ex := range examples {
		if server {
			fmt.Fprintf(&b, "  %s\n", ex[0])
		} else {
			fmt.Fprintf(&b, "  %s\n", ex[1])
		}
	}
	b.WriteString(`
The RDMA CM needs an RDMA device on the netdev that carries the address; with
no RDMA hardware, make a soft-RoCE device: rdma-link add rxe0 netdev eth0.
iWARP devices (siw) have no immediate data: roce-lab imm refuses to run there.
Exit status: 0 done (a server stopped by a signal too), 1 failed, 2 bad
command line, 130 client interrupted.
`)
	io.WriteString(w, b.String())
}

// examples are the command lines of issue 7, server and client.
var examples = [][2]string{
	{"rdma-server -a 10.9.0.1 write", "rdma-client write 10.9.0.1 22222"},
	{"rdma-server -a 10.9.0.1 read", "rdma-client read 10.9.0.1"},
	{"rdma-server -a 10.9.0.1 -p 22223 send", "rdma-client send 10.9.0.1 22223"},
	{"rdma-server --proto rdma-example -a 10.9.0.1", `rdma-client --proto rdma-example -a 10.9.0.1 -s "hello world 789"`},
	{"rdma-server --proto roce-lab -a 10.9.0.1", `rdma-client --proto roce-lab -s "client-wrote-this" write 10.9.0.1 7471`},
	{"rdma-server --proto roce-lab -a 10.9.0.1 imm", `rdma-client --proto roce-lab -s "imm payload 42" imm 10.9.0.1 7472`},
}
