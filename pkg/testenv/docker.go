package testenv

import (
	"os"
	"testing"
)

func useDocker() bool { return os.Getenv("VOICEAI_TEST_DOCKER") == "1" }

// newDocker is replaced by the testcontainers implementation.
func newDocker(t testing.TB) *Env {
	t.Skip("VOICEAI_TEST_DOCKER=1: container path not built yet")
	return nil
}
