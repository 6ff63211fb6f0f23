package testutil

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Refusal is a command line a program must refuse at start-up, with an
// error that says each of Want.
type Refusal struct {
	Name string
	Args []string
	Want []string
}

// CheckRefusedAtOnce runs each case through run, adding "-p" and a port
// of its own (basePort, basePort+1, ...), as the server side, and fails
// the case unless run returns an error saying every Want before it waits
// for a peer: a server that waits instead is cancelled after two minutes.
// waitLine, when not empty, is what the program prints when it starts to
// wait; printing it before refusing fails the case too.
func CheckRefusedAtOnce(t *testing.T, basePort int, waitLine string, cases []Refusal, run func(ctx context.Context, args []string, out io.Writer) error) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			err := run(ctx, append(c.Args, "-p", strconv.Itoa(basePort+i)), &out)
			switch {
			case ctx.Err() != nil:
				t.Fatalf("the server waited for a client instead of refusing: %v\n%s", err, out.String())
			case err == nil:
				t.Fatalf("no error\n%s", out.String())
			}
			for _, w := range c.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if waitLine != "" && strings.Contains(out.String(), waitLine) {
				t.Errorf("printed %q before refusing:\n%s", waitLine, out.String())
			}
		})
	}
}
