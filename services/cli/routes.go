package cli

import (
	"net/http"
	"net/url"
	"regexp"
)

// route is one operation of the public API the CLI calls. The templates
// are spelled as in the platform's operation table so a test can check
// that each still exists there.
type route struct{ Method, Path string }

const get, post, patch, del = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete

var (
	listAgents = route{get, "/v1/convai/agents"}
	getAgent   = route{get, "/v1/convai/agents/{agent_id}"}

	listTests     = route{get, "/v1/convai/agent-testing"}
	getTest       = route{get, "/v1/convai/agent-testing/{test_id}"}
	runTests      = route{post, "/v1/convai/agents/{agent_id}/run-tests"}
	getInvocation = route{get, "/v1/convai/test-invocations/{invocation_id}"}
	listAccounts  = route{get, "/v1/service-accounts"}
	listKeys      = route{get, "/v1/service-accounts/{user_id}/api-keys"}
	createKey     = route{post, "/v1/service-accounts/{user_id}/api-keys"}
	revokeKey     = route{del, "/v1/service-accounts/{user_id}/api-keys/{key_id}"}
	listTickets   = route{get, "/v1/convai/triage-tickets"}
	getTicket     = route{get, "/v1/convai/triage-tickets/{ticket_id}"}
	updateTicket  = route{patch, "/v1/convai/triage-tickets/{ticket_id}"}
	listWebhooks  = route{get, "/v1/convai/webhooks"}
	createWebhook = route{post, "/v1/convai/webhooks"}
	webhookLogs   = route{get, "/v1/voiceai/webhooks/{webhook_id}/logs"}

	resendDelivery    = route{post, "/v1/voiceai/webhooks/{webhook_id}/deliveries/{delivery_id}/resend"}
	recoverDeliveries = route{post, "/v1/voiceai/webhooks/{webhook_id}/recover"}

	allRoutes = []route{listAgents, getAgent, listTests, getTest, runTests, getInvocation, listAccounts, listKeys, createKey, revokeKey,
		listTickets, getTicket, updateTicket, listWebhooks, createWebhook, webhookLogs, resendDelivery, recoverDeliveries}
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
