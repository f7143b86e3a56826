package gateway

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// route sends a path to a service. GET and HEAD need one of read, every
// other method one of write. The gateway checks permissions before
// forwarding, so a request that cannot succeed costs no service a thing;
// services check again, since they may be reached by other means.
type route struct {
	path    string // gorilla/mux template
	prefix  bool   // match path and everything below it
	service string
	read    []string
	write   []string
}

var (
	convaiRead  = []string{"convai_read", "convai_write"}
	convaiWrite = []string{"convai_write"}
	// Webhooks: read with convai_read or webhooks_write, change with
	// webhooks_write; platform events are ingested with convai_write.
	webhooksRead  = []string{"convai_read", "webhooks_write"}
	webhooksWrite = []string{"webhooks_write"}
)

// routes, most specific first.
var routes = []route{
	{path: "/v1/convai/agents/{agent_id}/triage-tickets", prefix: true, service: "tickets", read: convaiRead, write: convaiWrite},
	{path: "/v1/convai/triage-tickets", prefix: true, service: "tickets", read: convaiRead, write: convaiWrite},
	{path: "/v1/convai/webhooks", prefix: true, service: "webhooks", read: webhooksRead, write: webhooksWrite},
	{path: "/v1/voiceai/webhooks", prefix: true, service: "webhooks", read: webhooksRead, write: webhooksWrite},
	{path: "/v1/convai/events", service: "webhooks", read: convaiWrite, write: convaiWrite},
	{path: "/v1/convai/agents/{agent_id}/run-tests", service: "testing", read: convaiRead, write: convaiWrite},
	// summaries reads tests by id: a POST only because of its body.
	{path: "/v1/convai/agent-testing/summaries", service: "testing", read: convaiRead, write: convaiRead},
	{path: "/v1/convai/agent-testing", prefix: true, service: "testing", read: convaiRead, write: convaiWrite},
	{path: "/v1/convai/test-invocations", prefix: true, service: "testing", read: convaiRead, write: convaiWrite},
	{path: "/v1/convai/agents", prefix: true, service: "agents", read: convaiRead, write: convaiWrite},
	{path: "/v1/workspace/members", service: "identity",
		read:  []string{"workspace_members_read", "workspace_read"},
		write: []string{"workspace_members_invite"}},
	{path: "/v1/service-accounts", prefix: true, service: "identity",
		read:  []string{"workspace_read", "workspace_members_read", "service_account_write"},
		write: []string{"service_account_write"}},
}

func (rt route) perms(method string) []string {
	if method == http.MethodGet || method == http.MethodHead {
		return rt.read
	}
	return rt.write
}

// register adds the route to r. A prefix route matches the path itself
// and anything under "path/", never "pathology".
func (rt route) register(r *mux.Router, h http.Handler) {
	r.Path(rt.path).Handler(h)
	if rt.prefix {
		r.PathPrefix(strings.TrimSuffix(rt.path, "/") + "/").Handler(h)
	}
}
