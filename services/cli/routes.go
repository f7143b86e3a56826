package cli

import (
	"net/http"
	"net/url"
	"regexp"
)

// route is one operation of the public API the CLI calls. The templates
// are spelled as in the platform's operation table so a test can check
// that each still exists there.
type route struct {
	Method, Path string
	// Poll marks a long poll that takes something (a relay delivery): it
	// is sent without an Idempotency-Key, so no gateway sends it twice
	// (a second copy would take a second delivery).
	Poll bool
}

const get, post, put, patch, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete

var (
	listAgents = route{Method: get, Path: "/v1/convai/agents"}
	getAgent   = route{Method: get, Path: "/v1/convai/agents/{agent_id}"}

	listTests     = route{Method: get, Path: "/v1/convai/agent-testing"}
	getTest       = route{Method: get, Path: "/v1/convai/agent-testing/{test_id}"}
	runTests      = route{Method: post, Path: "/v1/convai/agents/{agent_id}/run-tests"}
	getInvocation = route{Method: get, Path: "/v1/convai/test-invocations/{invocation_id}"}
	startLoadTest = route{Method: post, Path: "/v1/convai/agents/{agent_id}/load-tests"}
	getLoadTest   = route{Method: get, Path: "/v1/convai/load-tests/{load_test_id}"}
	listAccounts  = route{Method: get, Path: "/v1/service-accounts"}
	listKeys      = route{Method: get, Path: "/v1/service-accounts/{user_id}/api-keys"}
	createKey     = route{Method: post, Path: "/v1/service-accounts/{user_id}/api-keys"}
	revokeKey     = route{Method: del, Path: "/v1/service-accounts/{user_id}/api-keys/{key_id}"}
	listTickets   = route{Method: get, Path: "/v1/convai/triage-tickets"}
	getTicket     = route{Method: get, Path: "/v1/convai/triage-tickets/{ticket_id}"}
	updateTicket  = route{Method: patch, Path: "/v1/convai/triage-tickets/{ticket_id}"}
	listWebhooks  = route{Method: get, Path: "/v1/convai/webhooks"}
	createWebhook = route{Method: post, Path: "/v1/convai/webhooks"}
	webhookLogs   = route{Method: get, Path: "/v1/voiceai/webhooks/{webhook_id}/logs"}

	resendDelivery    = route{Method: post, Path: "/v1/voiceai/webhooks/{webhook_id}/deliveries/{delivery_id}/resend"}
	recoverDeliveries = route{Method: post, Path: "/v1/voiceai/webhooks/{webhook_id}/recover"}
	deleteWebhook     = route{Method: del, Path: "/v1/convai/webhooks/{webhook_id}"}
	relayNext         = route{Method: post, Path: "/v1/voiceai/webhooks/{webhook_id}/relay/next", Poll: true}
	relayResult       = route{Method: post, Path: "/v1/voiceai/webhooks/{webhook_id}/relay/result"}
	eventCatalog      = route{Method: get, Path: "/v1/voiceai/webhooks/events"}
	listMembers       = route{Method: get, Path: "/v1/workspace/members"}
	listConversations = route{Method: get, Path: "/v1/convai/conversations"}
	getConversation   = route{Method: get, Path: "/v1/convai/conversations/{conversation_id}"}

	judgeReportRoute = route{Method: get, Path: "/v1/voiceai/judge/report"}
	reviewQueueRoute = route{Method: get, Path: "/v1/voiceai/judge/review-queue"}
	labelRunRoute    = route{Method: post, Path: "/v1/convai/test-invocations/{invocation_id}/runs/{run_id}/labels"}

	analyseConversationRoute = route{Method: post, Path: "/v1/convai/conversations/{conversation_id}/analysis/run"}
	labelConversationRoute   = route{Method: post, Path: "/v1/voiceai/conversations/{conversation_id}/evaluation/labels"}
	rejudgeRoute             = route{Method: post, Path: "/v1/voiceai/judge/rejudge"}

	allRoutes = []route{judgeReportRoute, reviewQueueRoute, labelRunRoute, analyseConversationRoute, labelConversationRoute, rejudgeRoute, listAgents, getAgent, listTests, getTest, runTests, getInvocation, startLoadTest, getLoadTest, listAccounts, listKeys, createKey, revokeKey,
		listTickets, getTicket, updateTicket, listWebhooks, createWebhook, webhookLogs, resendDelivery, recoverDeliveries, deleteWebhook, relayNext, relayResult, eventCatalog,
		listMembers, listConversations, getConversation, createAgentRoute, updateAgentRoute, createTestRoute, replaceTestRoute}
	pathVar = regexp.MustCompile(`\{[a-z_]+\}`)
)

// Routes lists every operation the CLI calls: method and path template.
func Routes() [][2]string {
	out := make([][2]string, len(allRoutes))
	for i, r := range allRoutes {
		out[i] = [2]string{r.Method, r.Path}
	}
	return out
}

// path fills the template's variables with ids, in order, each escaped.
func (r route) path(ids ...string) string {
	i := 0
	return pathVar.ReplaceAllStringFunc(r.Path, func(string) string {
		id := ""
		if i < len(ids) {
			id = ids[i]
		}
		i++
		return url.PathEscape(id)
	})
}
