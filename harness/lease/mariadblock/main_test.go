package mariadblock_test

import (
	"os"
	"testing"

	"github.com/fencecheck/fencecheck/harness/lease/sqlsession/sqlsessiontest"
)

func TestMain(m *testing.M) { os.Exit(sqlsessiontest.VerifyNoLeaks(m)) }
