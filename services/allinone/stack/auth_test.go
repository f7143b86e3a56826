package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
	"github.com/voiceai-platform/voiceai/services/identity/operator"
)

const adminKey = "vak_test_admin_0123456789abcdef0123456789"

// The auth rules of spec section 5, case by case, through the gateway.
func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), func(c *Config) { c.BootstrapAdminKey = adminKey })
	const list = "/v1/convai/agents"

	t.Run("missing key", func(t *testing.T) {
		wantError(t, call(t, s, "GET", list, "", ""), 401, "missing_api_key")
	})
	t.Run("unknown key", func(t *testing.T) {
		wantError(t, call(t, s, "GET", list, "vak_nope", ""), 401, "invalid_api_key")
	})
	t.Run("key in the query string", func(t *testing.T) {
		wantError(t, call(t, s, "GET", list+"?x-api-key="+adminKey, "", ""), 401, "credentials_in_url")
		wantError(t, call(t, s, "GET", list+"?api_key="+adminKey, adminKey, ""), 401, "credentials_in_url")
	})
	t.Run("key in the body only", func(t *testing.T) {
		wantError(t, call(t, s, "POST", "/v1/convai/agents/create", "", `{"x-api-key":"`+adminKey+`","name":"a"}`), 401, "missing_api_key")
	})
	t.Run("x-api-key and Authorization together", func(t *testing.T) {
		wantError(t, call(t, s, "GET", list, adminKey, "", "Authorization", "Bearer "+adminKey), 401, "ambiguous_credentials")
		wantError(t, call(t, s, "GET", list, adminKey, "", "Authorization", ""), 401, "ambiguous_credentials") // present, if empty
	})
	t.Run("xi-api-key, as the official SDKs send it", func(t *testing.T) {
		if r := call(t, s, "GET", list, "", "", "xi-api-key", adminKey); r.Code != 200 {
			t.Fatalf("xi-api-key alone: %d %s", r.Code, r.Body)
		}
		if r := call(t, s, "GET", list, adminKey, "", "xi-api-key", adminKey); r.Code != 200 {
			t.Fatalf("the same key in both headers: %d %s", r.Code, r.Body)
		}
		wantError(t, call(t, s, "GET", list, adminKey, "", "xi-api-key", "vak_another"), 401, "ambiguous_credentials")
		wantError(t, call(t, s, "GET", list, "", "", "xi-api-key", "vak_nope"), 401, "invalid_api_key")
		wantError(t, call(t, s, "GET", list, "", "", "xi-api-key", adminKey, "Authorization", "Bearer "+adminKey), 401, "ambiguous_credentials")
	})
	t.Run("one key header sent twice", func(t *testing.T) {
		twice := func(name, first, second string) int {
			req, err := testkit.APIRequest(t.Context(), "GET", "http://"+s.Addr+list, "", "")
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Add(name, first)
			req.Header.Add(name, second)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Detail struct{ Status string } }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode == 401 && body.Detail.Status != "ambiguous_credentials" {
				t.Fatalf("%s twice: 401 %s", name, body.Detail.Status)
			}
			return resp.StatusCode
		}
		for _, name := range []string{"x-api-key", "xi-api-key"} {
			if code := twice(name, adminKey, "vak_another"); code != 401 {
				t.Fatalf("%s with two keys, the first valid: %d, want 401 ambiguous_credentials", name, code)
			}
			if code := twice(name, adminKey, adminKey); code != 200 {
				t.Fatalf("%s with the same key twice: %d", name, code)
			}
		}
		if code := twice("Authorization", "Bearer a", "Bearer b"); code != 401 {
			t.Fatalf("Authorization twice: %d", code)
		}
	})
	t.Run("Authorization alone", func(t *testing.T) {
		wantError(t, call(t, s, "GET", list, "", "", "Authorization", "Bearer "+adminKey), 401, "missing_api_key")
	})
	t.Run("valid key", func(t *testing.T) {
		if r := call(t, s, "GET", list, adminKey, ""); r.Code != 200 || r.Header.Get("X-Request-Id") == "" {
			t.Fatalf("got %d %s", r.Code, r.Body)
		}
	})

	t.Run("disabled, re-enabled, revoked", func(t *testing.T) {
		key, acct, id := newKey(t, s, adminKey, `["convai_read"]`, "")
		path := "/v1/service-accounts/" + acct + "/api-keys/" + id
		if r := call(t, s, "PATCH", path, adminKey, `{"is_enabled":false}`); r.Code != 200 {
			t.Fatalf("disable: %d %s", r.Code, r.Body)
		}
		wantError(t, call(t, s, "GET", list, key, ""), 401, "api_key_disabled")
		if r := call(t, s, "PATCH", path, adminKey, `{"is_enabled":true}`); r.Code != 200 {
			t.Fatalf("enable: %d %s", r.Code, r.Body)
		}
		if r := call(t, s, "GET", list, key, ""); r.Code != 200 {
			t.Fatalf("re-enabled key: %d %s", r.Code, r.Body)
		}
		if r := call(t, s, "DELETE", path, adminKey, ""); r.Code != 200 {
			t.Fatalf("revoke: %d %s", r.Code, r.Body)
		}
		wantError(t, call(t, s, "GET", list, key, ""), 401, "api_key_revoked")
		wantError(t, call(t, s, "PATCH", path, adminKey, `{"name":"x"}`), 404, "api_key_not_found")
	})

	t.Run("expired", func(t *testing.T) {
		exp := time.Now().Add(2 * time.Second).Unix()
		key, _, _ := newKey(t, s, adminKey, `["convai_read"]`, `,"expires_at_unix":`+strconv.FormatInt(exp, 10))
		eventually(t, 5*time.Second, "the key expires", func() bool { return call(t, s, "GET", list, key, "").Code == 401 })
		wantError(t, call(t, s, "GET", list, key, ""), 401, "api_key_expired")
	})

	t.Run("missing permission", func(t *testing.T) {
		key, _, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
		if r := call(t, s, "GET", list, key, ""); r.Code != 200 {
			t.Fatalf("read with convai_read: %d", r.Code)
		}
		wantError(t, call(t, s, "POST", "/v1/convai/agents/create", key, `{"name":"a"}`), 403, "missing_permission")
		wantError(t, call(t, s, "POST", "/v1/service-accounts", key, `{"name":"a"}`), 403, "missing_permission")
	})

	t.Run("allowed_ips", func(t *testing.T) {
		outside, _, _ := newKey(t, s, adminKey, `["convai_read"]`, `,"allowed_ips":["10.0.0.0/8","2001:db8::/32"]`)
		wantError(t, call(t, s, "GET", list, outside, ""), 403, "ip_not_allowed")
		inside, _, _ := newKey(t, s, adminKey, `["convai_read"]`, `,"allowed_ips":["127.0.0.1"]`)
		if r := call(t, s, "GET", list, inside, ""); r.Code != 200 {
			t.Fatalf("allowed address: %d %s", r.Code, r.Body)
		}
		// X-Forwarded-For is not believed from an untrusted peer.
		wantError(t, call(t, s, "GET", list, outside, "", "X-Forwarded-For", "10.1.2.3"), 403, "ip_not_allowed")
	})

	t.Run("permission escalation", func(t *testing.T) {
		key, acct, _ := newKey(t, s, adminKey, `["service_account_write"]`, "")
		wantError(t, call(t, s, "POST", "/v1/service-accounts/"+acct+"/api-keys", key, `{"name":"x","permissions":"all"}`), 403, "permission_escalation")
	})

	t.Run("secret shown once", func(t *testing.T) {
		key, acct, _ := newKey(t, s, adminKey, `["convai_read"]`, "")
		r := call(t, s, "GET", "/v1/service-accounts/"+acct+"/api-keys", adminKey, "")
		if r.Code != 200 || strings.Contains(string(r.Body), key) || !strings.Contains(string(r.Body), `"hashed_xi_api_key"`) {
			t.Fatalf("list leaks the secret or lacks the hash: %s", r.Body)
		}
	})

	t.Run("workspaces are isolated", func(t *testing.T) {
		other := createWorkspace(t, s, "Acme")
		r := call(t, s, "POST", "/v1/convai/agents/create", other.APIKey, `{"name":"acme agent"}`)
		if r.Code != 201 {
			t.Fatalf("create in other workspace: %d %s", r.Code, r.Body)
		}
		id := r.JSON(t)["agent_id"].(string)
		wantError(t, call(t, s, "GET", "/v1/convai/agents/"+id, adminKey, ""), 404, "agent_not_found")
		wantError(t, call(t, s, "PATCH", "/v1/convai/agents/"+id, adminKey, `{"name":"mine"}`), 404, "agent_not_found")
		wantError(t, call(t, s, "DELETE", "/v1/convai/agents/"+id, adminKey, ""), 404, "agent_not_found")
		if r := call(t, s, "GET", list, adminKey, ""); strings.Contains(string(r.Body), id) {
			t.Fatal("another workspace's agent is listed")
		}
		wantError(t, call(t, s, "GET", "/v1/service-accounts/"+other.ServiceAccountUserID+"x/api-keys", adminKey, ""), 404, "service_account_not_found")
		// The caller's own workspace cannot be spoofed with internal headers
		// or asserted to be another one.
		r = call(t, s, "GET", "/v1/convai/agents/"+id, adminKey, "", "Voiceai-Workspace-Id", other.WorkspaceID)
		wantError(t, r, 404, "agent_not_found")
		wantError(t, call(t, s, "GET", list, adminKey, "", "X-Workspace-Id", other.WorkspaceID), 403, "workspace_forbidden")
		if r := call(t, s, "GET", "/v1/convai/agents/"+id, other.APIKey, ""); r.Code != 200 {
			t.Fatalf("owner reads its agent: %d", r.Code)
		}
	})

	t.Run("request conventions", func(t *testing.T) {
		if r := call(t, s, "GET", "/healthz", "", ""); r.Code != 200 {
			t.Fatalf("healthz %d", r.Code)
		}
		if r := call(t, s, "GET", "/readyz", "", ""); r.Code != 200 || r.JSON(t)["ready"] != true {
			t.Fatalf("readyz %d %s", r.Code, r.Body)
		}
		wantError(t, call(t, s, "GET", "/v1/nothing-here", adminKey, ""), 404, "route_not_found")
		// A path is matched as sent. Cleaned, "x/../<id>" was answered with a
		// 301 to the agent's own path, and fetch, which keeps DELETE and
		// PATCH across it, deleted or changed an agent the caller never named.
		agent := createAgent(t, s, adminKey, `{"name":"named by its own id only"}`)
		for _, path := range []string{"/v1/convai/agents/x%2F..%2F" + agent, "/v1/convai/agents/x/../" + agent, "/v1/convai/agents/.%2F" + agent, "//v1/convai/agents/" + agent} {
			wantError(t, call(t, s, "DELETE", path, adminKey, ""), 404, "route_not_found")
			wantError(t, call(t, s, "PATCH", path, adminKey, `{"name":"renamed"}`), 404, "route_not_found")
		}
		if r := call(t, s, "GET", "/v1/convai/agents/"+agent, adminKey, ""); r.Code != 200 || r.JSON(t)["name"] != "named by its own id only" {
			t.Fatalf("the agent after requests to paths that only clean to it: %d %s", r.Code, r.Body)
		}
		wantError(t, call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":`), 400, "malformed_json")
		r := call(t, s, "POST", "/v1/convai/agents/create", adminKey, `{"name":42}`)
		if r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","name"]`) {
			t.Fatalf("wrong type: %d %s", r.Code, r.Body)
		}
		big := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
		wantError(t, call(t, s, "POST", "/v1/convai/agents/create", adminKey, big), 413, "body_too_large")
		if r := call(t, s, "GET", list, adminKey, "", "X-Request-Id", "trace-123"); r.Header.Get("X-Request-Id") != "trace-123" {
			t.Fatalf("incoming request id not kept: %q", r.Header.Get("X-Request-Id"))
		}
	})
}

func createWorkspace(t *testing.T, s *Stack, name string) operator.CreateWorkspaceResponse {
	t.Helper()
	return createWorkspaceFor(t, s, name, "")
}

// createWorkspaceFor is createWorkspace with an owner, by e-mail ("": none).
func createWorkspaceFor(t *testing.T, s *Stack, name, owner string) operator.CreateWorkspaceResponse {
	t.Helper()
	nc := testenv.ConnAt(t, s.NATSURL)
	body, _ := json.Marshal(operator.CreateWorkspaceRequest{Name: name, OwnerEmail: owner})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(ctx, operator.CreateWorkspaceSubject, body)
	if err != nil {
		t.Fatal(err)
	}
	var out operator.CreateWorkspaceResponse
	if err := json.Unmarshal(msg.Data, &out); err != nil || out.Error != "" || out.APIKey == "" {
		t.Fatalf("create workspace: %s %v", msg.Data, err)
	}
	return out
}

// People are workspace members beside service accounts, added by an
// invitation (the SDK's workspace.invites.create) and changed as the SDK's
// workspace.members.update does; tickets can be assigned to either, and
// other workspaces see neither.
func TestWorkspaceMembers(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), func(c *Config) { c.BootstrapAdminKey = adminKey })
	r := call(t, s, "POST", "/v1/workspace/invites/add", adminKey, `{"email":"Ada@Example.com","first_name":"Ada"}`)
	if r.Code != 200 || r.JSON(t)["status"] != "ok" {
		t.Fatalf("add member: %d %s", r.Code, r.Body)
	}
	userID := r.JSON(t)["user_id"].(string)
	wantError(t, call(t, s, "POST", "/v1/workspace/invites/add", adminKey, `{"email":"ada@example.com"}`), 409, "member_exists")
	if r := call(t, s, "POST", "/v1/workspace/invites/add", adminKey, `{"email":"not an address"}`); r.Code != 422 || !strings.Contains(string(r.Body), `"loc":["body","email"]`) {
		t.Fatalf("bad e-mail: %d %s", r.Code, r.Body)
	}
	reader, _, _ := newKey(t, s, adminKey, `["workspace_members_read"]`, "")
	wantError(t, call(t, s, "POST", "/v1/workspace/invites/add", reader, `{"email":"b@example.com"}`), 403, "missing_permission")
	wantError(t, call(t, s, "POST", "/v1/workspace/members", reader, `{"email":"ada@example.com","is_locked":true}`), 403, "missing_permission")
	if r := call(t, s, "POST", "/v1/workspace/members", adminKey, `{"email":"ada@example.com","workspace_seat_type":"workspace_admin"}`); r.Code != 200 || r.JSON(t)["status"] != "ok" {
		t.Fatalf("update member: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "POST", "/v1/workspace/members", adminKey, `{"email":"nobody@example.com","is_locked":true}`), 404, "member_not_found")
	r = call(t, s, "GET", "/v1/workspace/members", reader, "")
	var members []map[string]any
	if err := json.Unmarshal(r.Body, &members); r.Code != 200 || err != nil {
		t.Fatalf("list members: %d %s", r.Code, r.Body)
	}
	byID := map[string]map[string]any{}
	for _, m := range members {
		byID[m["user_id"].(string)] = m
	}
	if ada := byID[userID]; ada["email"] != "ada@example.com" || ada["seat_type"] != "workspace_admin" || ada["is_locked"] != false || ada["is_service_account"] != false ||
		byID["sa_admin"]["is_service_account"] != true {
		t.Fatalf("list members: %s", r.Body)
	}
	other := createWorkspace(t, s, "Other")
	if r := call(t, s, "GET", "/v1/workspace/members", other.APIKey, ""); strings.Contains(string(r.Body), userID) {
		t.Fatalf("another workspace sees the member: %s", r.Body)
	}
	// The owner a workspace is created for is its owner, an admin.
	owned := createWorkspaceFor(t, s, "Owned", "Owner@Example.com")
	r = call(t, s, "GET", "/v1/workspace/members", owned.APIKey, "")
	if !strings.Contains(string(r.Body), `"email":"owner@example.com","first_name":"","seat_type":"workspace_admin","is_owner":true,"is_locked":false`) {
		t.Fatalf("the owner's workspace members: %s", r.Body)
	}

	// A person can be assigned a ticket; the assignable users list them.
	agent := newAgent(t, s, adminKey, "Members")
	tk := decodeTicket(t, call(t, s, "POST", "/v1/convai/agents/"+agent+"/triage-tickets", adminKey, `{"qa_comment":"x"}`))
	eventually(t, 5*time.Second, "the tickets service knows the member", func() bool {
		return call(t, s, "PATCH", "/v1/convai/triage-tickets/"+tk.AgentqaTicketID, adminKey, `{"assignee_user_id":"`+userID+`"}`).Code == 200
	})
	r = call(t, s, "GET", "/v1/convai/agents/"+agent+"/triage-tickets/assignable-users", adminKey, "")
	if !strings.Contains(string(r.Body), `"user_id":"`+userID+`","email":"ada@example.com","first_name":"Ada","is_service_account":false`) {
		t.Fatalf("assignable users: %s", r.Body)
	}
}

// A workspace's live API keys are bounded (VOICEAI_MAX_API_KEYS_PER_WORKSPACE,
// 3 here, the bootstrap admin key counted): one more is a 409 in the error
// shape, and a revocation makes room.
func TestLiveKeysPerWorkspaceAreBounded(t *testing.T) {
	t.Parallel()
	s := startAdmin(t, func(c *Config) { c.Identity.MaxKeysPerWorkspace = 3 })
	r := call(t, s, "POST", "/v1/service-accounts", adminKey, `{"name":"ci"}`)
	if r.Code != 200 {
		t.Fatalf("account: %d %s", r.Code, r.Body)
	}
	keys := "/v1/service-accounts/" + r.JSON(t)["service-account-user-id"].(string) + "/api-keys"
	var made []string
	for range 3 {
		r := call(t, s, "POST", keys, adminKey, `{"name":"k","permissions":["convai_read"]}`)
		if r.Code == 409 {
			wantError(t, r, 409, "workspace_limit_reached")
			break
		}
		if r.Code != 200 {
			t.Fatalf("key: %d %s", r.Code, r.Body)
		}
		made = append(made, r.JSON(t)["key_id"].(string))
	}
	if len(made) == 0 || len(made) == 3 {
		t.Fatalf("%d keys made under a bound of 3 with the admin key live", len(made))
	}
	if r := call(t, s, "DELETE", keys+"/"+made[0], adminKey, ""); r.Code != 200 {
		t.Fatalf("revoke: %d %s", r.Code, r.Body)
	}
	if r := call(t, s, "POST", keys, adminKey, `{"name":"k","permissions":["convai_read"]}`); r.Code != 200 {
		t.Fatalf("after a revocation: %d %s", r.Code, r.Body)
	}
	wantError(t, call(t, s, "POST", keys, adminKey, `{"name":"k","permissions":["convai_read"]}`), 409, "workspace_limit_reached")
}
