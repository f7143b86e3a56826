package ports

import (
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// The edge checks requests against the API's schemas; the domain's limits
// and enums, which the QA worker and the views rely on, must say the same.
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	apitest.WantInt(t, domain.MaxTitle, "TicketTitle", "maxLength")
	apitest.WantInt(t, domain.MaxComment, "CommentText", "maxLength")
	apitest.WantInt(t, domain.MaxComment, "QAComment", "maxLength")
	apitest.WantInt(t, domain.MaxLabels, "Labels", "maxItems")
	apitest.WantInt(t, domain.MaxLabelLen, "Labels", "items", "maxLength")
	apitest.WantInt(t, domain.MaxTurn, "TurnIndex", "maximum")
	apitest.WantInt(t, domain.MaxMerge, "TicketMerge", "properties", "source_ticket_ids", "maxItems")
	apitest.WantStrings(t, domain.Priorities, "Priority", "enum")
	apitest.WantStrings(t, domain.Statuses, "TicketStatus", "enum")
	apitest.WantStrings(t, domain.IssueTypes, "IssueType", "enum")
}
