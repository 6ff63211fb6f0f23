package cmdline

import (
	"fmt"
	"io"
	"sync"
)

// LockedWriter serializes writes to W: the lines of concurrent connections,
// and the connection manager's log lines, which come from its own
// goroutine, must not interleave.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// Printf writes one formatted message.
func (l *LockedWriter) Printf(format string, a ...any) {
	fmt.Fprintf(l, format, a...)
}
