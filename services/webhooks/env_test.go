package webhooks

import (
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// The auto-disable rule comes from the environment, with its defaults (20
// failures over an hour); a negative setting is refused at start.
func TestAutoDisableFromTheEnvironment(t *testing.T) {
	t.Setenv("VOICEAI_SECRET_KEY", "x")
	t.Setenv("VOICEAI_WEBHOOK_AUTO_DISABLE_FAILURES", "7")
	e, err := config.Load[Env]()
	if err != nil || e.AutoDisable.Failures != 7 || e.AutoDisable.Over != time.Hour || *e.Config().AutoDisable != (domain.AutoDisable{Failures: 7, Over: time.Hour}) {
		t.Fatalf("%+v %v", e, err)
	}
	t.Setenv("VOICEAI_WEBHOOK_AUTO_DISABLE_FAILURES", "-1")
	if _, err := config.Load[Env](); err == nil {
		t.Fatal("negative accepted")
	}
}
