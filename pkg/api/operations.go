// Package api is the public HTTP API defined once: every operation's
// method, path, owning service, permission, body and answer schemas and
// error statuses. The gateway routes and checks permissions from this
// table, each service serves its part of it by name (Serve), the hostile-input
// tests walk it and the OpenAPI document (openapi.go) is made from it; a
// route that is not in the table is served by nobody.
package api

import (
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
)

// Operation is one endpoint of the public API.
type Operation struct {
	Name    string // stable, e.g. "agents.get"; scopes idempotency keys
	Method  string
	Path    string // gorilla/mux template; every {var} is an id (see IDParams)
	Service string // the service that serves it, reached over NATS
	Perms   []string

	Summary  string
	Success  []int    // its success statuses, the usual one first
	Request  string   // the schema (schemas.yaml) of its JSON body; "" for none
	Response string   // the schema of its success body; "" for none (204)
	Query    []string // its query parameters (schemas.yaml parameters)
	Errors   []int    // what it answers beyond the statuses every operation may

	// Takes marks a poll that takes what it answers (a relay delivery):
	// the gateway never sends it twice, even with an Idempotency-Key, as a
	// second copy would take a second delivery.
	Takes bool
	// Safe marks an operation that only reads whatever its method (a POST
	// for its body): like a GET, it may be repeated without a key.
	Safe bool
	// Once, when set, is why the gateway must send this write once even
	// with an Idempotency-Key (a second copy would act again, or answer
	// otherwise than the first).
	Once string
	// Timeout, when set, is how long the gateway waits for the answer
	// instead of its upstream time-out (an operation that works longer).
	Timeout time.Duration
	// MaxBody, when set, is the largest body its service reads (413
	// beyond) instead of httpx.DefaultMaxBody. The gateway's own limit
	// (VOICEAI_MAX_BODY_BYTES) applies first.
	MaxBody int64
}

// Repeatable reports whether the gateway may send r, a request for op,
// more than once: hedge it while its answer is slow, send it again after
// its connection was lost. A read may always be. A write may be only with
// an Idempotency-Key, which every write honours unless marked Once (the
// same key in the same workspace and operation answers the first
// result); without a key a second copy would be a second command. A poll
// that takes what it answers never is.
func (op Operation) Repeatable(r *http.Request) bool {
	switch {
	case op.Takes || op.Once != "":
		return false
	case op.Reads() || op.Safe:
		return true
	}
	return r.Header.Get(HeaderIdempotencyKey) != ""
}

// Permission sets, each "any one of".
var (
	convaiRead    = []string{"convai_read", "convai_write"}
	convaiWrite   = []string{"convai_write"}
	webhooksRead  = []string{"convai_read", "webhooks_write"}
	webhooksWrite = []string{"webhooks_write"}
	accountsRead  = []string{"workspace_read", "workspace_members_read", "service_account_write"}
	accountsWrite = []string{"service_account_write"}
	membersRead   = []string{"workspace_members_read", "workspace_read"}
	membersWrite  = []string{"workspace_members_invite"}
	membersUpdate = []string{"workspace_write"}
)

func op(name, method, path, service string, perms []string) Operation {
	return Operation{Name: name, Method: method, Path: path, Service: service, Perms: perms}
}

// doc describes what op takes and answers: its summary, success status,
// and the schemas of its body and of its answer.
func (o Operation) doc(summary string, status int, request, response string) Operation {
	o.Summary, o.Success, o.Request, o.Response = summary, []int{status}, request, response
	return o
}

// also adds a second success status, answered with the same schema.
func (o Operation) also(status int) Operation {
	o.Success = append(o.Success, status)
	return o
}

func (o Operation) query(params ...string) Operation {
	o.Query = params
	return o
}

func (o Operation) errs(statuses ...int) Operation {
	o.Errors = statuses
	return o
}

func (o Operation) takes() Operation {
	o.Takes = true
	return o
}

func (o Operation) safe() Operation {
	o.Safe = true
	return o
}

// within sets how long the gateway waits for the operation's answer.
func (o Operation) within(d time.Duration) Operation {
	o.Timeout = d
	return o
}

// BodyLimit is the largest body op's service reads.
func (op Operation) BodyLimit() int64 {
	if op.MaxBody > 0 {
		return op.MaxBody
	}
	return httpx.DefaultMaxBody
}

// bodyUpTo sets the largest body the operation's service reads.
func (o Operation) bodyUpTo(n int64) Operation {
	o.MaxBody = n
	return o
}

// once marks a write that cannot honour an Idempotency-Key, saying why.
func (o Operation) once(why string) Operation {
	o.Once = why
	return o
}

// SimulationTimeout bounds one simulated conversation (its turns and its
// judging); the gateway waits a little longer for its answer.
const SimulationTimeout = 2 * time.Minute

// Query parameters several listings share.
var (
	page         = []string{"page_size", "cursor"}
	shortPage    = []string{"short_page_size", "cursor"} // 30 a page by default
	ticketFilter = append(slices.Clone(page), "ticket_status", "assignee_user_id", "owner_user_id", "issue_type", "label",
		"merged_into_ticket_id", "ticket_sort_by", "search", "sources", "priorities")
	agentFilter = append(slices.Clone(shortPage), "search", "agent_sort_by", "sort_direction", "archived", "created_by_user_id", "tags")
	// conversationFilter: the SDK's conversations.list triage filters.
	conversationFilter = []string{"agent_id", "call_successful", "call_start_before_unix", "call_start_after_unix",
		"call_duration_min_secs", "call_duration_max_secs", "rating_min", "rating_max", "evaluation_params", "data_collection_params",
		"tool_names", "tool_names_errored", "tag_ids", "exclude_statuses", "conversation_search", "summary_mode"}
)

const (
	get, post, put, patch, del  = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	ok, created, accepted, none = http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent
	conflict                    = http.StatusConflict
	agentsPath                  = "/v1/convai/agents"
	secretsPath                 = "/v1/convai/secrets"
	ticketsPath                 = "/v1/convai/triage-tickets"
	conversationsPath           = "/v1/convai/conversations"
	tagsPath                    = "/v1/convai/tags"
	testsPath                   = "/v1/convai/agent-testing"
	invocationsPath             = "/v1/convai/test-invocations"
	accountsPath                = "/v1/service-accounts"
	membersPath                 = "/v1/workspace/members"
	workspaceWebhooksPath       = "/v1/workspace/webhooks"

	// Body limits beyond the default: an agent's configuration, a test or
	// a run of 5,000 tests; a secret (its value at most 8 KiB); an
	// ingested event.
	largeBody, secretBody, eventBody = 4 << 20, 64 << 10, 256 << 10
)

// The operations. Static paths come before templates that would match
// them (".../agents/list" before ".../agents/{agent_id}").
var (
	CreateAgent     = op("agents.create", post, agentsPath+"/create", "agents", convaiWrite).doc("Create an agent", created, "AgentCreate", "AgentCreated").bodyUpTo(largeBody)
	ListAgents      = op("agents.list", get, agentsPath, "agents", convaiRead).doc("List agents (sort_by=call_count_7d lists them in creation order: no 7-day call counts are kept)", ok, "", "AgentPage").query(agentFilter...)
	ListAgentsAlias = op("agents.list_alias", get, agentsPath+"/list", "agents", convaiRead).doc("List agents (the same as GET /v1/convai/agents)", ok, "", "AgentPage").query(agentFilter...)
	AgentSummaries  = op("agents.summaries", get, agentsPath+"/summaries", "agents", convaiRead).doc("Get agents by id as the listing shows them, each found or why not", ok, "", "AgentSummaries").query("agent_ids")
	GetAgent        = op("agents.get", get, agentsPath+"/{agent_id}", "agents", convaiRead).doc("Get an agent", ok, "", "Agent")
	UpdateAgent     = op("agents.update", patch, agentsPath+"/{agent_id}", "agents", convaiWrite).doc("Update an agent", ok, "AgentUpdate", "Agent").bodyUpTo(largeBody)
	DeleteAgent     = op("agents.delete", del, agentsPath+"/{agent_id}", "agents", convaiWrite).doc("Delete an agent", none, "", "")

	ListSecrets  = op("agents.list_secrets", get, secretsPath, "agents", convaiRead).doc("List the workspace's secrets (never their values), by name, with the agents that use each", ok, "", "SecretPage").query("page_size", "cursor", "secret_search", "dependency_limit")
	CreateSecret = op("agents.create_secret", post, secretsPath, "agents", convaiWrite).doc("Store a workspace secret; its value is encrypted and never shown again", ok, "SecretCreate", "SecretStored").bodyUpTo(secretBody)
	GetSecret    = op("agents.get_secret", get, secretsPath+"/{secret_id}", "agents", convaiRead).doc("Get a workspace secret (not its value) and the agents that use it", ok, "", "Secret").query("dependency_limit")
	UpdateSecret = op("agents.update_secret", patch, secretsPath+"/{secret_id}", "agents", convaiWrite).doc("Rename a workspace secret or replace its value", ok, "SecretUpdate", "SecretStored").bodyUpTo(secretBody)
	DeleteSecret = op("agents.delete_secret", del, secretsPath+"/{secret_id}", "agents", convaiWrite).doc("Delete a workspace secret that no agent uses", none, "", "").errs(conflict)

	ListTickets       = op("tickets.list", get, ticketsPath, "tickets", convaiRead).doc("List the workspace's conversation triage tickets, newest first", ok, "", "TicketPage").query(append(slices.Clone(ticketFilter), "agent_id")...)
	CreateTicket      = op("tickets.create", post, ticketsPath, "tickets", convaiWrite).doc("Report a conversation; a report on a conversation with an open ticket joins it (200)", created, "TicketCreate", "Ticket").also(ok).errs(http.StatusNotFound)
	ListAgentTickets  = op("tickets.list_agent", get, agentsPath+"/{agent_id}/triage-tickets", "tickets", convaiRead).doc("List an agent's tickets", ok, "", "TicketPage").query(append(slices.Clone(ticketFilter), "conversation_id")...)
	CreateAgentTicket = op("tickets.create_agent", post, agentsPath+"/{agent_id}/triage-tickets", "tickets", convaiWrite).doc("Open a ticket on an agent", created, "AgentTicketCreate", "Ticket")
	AssignableUsers   = op("tickets.assignable_users", get, agentsPath+"/{agent_id}/triage-tickets/assignable-users", "tickets", convaiRead).doc("List the members a ticket of the agent may be assigned to", ok, "", "AssignableUsers")
	GetTicket         = op("tickets.get", get, ticketsPath+"/{ticket_id}", "tickets", convaiRead).doc("Get a ticket", ok, "", "Ticket")
	UpdateTicket      = op("tickets.update", patch, ticketsPath+"/{ticket_id}", "tickets", convaiWrite).doc("Change a ticket's title, status, assignee, priority, issue type or labels", ok, "TicketUpdate", "Ticket").errs(conflict)
	DeleteTicket      = op("tickets.delete", del, ticketsPath+"/{ticket_id}", "tickets", convaiWrite).doc("Delete a ticket", none, "", "")
	CommentTicket     = op("tickets.comment", post, ticketsPath+"/{ticket_id}/comments", "tickets", convaiWrite).doc("Comment on a ticket", ok, "TicketCommentCreate", "Ticket").errs(conflict)
	TurnCommentTicket = op("tickets.turn_comment", post, ticketsPath+"/{ticket_id}/turn-comments", "tickets", convaiWrite).doc("Comment on one turn of a ticket's conversation", ok, "TurnCommentCreate", "Ticket").errs(conflict)
	MergeTickets      = op("tickets.merge", post, ticketsPath+"/{ticket_id}/merge", "tickets", convaiWrite).doc("Merge tickets into this one", ok, "TicketMerge", "Ticket").errs(conflict)

	ListConversations = op("tickets.list_conversations", get, conversationsPath, "tickets", convaiRead).doc("List the workspace's conversations, newest first", ok, "", "ConversationPage").query(append(slices.Clone(shortPage), conversationFilter...)...).errs(http.StatusNotFound)
	GetConversation   = op("tickets.get_conversation", get, conversationsPath+"/{conversation_id}", "tickets", convaiRead).doc("Get a conversation: its transcript, when its call stack handed one over, and the tickets raised on it", ok, "", "Conversation")

	ConversationFeedback    = op("tickets.conversation_feedback", post, conversationsPath+"/{conversation_id}/feedback", "tickets", convaiWrite).doc("Like or dislike a conversation (a later feedback replaces it); rating_min/rating_max see a like as 5, a dislike as 1", ok, "ConversationFeedback", "Empty")
	AssignConversationTags  = op("tickets.assign_conversation_tags", post, conversationsPath+"/{conversation_id}/tags", "tickets", convaiWrite).doc("Attach tags to a conversation (one already attached is a no-op)", none, "ConversationTagsAssign", "").errs(http.StatusNotFound)
	UnassignConversationTag = op("tickets.unassign_conversation_tag", del, conversationsPath+"/{conversation_id}/tags/{tag_id}", "tickets", convaiWrite).doc("Detach a tag from a conversation (one not attached is a no-op)", none, "", "")
	ListTags                = op("tickets.list_tags", get, tagsPath, "tickets", convaiRead).doc("List the workspace's conversation tags, newest first", ok, "", "ConversationTagPage").query(shortPage...)
	CreateTag               = op("tickets.create_tag", post, tagsPath, "tickets", convaiWrite).doc("Create a conversation tag", ok, "ConversationTagCreate", "ConversationTag")
	GetTag                  = op("tickets.get_tag", get, tagsPath+"/{tag_id}", "tickets", convaiRead).doc("Get a conversation tag", ok, "", "ConversationTag")
	UpdateTag               = op("tickets.update_tag", patch, tagsPath+"/{tag_id}", "tickets", convaiWrite).doc("Change a conversation tag's title or description", ok, "ConversationTagPatch", "ConversationTag")
	DeleteTag               = op("tickets.delete_tag", del, tagsPath+"/{tag_id}", "tickets", convaiWrite).doc("Delete a conversation tag; conversations stop showing it", none, "", "")

	CreateTest           = op("testing.create_test", post, testsPath+"/create", "testing", convaiWrite).doc("Create an agent test", ok, "TestCreate", "TestCreated").bodyUpTo(largeBody)
	ListTests            = op("testing.list_tests", get, testsPath, "testing", convaiRead).doc("List tests and folders", ok, "", "TestPage").query(append(slices.Clone(shortPage), "search", "parent_folder_id", "sort_mode", "sharing_mode", "created_by_user_id", "include_folders", "types")...)
	TestSummaries        = op("testing.summaries", post, testsPath+"/summaries", "testing", convaiRead).doc("Get the summaries of tests by id", ok, "TestSummariesRequest", "TestSummaries").safe().bodyUpTo(largeBody) // POST for its body
	BulkMoveTests        = op("testing.bulk_move", post, testsPath+"/bulk-move", "testing", convaiWrite).doc("Move tests and folders into a folder", ok, "BulkMove", "BulkMoved").errs(conflict).bodyUpTo(largeBody)
	CreateFolder         = op("testing.create_folder", post, testsPath+"/folders", "testing", convaiWrite).doc("Create a test folder", ok, "FolderInput", "FolderCreated")
	GetFolder            = op("testing.get_folder", get, testsPath+"/folders/{folder_id}", "testing", convaiRead).doc("Get a test folder", ok, "", "Folder")
	RenameFolder         = op("testing.rename_folder", patch, testsPath+"/folders/{folder_id}", "testing", convaiWrite).doc("Rename or move a test folder", ok, "FolderInput", "Folder").errs(conflict)
	DeleteFolder         = op("testing.delete_folder", del, testsPath+"/folders/{folder_id}", "testing", convaiWrite).doc("Delete a test folder: an empty one, or with force=true one and all it holds", none, "", "").query("force").errs(conflict)
	GetTest              = op("testing.get_test", get, testsPath+"/{test_id}", "testing", convaiRead).doc("Get a test, with its reliability over recent runs", ok, "", "Test").query("k")
	UpdateTest           = op("testing.update_test", put, testsPath+"/{test_id}", "testing", convaiWrite).doc("Replace a test", ok, "TestCreate", "Test").bodyUpTo(largeBody)
	DeleteTest           = op("testing.delete_test", del, testsPath+"/{test_id}", "testing", convaiWrite).doc("Delete a test", ok, "", "Empty")
	SimulateConversation = op("testing.simulate_conversation", post, agentsPath+"/{agent_id}/simulate-conversation", "testing-runner", convaiWrite).doc("Play a simulated conversation with the agent now, and judge it against evaluation criteria", ok, "SimulateConversation", "SimulatedConversation").
				once("each request plays (and pays for) a new conversation").within(SimulationTimeout + 5*time.Second).bodyUpTo(largeBody)
	RunTests           = op("testing.run_tests", post, agentsPath+"/{agent_id}/run-tests", "testing", convaiWrite).doc("Run tests on an agent", ok, "RunTests", "Invocation").bodyUpTo(largeBody)
	ListInvocations    = op("testing.list_invocations", get, invocationsPath, "testing", convaiRead).doc("List test invocations, newest first", ok, "", "InvocationPage").query(append(slices.Clone(shortPage), "agent_id", "branch_id", "test_id", "search", "start_time", "end_time")...)
	GetInvocation      = op("testing.get_invocation", get, invocationsPath+"/{invocation_id}", "testing", convaiRead).doc("Get a test invocation (JSON, or JUnit XML with format=junit)", ok, "", "Invocation").query("format", "baseline_invocation_id")
	CancelInvocation   = op("testing.cancel_invocation", post, invocationsPath+"/{invocation_id}/cancel", "testing", convaiWrite).doc("Cancel the runs of an invocation that have not started", ok, "", "InvocationCancelled").errs(conflict)
	ResubmitInvocation = op("testing.resubmit_invocation", post, invocationsPath+"/{invocation_id}/resubmit", "testing", convaiWrite).doc("Run some of an invocation's runs again", ok, "Resubmit", "Resubmitted").errs(conflict).bodyUpTo(largeBody)

	ListWebhooks      = op("webhooks.list", get, "/v1/convai/webhooks", "webhooks", webhooksRead).doc("List webhooks, oldest first, a page at a time (100 unless limit asks for fewer)", ok, "", "WebhookList").query("limit", "cursor")
	CreateWebhook     = op("webhooks.create", post, "/v1/convai/webhooks", "webhooks", webhooksWrite).doc("Create a webhook; its signing secret is in this answer only", created, "WebhookCreate", "Webhook").errs(conflict)
	GetWebhook        = op("webhooks.get", get, "/v1/convai/webhooks/{webhook_id}", "webhooks", webhooksRead).doc("Get a webhook", ok, "", "Webhook")
	UpdateWebhook     = op("webhooks.update", put, "/v1/convai/webhooks/{webhook_id}", "webhooks", webhooksWrite).doc("Update a webhook", ok, "WebhookUpdate", "Webhook")
	DeleteWebhook     = op("webhooks.delete", del, "/v1/convai/webhooks/{webhook_id}", "webhooks", webhooksWrite).doc("Delete a webhook", none, "", "")
	EventCatalog      = op("webhooks.event_catalog", get, "/v1/voiceai/webhooks/events", "webhooks", webhooksRead).doc("Every event a webhook may subscribe to, with the JSON Schema of its data", ok, "", "EventCatalog")
	WebhooksHealth    = op("webhooks.health", get, "/v1/voiceai/webhooks/health", "webhooks", webhooksRead).doc("The delivery health of every webhook", ok, "", "WebhookHealth")
	TestWebhook       = op("webhooks.test", post, "/v1/voiceai/webhooks/{webhook_id}/test", "webhooks", webhooksWrite).doc("Send a test delivery to a webhook, and answer how it went", ok, "WebhookTest", "WebhookTestResult").once("the key is not honoured: each request sends a new delivery to the webhook's URL")
	WebhookLogs       = op("webhooks.logs", get, "/v1/voiceai/webhooks/{webhook_id}/logs", "webhooks", webhooksRead).doc("A webhook's delivery attempts, newest first, filtered by event, status and time, a page at a time", ok, "", "DeliveryLog").query("limit", "cursor", "log_event", "log_status", "log_start_time", "log_end_time")
	ResendDelivery    = op("webhooks.resend", post, "/v1/voiceai/webhooks/{webhook_id}/deliveries/{delivery_id}/resend", "webhooks", webhooksWrite).doc("Deliver an event again: a new delivery with the same body and event id", accepted, "", "Resent").errs(conflict)
	RelayNext         = op("webhooks.relay_next", post, "/v1/voiceai/webhooks/{webhook_id}/relay/next", "webhooks", webhooksWrite).doc("Wait for a relay webhook's next delivery (voiceai webhooks listen polls this)", ok, "RelayPoll", "RelayNext").errs(conflict).takes()
	RelayResult       = op("webhooks.relay_result", post, "/v1/voiceai/webhooks/{webhook_id}/relay/result", "webhooks", webhooksWrite).doc("Report what the local receiver answered a relayed delivery", none, "RelayResult", "").errs(conflict)
	RecoverDeliveries = op("webhooks.recover", post, "/v1/voiceai/webhooks/{webhook_id}/recover", "webhooks", webhooksWrite).doc("Resend every delivery that failed for good in a time range and was not delivered since", accepted, "Recover", "Recovered").errs(conflict)
	IngestEvent       = op("webhooks.ingest", post, "/v1/convai/events", "webhooks", convaiWrite).doc("Publish a platform event to the webhooks subscribed to it", accepted, "EventIngest", "EventAccepted").bodyUpTo(eventBody)
	// The same webhooks in the official SDK's client.webhooks shapes.
	ListWorkspaceWebhooks  = op("webhooks.workspace_list", get, workspaceWebhooksPath, "webhooks", webhooksRead).doc("List the workspace's webhooks as the official SDK's webhooks.list reads them", ok, "", "WorkspaceWebhookList").query("include_usages")
	CreateWorkspaceWebhook = op("webhooks.workspace_create", post, workspaceWebhooksPath, "webhooks", webhooksWrite).doc("Create a webhook (the SDK's webhooks.create), subscribed to agent_qa; its generated secret is in this answer only", ok, "WorkspaceWebhookCreate", "WorkspaceWebhookCreated").errs(conflict)
	UpdateWorkspaceWebhook = op("webhooks.workspace_update", patch, workspaceWebhooksPath+"/{webhook_id}", "webhooks", webhooksWrite).doc("Enable, disable, rename a webhook or set its retries, request headers and workspace-level events (the SDK's webhooks.update)", ok, "WorkspaceWebhookUpdate", "WorkspaceWebhookStatus")
	DeleteWorkspaceWebhook = op("webhooks.workspace_delete", del, workspaceWebhooksPath+"/{webhook_id}", "webhooks", webhooksWrite).doc("Delete a webhook (the SDK's webhooks.delete); its pending deliveries are dropped", ok, "", "WorkspaceWebhookStatus")

	ListAccounts  = op("identity.list_accounts", get, accountsPath, "identity", accountsRead).doc("List service accounts and their keys", ok, "", "ServiceAccounts")
	CreateAccount = op("identity.create_account", post, accountsPath, "identity", accountsWrite).doc("Create a service account", ok, "AccountCreate", "AccountCreated").errs(conflict)
	ListKeys      = op("identity.list_keys", get, accountsPath+"/{user_id}/api-keys", "identity", accountsRead).doc("List a service account's API keys", ok, "", "ApiKeys")
	CreateKey     = op("identity.create_key", post, accountsPath+"/{user_id}/api-keys", "identity", accountsWrite).doc("Create an API key; its secret is in this answer only", ok, "ApiKeyCreate", "ApiKeyCreated").errs(conflict).once("a retry with the key creates no second key but cannot show the secret again (409 api_key_already_created), so a second copy answering first would lose it")
	UpdateKey     = op("identity.update_key", patch, accountsPath+"/{user_id}/api-keys/{key_id}", "identity", accountsWrite).doc("Change an API key's name, permissions, state, IP allow-list or rate limits", ok, "ApiKeyUpdate", "ApiKey")
	RevokeKey     = op("identity.revoke_key", del, accountsPath+"/{user_id}/api-keys/{key_id}", "identity", accountsWrite).doc("Revoke an API key", ok, "", "ApiKeyRevoked")
	// The members in the official SDK's client.workspace shapes: members.list
	// and members.update, and invites.create, which here makes the member at
	// once (a self-hosted platform sends no invitation to accept).
	ListMembers  = op("identity.list_members", get, membersPath, "identity", membersRead).doc("List the workspace's members (the SDK's workspace.members.list)", ok, "", "Members")
	UpdateMember = op("identity.update_member", post, membersPath, "identity", membersUpdate).doc("Change a member's seat or lock it (the SDK's workspace.members.update)", ok, "MemberUpdate", "MemberStatus").errs(http.StatusNotFound)
	AddMember    = op("identity.add_member", post, "/v1/workspace/invites/add", "identity", membersWrite).doc("Add a person to the workspace (the SDK's workspace.invites.create): a member at once", ok, "MemberInvite", "MemberInvited").errs(conflict)
)

// DeleteConversation deletes a recorded conversation for good: it leaves
// every read model, and its transcript and analysis, sealed in the event
// streams under a key of its own, become unreadable there as the key is
// destroyed. A
// second delete, like another workspace's, is a 404, but for the keyed
// request that deleted it sent again: its record keeps the command, so
// that copy is answered as the first was.
var DeleteConversation = op("tickets.delete_conversation", del, conversationsPath+"/{conversation_id}", "tickets", convaiWrite).doc("Delete a conversation: it leaves every listing and read model, and its transcript and analysis become unreadable in the event streams", ok, "", "Empty")

// CreateTestFromConversation is an extension of the public API: a
// regression test from a production conversation, one the platform
// recorded (by its id) or one the caller posts.
var CreateTestFromConversation = op("testing.create_test_from_conversation", post, testsPath+"/from-conversation", "testing", convaiWrite).doc("Create a regression test from a production conversation", created, "TestFromConversation", "TestCreated").errs(http.StatusNotFound).bodyUpTo(largeBody)

// Human review of the judge's verdicts, an extension of the public API:
// a run's verdict labelled right or wrong, the queue of runs to review,
// and what the labels say of each judge.
var (
	LabelRun           = op("testing.label_run", post, invocationsPath+"/{invocation_id}/runs/{run_id}/labels", "testing", convaiWrite).doc("Label a run's verdict (and each criterion's) right or wrong, with a note; the run's own result is not changed", created, "RunLabelCreate", "RunLabel").errs(conflict)
	RunLabels          = op("testing.run_labels", get, invocationsPath+"/{invocation_id}/runs/{run_id}/labels", "testing", convaiRead).doc("Every label of a run, oldest first: the last is current", ok, "", "RunLabels")
	InvocationLabels   = op("testing.invocation_labels", get, invocationsPath+"/{invocation_id}/labels", "testing", convaiRead).doc("The current label of each labelled run of an invocation, whichever attempt of the run it reviewed", ok, "", "RunLabels")
	ReviewQueue        = op("testing.review_queue", get, "/v1/voiceai/judge/review-queue", "testing", convaiRead).doc("Runs to review: failed runs, runs whose judge votes disagreed and a deterministic sample of passes, newest first, a page at a time", ok, "", "ReviewQueue").query("review_page_size", "cursor", "agent_id", "sample_per_mille", "include_labelled")
	LabelConversation  = op("testing.label_conversation", post, "/v1/voiceai/conversations/{conversation_id}/evaluation/labels", "testing", convaiWrite).doc("Label a conversation's current analysis (its call_successful, and each criterion's result) right or wrong, with a note; the analysis is not changed", created, "ConversationLabelCreate", "ConversationLabel").errs(http.StatusNotFound, conflict)
	ConversationLabels = op("testing.conversation_labels", get, "/v1/voiceai/conversations/{conversation_id}/evaluation/labels", "testing", convaiRead).doc("Every label of a conversation's analyses, oldest first: the last is current", ok, "", "ConversationLabels").errs(http.StatusNotFound)
	JudgeReport        = op("testing.judge_report", get, "/v1/voiceai/judge/report", "testing", convaiRead).doc("How far each judge model agrees with people's labels: agreement, Cohen's kappa, true-pass, true-fail and false-pass rates with 95% intervals, and its flip rate", ok, "", "JudgeReport").query("judge_model", "test_id", "since_unix", "compare")
)

// Rejudge judges a labelled set of runs again with another judge model
// (served by the runners, which hold the judges), so the report compares
// judges on the same labels before anyone switches. No run's verdict
// changes. A retry with the same Idempotency-Key answers the first votes.
var Rejudge = op("testing.rejudge", post, "/v1/voiceai/judge/rejudge", "testing-runner", convaiWrite).
	doc("Judge labelled runs again with another judge model and record its votes (no run's verdict changes)", ok, "RejudgeRequest", "RejudgeResult").
	within(2 * SimulationTimeout).errs(http.StatusNotFound)

// RunConversationAnalysis re-judges a recorded conversation's evaluation
// criteria with the runners' current judge (the SDK's
// conversations.analysis.run path), stores the analysis and answers it.
// A retry with the same Idempotency-Key answers the analysis first stored
// under it.
var RunConversationAnalysis = op("testing.run_conversation_analysis", post, conversationsPath+"/{conversation_id}/analysis/run", "testing-runner", convaiWrite).
	doc("Judge a recorded conversation's evaluation criteria again with the current judge, and store the analysis (GET of the conversation shows it)", ok, "", "ConversationAnalysis").
	within(SimulationTimeout+5*time.Second).errs(http.StatusNotFound, http.StatusUnprocessableEntity)

// StartLoadTest and GetLoadTest are an extension of the public API: a
// test run as a load test, a ramp of simultaneous callers.
var (
	StartLoadTest = op("testing.start_load_test", post, agentsPath+"/{agent_id}/load-tests", "testing", convaiWrite).doc("Run a test as a load test: steps of simultaneous callers, one after another", created, "LoadTestCreate", "LoadTest")
	GetLoadTest   = op("testing.get_load_test", get, "/v1/convai/load-tests/{load_test_id}", "testing", convaiRead).doc("Get a load test: each step's first token and turn p50/p95, failures, the platform's overhead, and the step that broke the budget", ok, "", "LoadTest")
)

// Operations is every operation, in routing order.
var Operations = []Operation{
	CreateAgent, ListAgents, ListAgentsAlias, AgentSummaries, GetAgent, UpdateAgent, DeleteAgent,
	ListSecrets, CreateSecret, GetSecret, UpdateSecret, DeleteSecret,
	ListTickets, CreateTicket, ListAgentTickets, CreateAgentTicket, AssignableUsers,
	GetTicket, UpdateTicket, DeleteTicket, CommentTicket, TurnCommentTicket, MergeTickets,
	ListConversations, GetConversation, RunConversationAnalysis,
	ConversationFeedback, AssignConversationTags, UnassignConversationTag, ListTags, CreateTag, GetTag, UpdateTag, DeleteTag, DeleteConversation,
	CreateTest, CreateTestFromConversation, ListTests, TestSummaries, BulkMoveTests, CreateFolder, GetFolder, RenameFolder, DeleteFolder,
	GetTest, UpdateTest, DeleteTest, RunTests, SimulateConversation, ListInvocations, GetInvocation, CancelInvocation, ResubmitInvocation,
	LabelRun, RunLabels, InvocationLabels, LabelConversation, ConversationLabels, ReviewQueue, JudgeReport, Rejudge,
	StartLoadTest, GetLoadTest,
	ListWebhooks, CreateWebhook, GetWebhook, UpdateWebhook, DeleteWebhook, WebhooksHealth, EventCatalog, TestWebhook, WebhookLogs,
	ResendDelivery, RecoverDeliveries, RelayNext, RelayResult, IngestEvent,
	ListWorkspaceWebhooks, CreateWorkspaceWebhook, UpdateWorkspaceWebhook, DeleteWorkspaceWebhook,
	ListAccounts, CreateAccount, ListKeys, CreateKey, UpdateKey, RevokeKey, ListMembers, UpdateMember, AddMember,
}

// IDParam is what a path variable names, and how an unknown one is
// answered.
type IDParam struct {
	NotFound *apperr.Error // the answer to an unknown id, e.g. apperr.AgentNotFound
	Noun     string        // for the document, e.g. "agent"
}

// IDParams are the path variables of the API: each is an id, checked
// against the id grammar before anything else sees it. A malformed id is
// answered exactly as an unknown one.
var IDParams = map[string]IDParam{
	"agent_id":        {apperr.AgentNotFound, "agent"},
	"secret_id":       {apperr.SecretNotFound, "workspace secret"},
	"ticket_id":       {apperr.TicketNotFound, "triage ticket"},
	"conversation_id": {apperr.ConversationUnknown, "conversation"},
	"tag_id":          {apperr.ConversationTagNotFound, "conversation tag"},
	"test_id":         {apperr.TestNotFound, "test"},
	"folder_id":       {apperr.FolderNotFound, "test folder"},
	"invocation_id":   {apperr.InvocationNotFound, "test invocation"},
	"run_id":          {apperr.TestRunNotFound, "test run"},
	"load_test_id":    {apperr.LoadTestNotFound, "load test"},
	"webhook_id":      {apperr.WebhookNotFound, "webhook"},
	"delivery_id":     {apperr.DeliveryNotFound, "delivery"},
	"user_id":         {apperr.ServiceAccountNotFound, "service account"},
	"key_id":          {apperr.APIKeyNotFound, "API key"},
}

var pathVar = regexp.MustCompile(`\{([a-z_]+)\}`)

// Vars are the path variables of op, in order.
func (op Operation) Vars() []string {
	var out []string
	for _, m := range pathVar.FindAllStringSubmatch(op.Path, -1) {
		out = append(out, m[1])
	}
	return out
}

// Reads reports whether op is a GET (and HEAD with it): it only reads.
func (op Operation) Reads() bool { return op.Method == http.MethodGet }
