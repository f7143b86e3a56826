package gateway

import "testing"

// What goes straight to authentication is what the top router would have
// handed to its catch-all, unclean paths included (it matches paths as
// sent); the rest (documents, the console, probes) still goes through it.
func TestIsOperationPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/v1/convai/agents/agent_1": true,
		"/v1/convai/agents/":        true,
		"/v1/anything":              true,
		"/v1/openapi.json":          false,
		"/v1/asyncapi.json":         false,
		"/v1/openapi.json/":         true,
		"/v1//convai/agents":        true,
		"/v1/../healthz":            true,
		"/v1/./convai":              true,
		"/v1/convai/.":              true,
		"/v1/convai/..":             true,
		"/v1":                       false,
		"/healthz":                  false,
		"/console/session":          false,
		"/docs/":                    false,
	} {
		if got := isOperationPath(p); got != want {
			t.Errorf("isOperationPath(%q) = %v, want %v", p, got, want)
		}
	}
}
