package ports

import (
	"slices"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// The edge checks requests against the API's schemas; the domain's limits
// and enums, which the QA worker and the views rely on, must say the same.
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	num := func(schema string, path ...string) float64 {
		t.Helper()
		var v any = mustSchema(t, schema)
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		switch n := v.(type) {
		case int:
			return float64(n)
		case float64:
			return n
		}
		t.Fatalf("%s %v: %v is not a number", schema, path, v)
		return 0
	}
	for _, c := range []struct {
		got  float64
		want int
		what string
	}{
		{num("TicketTitle", "maxLength"), domain.MaxTitle, "title"},
		{num("CommentText", "maxLength"), domain.MaxComment, "comment"},
		{num("QAComment", "maxLength"), domain.MaxComment, "qa_comment"},
		{num("Labels", "maxItems"), domain.MaxLabels, "labels"},
		{num("Labels", "items", "maxLength"), domain.MaxLabelLen, "label"},
		{num("TurnIndex", "maximum"), domain.MaxTurn, "turn_index"},
		{num("TicketMerge", "properties", "source_ticket_ids", "maxItems"), domain.MaxMerge, "source_ticket_ids"},
	} {
		if int(c.got) != c.want {
			t.Errorf("%s: the schema says %v, the domain %d", c.what, c.got, c.want)
		}
	}
	enum := func(schema string) []string {
		var out []string
		for _, v := range mustSchema(t, schema)["enum"].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	if got := enum("Priority"); !slices.Equal(got, domain.Priorities) {
		t.Errorf("priorities: the schema says %v, the domain %v", got, domain.Priorities)
	}
	if got := enum("TicketStatus"); !slices.Equal(got, domain.Statuses) {
		t.Errorf("statuses: the schema says %v, the domain %v", got, domain.Statuses)
	}
	if got := enum("IssueType"); !slices.Equal(got, domain.IssueTypes) {
		t.Errorf("issue types: the schema says %v, the domain %v", got, domain.IssueTypes)
	}
}

func mustSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	s, err := api.Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
