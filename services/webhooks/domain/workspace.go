package domain

import (
	"slices"
)

// WorkspaceEvents are the workspace-level event types of the workspace
// webhooks API (the official SDK's WorkspaceWebhookEventType) this
// platform produces, each the set of our events it stands for:
// "agent_qa" is the agent QA outcomes, every ticket event and every test
// invocation outcome. (The SDK's voice_library_removal_notice,
// speech_to_text and flows are not produced here.)
var WorkspaceEvents = map[string][]string{
	"agent_qa": slices.Concat(TicketEvents, InvocationEvents),
}

// WorkspaceEventOf names the workspace-level event type covering an event
// ("" for none).
func WorkspaceEventOf(event string) string {
	for name, covered := range WorkspaceEvents {
		if slices.Contains(covered, event) {
			return name
		}
	}
	return ""
}

// WithWorkspaceEvents is a webhook's events after the workspace API set
// its workspace-level events to types (the complete set): the events of
// types are added, those of other workspace-level types removed, and
// events no workspace-level type covers (spec 6.1 events a webhook made
// by /v1/convai/webhooks subscribes to) kept.
func WithWorkspaceEvents(events, types []string) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		if WorkspaceEventOf(e) == "" {
			out = append(out, e)
		}
	}
	for _, t := range types {
		for _, e := range WorkspaceEvents[t] {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// WorkspaceEventsOf lists the workspace-level types a webhook is
// subscribed to: those whose every event it receives.
func WorkspaceEventsOf(events []string) []string {
	out := []string{}
	for name, covered := range WorkspaceEvents {
		if len(covered) > 0 && !slices.ContainsFunc(covered, func(e string) bool { return !slices.Contains(events, e) }) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
