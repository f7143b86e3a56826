package wire

// ConversationRow is a conversation in a listing (GET
// /v1/convai/conversations), in the public shape.
type ConversationRow struct {
	AgentID          string `json:"agent_id"`
	ConversationID   string `json:"conversation_id"`
	StartTimeUnix    int64  `json:"start_time_unix_secs"`
	CallDurationSecs int64  `json:"call_duration_secs"`
	MessageCount     int    `json:"message_count"`
	Status           string `json:"status"`
	CallSuccessful   string `json:"call_successful"`
	// Only with summary_mode=include.
	TranscriptSummary *string  `json:"transcript_summary,omitempty"`
	ToolNames         []string `json:"tool_names,omitempty"`
	Rating            *int     `json:"rating,omitempty"` // once rated: like 5, dislike 1
	TagIDs            []string `json:"tag_ids,omitempty"`
}

// ConversationPage is a page of that listing.
type ConversationPage struct {
	Conversations []ConversationRow `json:"conversations"`
	NextCursor    *string           `json:"next_cursor"`
	HasMore       bool              `json:"has_more"`
}
