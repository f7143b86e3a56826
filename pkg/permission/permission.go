// Package permission is the vocabulary of API-key permissions, with no
// dependencies, so domain packages can reason about permissions without
// linking the HTTP plumbing that carries a caller (package principal).
package permission

import "slices"

// All grants every permission.
const All = "all"

// Known are the permission names this platform knows (the public
// service-account names).
var Known = []string{
	"convai_read", "convai_write", "webhooks_write", "service_account_write",
	"create_user_api_key", "workspace_read", "workspace_write",
	"workspace_members_read", "workspace_members_invite", "workspace_members_remove",
	"audit_log_read", "user_read", "user_write",
}

// IsKnown reports whether p is a permission name this platform knows.
func IsKnown(p string) bool { return slices.Contains(Known, p) }
