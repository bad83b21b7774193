package nats_test

import (
	"os"
	"testing"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"
)

func TestMain(m *testing.M) { os.Exit(proctest.VerifyNoLeaks(m)) }
