package pgadvisory_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
)

// helperEnv makes the test binary a helper that starts a server, prints the
// postmaster's PID and the cluster's directory and waits to be killed (TestServerDiesWithFencecheck).
const helperEnv = "FENCECHECK_PGADVISORY_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s, err := pgadvisory.StartServer(ctx, pgadvisory.ServerConfig{Dir: dir})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println(s.PID(), s.Dir())
		time.Sleep(5 * time.Minute) // not a wait for an event: the test kills this helper; the sleep only bounds a forgotten one
		os.Exit(0)
	}
	os.Exit(proctest.VerifyNoLeaks(m))
}
