package etcdtxn_test

import (
	"os"
	"testing"

	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
)

func TestMain(m *testing.M) {
	os.Exit(etcdtest.VerifyNoLeaks(m))
}
