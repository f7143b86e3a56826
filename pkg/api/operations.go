// Package api is the public HTTP API defined once: every operation's
// method, path, owning service and permission. The gateway routes and
// checks permissions from this table, each service registers its handlers
// against it, and the hostile-input tests walk it; a route that is not in
// the table is served by nobody.
package api

import (
	"net/http"
	"regexp"
)

// Operation is one endpoint of the public API.
type Operation struct {
	Name    string // stable, e.g. "agents.get"; scopes idempotency keys
	Method  string
	Path    string // gorilla/mux template; every {var} is an id (see IDParams)
	Service string // the service that serves it, reached over NATS
	Perms   []string
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
)

func op(name, method, path, service string, perms []string) Operation {
	return Operation{Name: name, Method: method, Path: path, Service: service, Perms: perms}
}

const (
	get, post, put, patch, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete
	agentsPath                 = "/v1/convai/agents"
	ticketsPath                = "/v1/convai/triage-tickets"
	testsPath                  = "/v1/convai/agent-testing"
	invocationsPath            = "/v1/convai/test-invocations"
	accountsPath               = "/v1/service-accounts"
)

// The operations. Static paths come before templates that would match
// them (".../agents/list" before ".../agents/{agent_id}").
var (
	CreateAgent     = op("agents.create", post, agentsPath+"/create", "agents", convaiWrite)
	ListAgents      = op("agents.list", get, agentsPath, "agents", convaiRead)
	ListAgentsAlias = op("agents.list_alias", get, agentsPath+"/list", "agents", convaiRead)
	GetAgent        = op("agents.get", get, agentsPath+"/{agent_id}", "agents", convaiRead)
	UpdateAgent     = op("agents.update", patch, agentsPath+"/{agent_id}", "agents", convaiWrite)
	DeleteAgent     = op("agents.delete", del, agentsPath+"/{agent_id}", "agents", convaiWrite)

	ListTickets       = op("tickets.list", get, ticketsPath, "tickets", convaiRead)
	CreateTicket      = op("tickets.create", post, ticketsPath, "tickets", convaiWrite)
	ListAgentTickets  = op("tickets.list_agent", get, agentsPath+"/{agent_id}/triage-tickets", "tickets", convaiRead)
	CreateAgentTicket = op("tickets.create_agent", post, agentsPath+"/{agent_id}/triage-tickets", "tickets", convaiWrite)
	AssignableUsers   = op("tickets.assignable_users", get, agentsPath+"/{agent_id}/triage-tickets/assignable-users", "tickets", convaiRead)
	GetTicket         = op("tickets.get", get, ticketsPath+"/{ticket_id}", "tickets", convaiRead)
	UpdateTicket      = op("tickets.update", patch, ticketsPath+"/{ticket_id}", "tickets", convaiWrite)
	DeleteTicket      = op("tickets.delete", del, ticketsPath+"/{ticket_id}", "tickets", convaiWrite)
	CommentTicket     = op("tickets.comment", post, ticketsPath+"/{ticket_id}/comments", "tickets", convaiWrite)
	TurnCommentTicket = op("tickets.turn_comment", post, ticketsPath+"/{ticket_id}/turn-comments", "tickets", convaiWrite)
	MergeTickets      = op("tickets.merge", post, ticketsPath+"/{ticket_id}/merge", "tickets", convaiWrite)

	CreateTest         = op("testing.create_test", post, testsPath+"/create", "testing", convaiWrite)
	ListTests          = op("testing.list_tests", get, testsPath, "testing", convaiRead)
	TestSummaries      = op("testing.summaries", post, testsPath+"/summaries", "testing", convaiRead) // reads; POST for its body
	BulkMoveTests      = op("testing.bulk_move", post, testsPath+"/bulk-move", "testing", convaiWrite)
	CreateFolder       = op("testing.create_folder", post, testsPath+"/folders", "testing", convaiWrite)
	GetFolder          = op("testing.get_folder", get, testsPath+"/folders/{folder_id}", "testing", convaiRead)
	RenameFolder       = op("testing.rename_folder", patch, testsPath+"/folders/{folder_id}", "testing", convaiWrite)
	DeleteFolder       = op("testing.delete_folder", del, testsPath+"/folders/{folder_id}", "testing", convaiWrite)
	GetTest            = op("testing.get_test", get, testsPath+"/{test_id}", "testing", convaiRead)
	UpdateTest         = op("testing.update_test", put, testsPath+"/{test_id}", "testing", convaiWrite)
	DeleteTest         = op("testing.delete_test", del, testsPath+"/{test_id}", "testing", convaiWrite)
	RunTests           = op("testing.run_tests", post, agentsPath+"/{agent_id}/run-tests", "testing", convaiWrite)
	ListInvocations    = op("testing.list_invocations", get, invocationsPath, "testing", convaiRead)
	GetInvocation      = op("testing.get_invocation", get, invocationsPath+"/{invocation_id}", "testing", convaiRead)
	CancelInvocation   = op("testing.cancel_invocation", post, invocationsPath+"/{invocation_id}/cancel", "testing", convaiWrite)
	ResubmitInvocation = op("testing.resubmit_invocation", post, invocationsPath+"/{invocation_id}/resubmit", "testing", convaiWrite)

	ListWebhooks   = op("webhooks.list", get, "/v1/convai/webhooks", "webhooks", webhooksRead)
	CreateWebhook  = op("webhooks.create", post, "/v1/convai/webhooks", "webhooks", webhooksWrite)
	GetWebhook     = op("webhooks.get", get, "/v1/convai/webhooks/{webhook_id}", "webhooks", webhooksRead)
	UpdateWebhook  = op("webhooks.update", put, "/v1/convai/webhooks/{webhook_id}", "webhooks", webhooksWrite)
	DeleteWebhook  = op("webhooks.delete", del, "/v1/convai/webhooks/{webhook_id}", "webhooks", webhooksWrite)
	WebhooksHealth = op("webhooks.health", get, "/v1/voiceai/webhooks/health", "webhooks", webhooksRead)
	TestWebhook    = op("webhooks.test", post, "/v1/voiceai/webhooks/{webhook_id}/test", "webhooks", webhooksWrite)
	WebhookLogs    = op("webhooks.logs", get, "/v1/voiceai/webhooks/{webhook_id}/logs", "webhooks", webhooksRead)
	IngestEvent    = op("webhooks.ingest", post, "/v1/convai/events", "webhooks", convaiWrite)

	ListAccounts  = op("identity.list_accounts", get, accountsPath, "identity", accountsRead)
	CreateAccount = op("identity.create_account", post, accountsPath, "identity", accountsWrite)
	ListKeys      = op("identity.list_keys", get, accountsPath+"/{user_id}/api-keys", "identity", accountsRead)
	CreateKey     = op("identity.create_key", post, accountsPath+"/{user_id}/api-keys", "identity", accountsWrite)
	UpdateKey     = op("identity.update_key", patch, accountsPath+"/{user_id}/api-keys/{key_id}", "identity", accountsWrite)
	RevokeKey     = op("identity.revoke_key", del, accountsPath+"/{user_id}/api-keys/{key_id}", "identity", accountsWrite)
	ListMembers   = op("identity.list_members", get, "/v1/workspace/members", "identity", membersRead)
	AddMember     = op("identity.add_member", post, "/v1/workspace/members", "identity", membersWrite)
)

// CreateTestFromConversation is an extension of the public API: a
// regression test from a production conversation the caller posts (the
// platform stores no transcripts).
var CreateTestFromConversation = op("testing.create_test_from_conversation", post, testsPath+"/from-conversation", "testing", convaiWrite)

// Operations is every operation, in routing order.
var Operations = []Operation{
	CreateAgent, ListAgents, ListAgentsAlias, GetAgent, UpdateAgent, DeleteAgent,
	ListTickets, CreateTicket, ListAgentTickets, CreateAgentTicket, AssignableUsers,
	GetTicket, UpdateTicket, DeleteTicket, CommentTicket, TurnCommentTicket, MergeTickets,
	CreateTest, CreateTestFromConversation, ListTests, TestSummaries, BulkMoveTests, CreateFolder, GetFolder, RenameFolder, DeleteFolder,
	GetTest, UpdateTest, DeleteTest, RunTests, ListInvocations, GetInvocation, CancelInvocation, ResubmitInvocation,
	ListWebhooks, CreateWebhook, GetWebhook, UpdateWebhook, DeleteWebhook, WebhooksHealth, TestWebhook, WebhookLogs, IngestEvent,
	ListAccounts, CreateAccount, ListKeys, CreateKey, UpdateKey, RevokeKey, ListMembers, AddMember,
}

// IDParam is what a path variable names, and how an unknown one is
// answered.
type IDParam struct {
	NotFound string // the 404 status of an unknown id, e.g. "agent_not_found"
	Noun     string // for messages, e.g. "agent"
}

// IDParams are the path variables of the API: each is an id, checked
// against the id grammar before anything else sees it. A malformed id is
// answered exactly as an unknown one.
var IDParams = map[string]IDParam{
	"agent_id":      {"agent_not_found", "agent"},
	"ticket_id":     {"ticket_not_found", "triage ticket"},
	"test_id":       {"test_not_found", "test"},
	"folder_id":     {"folder_not_found", "test folder"},
	"invocation_id": {"test_invocation_not_found", "test invocation"},
	"webhook_id":    {"webhook_not_found", "webhook"},
	"user_id":       {"service_account_not_found", "service account"},
	"key_id":        {"api_key_not_found", "API key"},
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

// Reads reports whether op only reads: GET (and HEAD with it).
func (op Operation) Reads() bool { return op.Method == http.MethodGet }
