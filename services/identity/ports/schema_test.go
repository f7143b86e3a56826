package ports

import (
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
	apitest.WantInt(t, app.MaxEmailLen, "MemberInvite", "properties", "email", "maxLength")
	apitest.WantInt(t, app.MaxEmailLen, "MemberUpdate", "properties", "email", "maxLength")
	apitest.WantStrings(t, []string{app.RoleAdmin, app.RoleMember}, "MemberRole", "enum")
	apitest.WantStrings(t, []string{seatOfRole[app.RoleAdmin], seatOfRole[app.RoleMember]}, "SeatType", "enum")
	apitest.WantStrings(t, principal.Known, "PermissionName", "enum")
	apitest.WantStrings(t, []string{principal.PermissionAll}, "Permissions", "oneOf", "1", "enum")
}
