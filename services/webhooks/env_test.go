package webhooks

import (
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/config"
	"github.com/voiceai-platform/voiceai/services/webhooks/domain"
)

// testSecret is a deployment secret long enough to be taken.
const testSecret = "0123456789abcdef0123456789abcdef"

// The auto-disable rule comes from the environment, with its defaults (20
// failures over an hour); a negative setting is refused at start.
func TestAutoDisableFromTheEnvironment(t *testing.T) {
	t.Setenv("VOICEAI_SECRET_KEY", testSecret)
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

// Each workspace's share of the delivery queue comes from the
// environment: 20,000 by default, 0 for no bound; a negative one is
// refused at start.
func TestWorkspaceShareFromTheEnvironment(t *testing.T) {
	t.Setenv("VOICEAI_SECRET_KEY", testSecret)
	for _, c := range []struct {
		env  string
		want int
	}{{"", 20_000}, {"500", 500}, {"0", -1}} {
		if c.env != "" {
			t.Setenv("VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE", c.env)
		}
		e, err := config.Load[Env]()
		if err != nil || e.Config().MaxWaitingPerWorkspace != c.want {
			t.Fatalf("%q: %+v %v; want %d", c.env, e.Config().MaxWaitingPerWorkspace, err, c.want)
		}
	}
	t.Setenv("VOICEAI_WEBHOOK_MAX_WAITING_PER_WORKSPACE", "-1")
	if _, err := config.Load[Env](); err == nil {
		t.Fatal("negative accepted")
	}
}
