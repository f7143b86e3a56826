package memory

import (
	"testing"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
	"github.com/voiceai-platform/voiceai/services/tickets/app/directorytest"
)

// The memory directory passes the suite the stream-fed one passes (in
// package adapters).
func TestDirectoryConforms(t *testing.T) {
	directorytest.Run(t, func(*testing.T) (app.Directory, func(...directorytest.Fact)) {
		d := NewDirectory()
		return d, func(facts ...directorytest.Fact) {
			for _, f := range facts {
				switch {
				case f.Agent != nil && f.Agent.Deleted:
					d.DeleteAgent(f.Agent.AgentID)
				case f.Agent != nil:
					d.PutAgent(f.Agent.WorkspaceID, f.Agent.AgentID)
				case f.Member != nil:
					d.PutMember(f.Member.WorkspaceID, f.Member.Member)
				case f.Conversation != nil:
					d.PutConversation(f.Conversation.WorkspaceID, f.Conversation.ConversationID, f.Conversation.Conversation)
				}
			}
		}
	})
}
