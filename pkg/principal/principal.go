// Package principal carries the authenticated caller from the gateway to
// the services. The gateway resolves the API key and forwards who the
// caller is in Voiceai-* headers over NATS; services trust those headers
// because only the gateway reaches them, and the gateway strips any
// Voiceai-* header a client sends. The middleware that reads them into a
// request's context is the edge's (httpx.WithPrincipal): this package
// holds the types and the context key, and links no HTTP toolkit.
package principal

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/permission"
)

// Header names used between gateway and services.
const (
	HeaderWorkspace   = "Voiceai-Workspace-Id"
	HeaderUser        = "Voiceai-User-Id"
	HeaderUserEmail   = "Voiceai-User-Email"
	HeaderUserName    = "Voiceai-User-Name"
	HeaderKey         = "Voiceai-Key-Id"
	HeaderPermissions = "Voiceai-Permissions"
	internalPrefix    = "Voiceai-"
)

// PermissionAll grants every permission.
const PermissionAll = permission.All

// Known permission names (the public service-account names).
var Known = permission.Known

// IsKnown reports whether p is a permission name this platform knows.
func IsKnown(p string) bool { return permission.IsKnown(p) }

// Principal is an authenticated caller: an API key of a service account.
type Principal struct {
	WorkspaceID string
	UserID      string
	Email       string
	Name        string
	KeyID       string
	Permissions []string
}

// Caller is who sends a command, and the command's id: what every use
// case that writes takes. CommandID is derived from the request's
// Idempotency-Key ("" without one); a use case that sees it again answers
// the first result.
type Caller struct {
	Principal
	CommandID string
}

// In is a caller acting in a workspace for the platform itself (an
// operator's command, a worker): no user, no key, no command id.
func In(workspaceID string) Caller {
	return Caller{Principal: Principal{WorkspaceID: workspaceID}}
}

// Has reports whether the caller holds perm (or "all").
func (p Principal) Has(perm string) bool {
	return slices.Contains(p.Permissions, PermissionAll) || slices.Contains(p.Permissions, perm)
}

// HasAny reports whether the caller holds any of perms.
func (p Principal) HasAny(perms ...string) bool {
	return slices.ContainsFunc(perms, p.Has)
}

// IsAdmin reports whether the caller administers its workspace.
func (p Principal) IsAdmin() bool { return p.HasAny("workspace_write") }

// SetHeaders writes p into h, for forwarding. The gateway does it for
// every request: the six values share one slice.
func (p Principal) SetHeaders(h http.Header) {
	vals := []string{p.WorkspaceID, p.UserID, p.Email, p.Name, p.KeyID, strings.Join(p.Permissions, ",")}
	for i, k := range [...]string{HeaderWorkspace, HeaderUser, HeaderUserEmail, HeaderUserName, HeaderKey, HeaderPermissions} {
		h[k] = vals[i : i+1 : i+1]
	}
}

// FromHeaders reads a principal forwarded by the gateway.
//
// Its values are copied: a request that came over NATS has every header
// value as part of one string holding its whole header block, and a
// caller's id ends up kept (a ticket's owner, in a read model held in
// memory): that would keep the request's every header with it, about
// 600 bytes a ticket.
func FromHeaders(h http.Header) (Principal, bool) {
	p := Principal{
		WorkspaceID: strings.Clone(h.Get(HeaderWorkspace)),
		UserID:      strings.Clone(h.Get(HeaderUser)),
		Email:       strings.Clone(h.Get(HeaderUserEmail)),
		Name:        strings.Clone(h.Get(HeaderUserName)),
		KeyID:       strings.Clone(h.Get(HeaderKey)),
	}
	if perms := h.Get(HeaderPermissions); perms != "" {
		p.Permissions = strings.Split(strings.Clone(perms), ",")
	}
	return p, p.WorkspaceID != "" && p.UserID != ""
}

// StripInternalHeaders removes every Voiceai-* header, so a client cannot
// impersonate anyone by sending them.
func StripInternalHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), internalPrefix) {
			delete(h, k)
		}
	}
}

type ctxKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// From returns the principal in ctx.
func From(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// Of is the caller of r, as httpx.WithPrincipal put it in its context (the zero
// principal for none).
func Of(r *http.Request) Principal {
	p, _ := From(r.Context())
	return p
}

// Require answers 403 unless the caller in ctx holds one of perms.
func Require(r *http.Request, perms ...string) error {
	p, _ := From(r.Context())
	if !p.HasAny(perms...) {
		return apperr.MissingPermission(perms...)
	}
	return nil
}
