package etcdtxn_test

import (
	"os"
	"testing"

	"fencecheck/harness/lease/etcd/etcdtest"
)

func TestMain(m *testing.M) {
	os.Exit(etcdtest.VerifyNoLeaks(m))
}
