package ports

import (
	"slices"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// The edge checks requests against the API's schemas; what identity's
// code relies on of them must be what they say: permission names the
// platform knows (no code checks them after the schema).
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	branches := mustSchema(t, "Permissions")["oneOf"].([]any)
	names := texts(branches[0].(map[string]any)["items"].(map[string]any)["enum"])
	for _, p := range names {
		if !principal.IsKnown(p) {
			t.Errorf("permissions: the schema offers %q, which the platform does not know", p)
		}
	}
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

func texts(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}
