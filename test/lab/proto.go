package lab

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Frames on the virtio-serial control port: one type byte, a big-endian
// uint32 length, then the body. Keep in sync with guestinit/main.go.
const (
	frameRequest = 'R' // host->guest: JSON request
	frameSignal  = 'S' // host->guest: one byte, a signal number for the command
	frameAck     = 'A' // host->guest: exit status received, power off
	frameBegin   = 'B' // guest->host: JSON begin (command is starting)
	frameStdout  = 'O' // guest->host: command stdout bytes
	frameStderr  = 'E' // guest->host: command stderr bytes
	frameExit    = 'X' // guest->host: JSON exit status
	frameFatal   = 'F' // guest->host: setup failed, text

	maxFrame = 1 << 20
)

type share struct {
	Tag      string
	Path     string
	ReadOnly bool
}

type request struct {
	Args    []string
	Dir     string
	Env     []string
	Root    string
	Shares  []share
	Verbose bool
}

type begin struct {
	Kernel string
}

type exitStatus struct {
	Code   int
	Signal string `json:",omitempty"`
	Error  string `json:",omitempty"`
}

type frame struct {
	typ  byte
	body []byte
}

func readFrame(r io.Reader) (frame, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return frame{}, fmt.Errorf("control port: frame of %d bytes (limit %d)", n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return frame{}, err
	}
	return frame{hdr[0], body}, nil
}

type frameSender struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *frameSender) send(typ byte, body []byte) error {
	if len(body) > maxFrame {
		return fmt.Errorf("control port: frame of %d bytes (limit %d)", len(body), maxFrame)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := make([]byte, 5, 5+len(body))
	buf[0] = typ
	binary.BigEndian.PutUint32(buf[1:], uint32(len(body)))
	_, err := s.w.Write(append(buf, body...))
	return err
}

func (s *frameSender) sendJSON(typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.send(typ, b)
}
