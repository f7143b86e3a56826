package ports

// markDeletedConversation sets from_conversation_metadata's
// conversation_deleted (our extension) on a test made from a
// conversation: true once that conversation was deleted (its transcript
// is gone; the test keeps the turns it was made from).
func markDeletedConversation(view map[string]any, workspaceID string, deleted func(workspaceID, conversationID string) bool) {
	meta, ok := view["from_conversation_metadata"].(map[string]any)
	if !ok {
		return
	}
	id, _ := meta["conversation_id"].(string)
	if id == "" {
		return
	}
	meta["conversation_deleted"] = deleted != nil && deleted(workspaceID, id)
}
