package tutorial

import (
	"context"
	"encoding/json"
	"os"

	"github.com/goverbs/rdma/internal/cmdline"
)

// The lab tests run servers and clients as processes: this test binary
// started again with TUTORIAL_CHILD=server or client and the arguments in
// TUTORIAL_ARGS (JSON), so that a client can be killed and a server's
// resources counted on their own. TUTORIAL_PAUSE=established makes a
// client stop after ESTABLISHED until it is killed or interrupted.
func childMain() {
	role := os.Getenv("TUTORIAL_CHILD")
	if role == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv("TUTORIAL_ARGS")), &args); err != nil {
		os.Stderr.WriteString("TUTORIAL_ARGS: " + err.Error() + "\n")
		os.Exit(3)
	}
	e := machine
	if os.Getenv("TUTORIAL_PAUSE") == "established" {
		e.afterEstablished = func(ctx context.Context) {
			os.Stdout.WriteString("paused after ESTABLISHED\n")
			<-ctx.Done()
		}
	}
	cmdline.Run(func(ctx context.Context) int { return e.main(ctx, role == "server", args, os.Stdout, os.Stderr) })
}
