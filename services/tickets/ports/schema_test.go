package ports

import (
	"slices"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// The edge checks requests against the API's schemas; the domain's limits
// and enums, which the QA worker and the views rely on, must say the same.
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	for _, c := range []struct {
		got  int
		want int
		what string
	}{
		{apitest.Int(t, "TicketTitle", "maxLength"), domain.MaxTitle, "title"},
		{apitest.Int(t, "CommentText", "maxLength"), domain.MaxComment, "comment"},
		{apitest.Int(t, "QAComment", "maxLength"), domain.MaxComment, "qa_comment"},
		{apitest.Int(t, "Labels", "maxItems"), domain.MaxLabels, "labels"},
		{apitest.Int(t, "Labels", "items", "maxLength"), domain.MaxLabelLen, "label"},
		{apitest.Int(t, "TurnIndex", "maximum"), domain.MaxTurn, "turn_index"},
		{apitest.Int(t, "TicketMerge", "properties", "source_ticket_ids", "maxItems"), domain.MaxMerge, "source_ticket_ids"},
	} {
		if c.got != c.want {
			t.Errorf("%s: the schema says %d, the domain %d", c.what, c.got, c.want)
		}
	}
	if got := apitest.Strings(t, "Priority", "enum"); !slices.Equal(got, domain.Priorities) {
		t.Errorf("priorities: the schema says %v, the domain %v", got, domain.Priorities)
	}
	if got := apitest.Strings(t, "TicketStatus", "enum"); !slices.Equal(got, domain.Statuses) {
		t.Errorf("statuses: the schema says %v, the domain %v", got, domain.Statuses)
	}
	if got := apitest.Strings(t, "IssueType", "enum"); !slices.Equal(got, domain.IssueTypes) {
		t.Errorf("issue types: the schema says %v, the domain %v", got, domain.IssueTypes)
	}
}
