package ports

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
	"github.com/voiceai-platform/voiceai/pkg/httpx"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/pkg/testenv"
	"github.com/voiceai-platform/voiceai/services/identity/adapters/memory"
	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// Every bound of an identity request is the schema's, checked at the
// edge, and what no schema can say is the app's: either way a wrong body
// is a 422 naming each wrong field, and nothing is written. Bodies the
// official SDK sends, and the bounds themselves, pass.
func TestWrongBodiesAreRefusedWithTheirFields(t *testing.T) {
	h := newRouter(t)
	do := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		principal.Principal{WorkspaceID: "ws_a", UserID: "sa_admin", Permissions: []string{principal.PermissionAll}}.SetHeaders(req.Header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	ok := func(rec *httptest.ResponseRecorder) map[string]any {
		t.Helper()
		var m map[string]any
		if rec.Code >= 300 || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		return m
	}
	account := ok(do("POST", "/v1/service-accounts", `{"name":"bot"}`))["service-account-user-id"].(string)
	keys := "/v1/service-accounts/" + account + "/api-keys"
	key := keys + "/" + ok(do("POST", keys, `{"name":"one","permissions":["convai_read"]}`))["key_id"].(string)
	invite := "/v1/workspace/invites/add"

	name201 := `"` + strings.Repeat("n", 201) + `"`
	ips101 := `["10.0.0.1"` + strings.Repeat(`,"10.0.0.1"`, 100) + `]`
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	for _, c := range []struct {
		name, method, path, body string
		want                     []string // "loc type", every entry of the 422; none for a success
	}{
		// service accounts
		{"account without a name", "POST", "/v1/service-accounts", `{}`, []string{`["body","name"] missing`}},
		{"account with an empty name", "POST", "/v1/service-accounts", `{"name":""}`, []string{`["body","name"] string_too_short`}},
		{"account with a blank name", "POST", "/v1/service-accounts", `{"name":" \t "}`, []string{`["body","name"] string_too_short`}},
		{"account with a name of other white space", "POST", "/v1/service-accounts", `{"name":"\u00a0\u2003"}`, []string{`["body","name"] string_too_short`}},
		{"account with a long name", "POST", "/v1/service-accounts", `{"name":` + name201 + `}`, []string{`["body","name"] string_too_long`}},
		{"account with a name of 200 characters", "POST", "/v1/service-accounts", `{"name":"` + strings.Repeat("é", 200) + `"}`, nil},

		// key creates
		{"key without a name or permissions", "POST", keys, `{}`, []string{`["body","name"] missing`, `["body","permissions"] missing`}},
		{"key with a blank name", "POST", keys, `{"name":"  ","permissions":"all"}`, []string{`["body","name"] string_too_short`}},
		{"key with a long name", "POST", keys, `{"name":` + name201 + `,"permissions":"all"}`, []string{`["body","name"] string_too_long`}},
		{"key with no permissions", "POST", keys, `{"name":"k","permissions":[]}`, []string{`["body","permissions"] too_short`}},
		{"key with an unknown permission", "POST", keys, `{"name":"k","permissions":["convai_read","launch_missiles"]}`, []string{`["body","permissions",1] enum`}},
		{"key with another word for all", "POST", keys, `{"name":"k","permissions":"everything"}`, []string{`["body","permissions"] enum`}},
		{"key with too many addresses", "POST", keys, `{"name":"k","permissions":"all","allowed_ips":` + ips101 + `}`, []string{`["body","allowed_ips"] too_long`}},
		{"key with rate limits out of range", "POST", keys, `{"name":"k","permissions":"all","rate_limit_per_minute":0,"rate_limit_per_hour":1000001}`,
			[]string{`["body","rate_limit_per_hour"] less_than_equal`, `["body","rate_limit_per_minute"] greater_than_equal`}},
		{"key with an address that is none", "POST", keys, `{"name":"k","permissions":"all","allowed_ips":["10.0.0.1","example.com"]}`, []string{`["body","allowed_ips",1] value_error`}},
		{"key expiring in the past", "POST", keys, `{"name":"k","permissions":"all","expires_at_unix":1}`, []string{`["body","expires_at_unix"] value_error`}},
		{"key expiring too far away", "POST", keys, `{"name":"k","permissions":"all","expires_at_unix":9223372036854775807}`, []string{`["body","expires_at_unix"] value_error`}},
		{"key at every bound", "POST", keys, `{"name":"` + strings.Repeat("k", 200) + `","permissions":["convai_write","convai_read"],"allowed_ips":["10.0.0.0/8"` + strings.Repeat(`,"10.0.0.1"`, 99) + `],` +
			`"expires_at_unix":` + future + `,"rate_limit_per_minute":1,"rate_limit_per_hour":1000000}`, nil},
		{"key with nulls", "POST", keys, `{"name":"k","permissions":"all","expires_at_unix":null,"rate_limit_per_minute":null,"rate_limit_per_hour":null}`, nil},

		// key updates
		{"update to an empty name", "PATCH", key, `{"name":""}`, []string{`["body","name"] string_too_short`}},
		{"update to a blank name", "PATCH", key, `{"name":"\n"}`, []string{`["body","name"] string_too_short`}},
		{"update to a name of other white space", "PATCH", key, `{"name":"\u00a0"}`, []string{`["body","name"] string_too_short`}},
		{"update to a long name", "PATCH", key, `{"name":` + name201 + `}`, []string{`["body","name"] string_too_long`}},
		{"update to no permissions", "PATCH", key, `{"permissions":[]}`, []string{`["body","permissions"] too_short`}},
		{"update to an unknown permission", "PATCH", key, `{"permissions":["launch_missiles"]}`, []string{`["body","permissions",0] enum`}},
		{"update to too many addresses", "PATCH", key, `{"allowed_ips":` + ips101 + `}`, []string{`["body","allowed_ips"] too_long`}},
		{"update to an address that is none", "PATCH", key, `{"allowed_ips":["10.0.0.300"]}`, []string{`["body","allowed_ips",0] value_error`}},
		{"update to rate limits out of range", "PATCH", key, `{"rate_limit_per_minute":-1,"rate_limit_per_hour":0}`,
			[]string{`["body","rate_limit_per_hour"] greater_than_equal`, `["body","rate_limit_per_minute"] greater_than_equal`}},
		{"update that enables and disables", "PATCH", key, `{"is_enabled":true,"is_disabled":true}`, []string{`["body","is_enabled"] value_error`}},
		{"update as the SDK sends it", "PATCH", key, `{"is_enabled":false,"name":"x"}`, nil},
		{"update with nulls", "PATCH", key, `{"allowed_ips":null,"rate_limit_per_minute":null,"rate_limit_per_hour":null}`, nil},
		{"update at the bounds", "PATCH", key, `{"name":"` + strings.Repeat("é", 200) + `","permissions":"all","allowed_ips":[],"rate_limit_per_minute":1000000,"rate_limit_per_hour":1}`, nil},

		// members
		{"member without an address", "POST", invite, `{"first_name":"Ada"}`, []string{`["body","email"] missing`}},
		{"member with a long address", "POST", invite, `{"email":"` + strings.Repeat("a", 243) + `@example.com"}`, []string{`["body","email"] string_too_long`}},
		{"member with no address", "POST", invite, `{"email":"not an address"}`, []string{`["body","email"] value_error`}},
		{"member with a long first name", "POST", invite, `{"email":"b@example.com","first_name":` + name201 + `}`, []string{`["body","first_name"] string_too_long`}},
		{"member with an unknown seat", "POST", invite, `{"email":"b@example.com","seat_type":"owner"}`, []string{`["body","seat_type"] enum`}},
		{"member with a lite seat", "POST", invite, `{"email":"b@example.com","seat_type":"workspace_lite_member"}`, []string{`["body","seat_type"] enum`}},
		{"member in groups", "POST", invite, `{"email":"b@example.com","group_ids":["grp_1"]}`, []string{`["body","group_ids"] too_long`}},
		{"member with a usage limit", "POST", invite, `{"email":"b@example.com","usage_limit":10}`, []string{`["body","usage_limit"] type_error`}},
		{"member at the bounds", "POST", invite, `{"email":"` + strings.Repeat("a", 242) + `@example.com","first_name":"` + strings.Repeat("é", 200) + `","seat_type":"workspace_admin","group_ids":[]}`, nil},

		// member updates
		{"member update without an address", "POST", "/v1/workspace/members", `{"is_locked":true}`, []string{`["body","email"] missing`}},
		{"member update to a lite seat", "POST", "/v1/workspace/members", `{"email":"a@example.com","workspace_seat_type":"workspace_lite_member"}`, []string{`["body","workspace_seat_type"] enum`}},
		{"member update with a lock of another type", "POST", "/v1/workspace/members", `{"email":"a@example.com","is_locked":"yes"}`, []string{`["body","is_locked"] bool_type`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := do(c.method, c.path, c.body)
			if c.want == nil {
				if rec.Code >= 300 {
					t.Fatalf("%d %s", rec.Code, rec.Body)
				}
				return
			}
			var got struct {
				Detail []struct {
					Loc  []any  `json:"loc"`
					Type string `json:"type"`
				} `json:"detail"`
			}
			if rec.Code != http.StatusUnprocessableEntity || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
				t.Fatalf("%d %s, want 422", rec.Code, rec.Body)
			}
			var entries []string
			for _, d := range got.Detail {
				loc, _ := json.Marshal(d.Loc)
				entries = append(entries, string(loc)+" "+d.Type)
			}
			slices.Sort(entries)
			if !slices.Equal(entries, c.want) {
				t.Errorf("got  %q\nwant %q\n%s", entries, c.want, rec.Body)
			}
		})
	}

	// Nothing refused was written.
	list := ok(do("GET", keys, ""))["api-keys"].([]any)
	var names []string
	for _, k := range list {
		names = append(names, k.(map[string]any)["name"].(string))
	}
	if len(names) != 3 { // "one" (renamed) and the two creates that pass
		t.Errorf("keys after the requests: %q", names)
	}
}

// A key update takes the public API's literals, as the official SDK's
// types offer them: "no_update" leaves a field as it is, and "clear"
// removes the address allow-list.
func TestKeyUpdateTakesThePublicAPIsLiterals(t *testing.T) {
	h := newRouter(t)
	do := func(method, path, body string) map[string]any {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		principal.Principal{WorkspaceID: "ws_a", UserID: "sa_admin", Permissions: []string{principal.PermissionAll}}.SetHeaders(req.Header)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var m map[string]any
		if rec.Code >= 300 || json.Unmarshal(rec.Body.Bytes(), &m) != nil {
			t.Fatalf("%s %s %s: %d %s", method, path, body, rec.Code, rec.Body)
		}
		return m
	}
	account := do("POST", "/v1/service-accounts", `{"name":"bot"}`)["service-account-user-id"].(string)
	keys := "/v1/service-accounts/" + account + "/api-keys"
	key := keys + "/" + do("POST", keys, `{"name":"one","permissions":["convai_read","workspace_write"],"allowed_ips":["10.0.0.0/8"]}`)["key_id"].(string)
	got := do("PATCH", key, `{"is_enabled":"no_update","permissions":"no_update","allowed_ips":"no_update","name":"two"}`)
	if got["name"] != "two" || got["is_disabled"] != false || len(got["permissions"].([]any)) != 2 || len(got["allowed_ips"].([]any)) != 1 {
		t.Errorf("no_update changed the key: %v", got)
	}
	got = do("PATCH", key, `{"allowed_ips":"clear","is_disabled":"no_update"}`)
	if ips := got["allowed_ips"].([]any); len(ips) != 0 || got["is_disabled"] != false {
		t.Errorf("clear left the allow-list: %v", got)
	}
}

// newRouter is identity's router over a real event store, as the gateway
// reaches it: the caller comes in the request's headers.
func newRouter(t *testing.T) http.Handler {
	t.Helper()
	js := testenv.JetStreamAt(t, testenv.StartNATS(t))
	cfg := eventstore.StreamConfig{Name: events.IdentityStream, Subjects: []string{events.IdentityAll}, Replicas: 1}
	if _, err := eventstore.EnsureStream(context.Background(), js, cfg); err != nil {
		t.Fatal(err)
	}
	a := app.New(eventstore.New(js, events.IdentityStream), memory.NewReadModel(), slog.New(slog.DiscardHandler), time.Now)
	return httpx.WithPrincipal(api.Serve("identity", &Handlers{App: a}))
}
