package ports

import (
	"slices"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// The edge checks requests against the API's schemas; what identity's
// code relies on of them must be what they say: the roles it knows, the
// e-mail bound it keeps for the operator's command, and the permission
// names the platform knows (no code checks them after the schema).
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	if got := mustSchema(t, "MemberAdd")["properties"].(map[string]any)["email"].(map[string]any)["maxLength"]; asInt(got) != app.MaxEmailLen {
		t.Errorf("email: the schema says at most %v characters, app %d", got, app.MaxEmailLen)
	}
	if got, want := texts(mustSchema(t, "MemberRole")["enum"]), []string{app.RoleAdmin, app.RoleMember}; !slices.Equal(got, want) {
		t.Errorf("roles: the schema says %v, app %v", got, want)
	}
	if got := texts(mustSchema(t, "PermissionName")["enum"]); !slices.Equal(got, principal.Known) {
		t.Errorf("permissions: the schema offers %q, the platform knows %q", got, principal.Known)
	}
	branches := mustSchema(t, "Permissions")["oneOf"].([]any)
	if got := texts(branches[1].(map[string]any)["enum"]); !slices.Equal(got, []string{principal.PermissionAll}) {
		t.Errorf("permissions: the schema's word for all of them is %v, the platform's %q", got, principal.PermissionAll)
	}
}

func mustSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	s, err := api.Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func asInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return -1
}

func texts(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
