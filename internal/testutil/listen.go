package testutil

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// WaitListening waits until a server listens on port: with cm a CM ID in
// state LISTEN (`rdma resource show cm_id`), otherwise a TCP socket
// (/proc/net/tcp and tcp6). The C tools' clients give up at once when
// nothing listens yet, and their servers accept one connection, so neither
// a fixed sleep (too short under load) nor a probing connection will do.
// It returns an error when ctx ends first or when ended yields, that is
// when the server ended before listening.
func WaitListening[T any](ctx context.Context, port int, cm bool, ended <-chan T) error {
	for {
		ok, err := listening(ctx, port, cm)
		if err != nil || ok {
			return err
		}
		select {
		case v := <-ended:
			return fmt.Errorf("the server ended before listening on port %d: %v", port, v)
		case <-ctx.Done():
			return fmt.Errorf("nothing listens on port %d: %w", port, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func listening(ctx context.Context, port int, cm bool) (bool, error) {
	if cm {
		out, err := exec.CommandContext(ctx, "rdma", "-j", "resource", "show", "cm_id").Output()
		if err != nil {
			if ctx.Err() != nil {
				return false, nil // WaitListening reports the end of ctx
			}
			return false, fmt.Errorf("rdma resource show cm_id (Debian: iproute2): %v", err)
		}
		var ids []struct {
			State   string `json:"state"`
			SrcAddr string `json:"src-addr"`
		}
		if err := json.Unmarshal(out, &ids); err != nil {
			return false, fmt.Errorf("rdma resource show cm_id: %v in %q", err, out)
		}
		for _, id := range ids {
			if id.State == "LISTEN" && strings.HasSuffix(id.SrcAddr, fmt.Sprintf(":%d", port)) {
				return true, nil
			}
		}
		return false, nil
	}
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			// sl local_address rem_address st ...; st 0A is LISTEN.
			fs := strings.Fields(sc.Text())
			if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				return true, nil
			}
		}
	}
	return false, nil
}
