package runtime

import (
	"bytes"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/config"
)

// A service binary runs with no argument or probe; --help says what it is
// and which variables configure it; anything else is refused before the
// binary binds a port or takes work.
func TestServiceBinaryArguments(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		done       bool
		out, stErr string
	}{
		{nil, 0, false, "", ""},
		{[]string{"probe"}, 0, false, "", ""},
		{[]string{"--help"}, 0, true, "VOICEAI_NATS_URL", ""},
		{[]string{"-h"}, 0, true, "Usage: svc ", ""},
		{[]string{"prob"}, 2, true, "", `unknown argument "prob"`},
		{[]string{"probe", "now"}, 2, true, "", `unknown argument "probe now"`},
	} {
		var out, errOut bytes.Buffer
		code, done := usage[config.Infra]("svc", c.args, &out, &errOut)
		if code != c.code || done != c.done || !strings.Contains(out.String(), c.out) || !strings.Contains(errOut.String(), c.stErr) {
			t.Errorf("%q: code %d done %v, stdout %q, stderr %q", c.args, code, done, out.String(), errOut.String())
		}
	}
}
