package judgeeval

import (
	"context"
	"strings"
	"testing"

	"github.com/voiceai-platform/voiceai/services/testing/runner"
)

// The default judge (no API key: runner.Offline) is held to the bar on
// both sets: agreement ≥ 0.85, κ ≥ 0.70, false passes ≤ 5% of failing
// cases. It prints its figures and, when it misses, the cases it got
// wrong.
func TestOfflineJudgeAgreesWithPeople(t *testing.T) {
	for _, set := range []string{Labelled, Heldout} {
		t.Run(set, func(t *testing.T) {
			cases, err := Set(set)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(context.Background(), runner.Offline{}, set, cases, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			r.Write(&out, Bar)
			t.Log("\n" + out.String())
			if ok, missed := Bar.AgreesWithPeople(r.Overall); !ok {
				var list strings.Builder
				r.WriteDisagreements(&list)
				t.Errorf("the offline judge misses the bar on %s: %s; the %d cases it decided otherwise than people:\n%s",
					set, strings.Join(missed, ", "), len(r.Disagreements()), list.String())
			}
		})
	}
}
