package ports

import (
	"slices"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/api/apitest"
	"github.com/voiceai-platform/voiceai/pkg/principal"
	"github.com/voiceai-platform/voiceai/services/identity/app"
)

// The edge checks requests against the API's schemas; what identity's
// code relies on of them must be what they say: the roles it knows, the
// e-mail bound it keeps for the operator's command, and the permission
// names the platform knows (no code checks them after the schema).
func TestSchemasSayTheDomainsLimits(t *testing.T) {
	if got := apitest.Int(t, "MemberAdd", "properties", "email", "maxLength"); got != app.MaxEmailLen {
		t.Errorf("email: the schema says at most %d characters, app %d", got, app.MaxEmailLen)
	}
	if got, want := apitest.Strings(t, "MemberRole", "enum"), []string{app.RoleAdmin, app.RoleMember}; !slices.Equal(got, want) {
		t.Errorf("roles: the schema says %v, app %v", got, want)
	}
	if got := apitest.Strings(t, "PermissionName", "enum"); !slices.Equal(got, principal.Known) {
		t.Errorf("permissions: the schema offers %q, the platform knows %q", got, principal.Known)
	}
	if got := apitest.Strings(t, "Permissions", "oneOf", "1", "enum"); !slices.Equal(got, []string{principal.PermissionAll}) {
		t.Errorf("permissions: the schema's word for all of them is %v, the platform's %q", got, principal.PermissionAll)
	}
}
