package app

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"unicode/utf8"

	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventstore"
)

// Member roles.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// AddUser makes a person a member of the workspace. The user id derives
// from the e-mail address, so one address is one member: adding it again
// is a 409.
func (a *App) AddUser(ctx context.Context, workspaceID, email, firstName, role string) (*identityv1.User, error) {
	var v apperr.Validator
	addr, err := mail.ParseAddress(strings.TrimSpace(email))
	// RFC 5321 bounds a path to 254 characters.
	v.Check(len(email) <= 254 && err == nil && addr.Name == "", "Input should be a valid e-mail address of at most 254 characters", "value_error", "body", "email")
	if role == "" {
		role = RoleMember
	}
	v.Check(role == RoleAdmin || role == RoleMember, "Input should be 'admin' or 'member'", "enum", "body", "role")
	v.Check(utf8.RuneCountInString(firstName) <= 200, "String should have at most 200 characters", "string_too_long", "body", "first_name")
	if err := v.Err(); err != nil {
		return nil, err
	}
	normalized := strings.ToLower(addr.Address)
	u := &identityv1.User{
		UserId: "user_" + esproto.StableID(workspaceID, normalized), WorkspaceId: workspaceID,
		Email: normalized, FirstName: strings.TrimSpace(firstName), Role: role, CreatedAtUnix: a.now().Unix(),
	}
	subject, err := events.UserSubject(workspaceID, u.UserId)
	if err != nil {
		return nil, err
	}
	meta := esproto.Meta(ctx, workspaceID, "", a.now())
	if _, err := a.record(ctx, subject, 0, meta, &identityv1.UserAdded{Meta: meta, User: u}); errors.Is(err, eventstore.ErrConflict) {
		return nil, apperr.ConflictError("member_exists", "A member with that e-mail address already belongs to this workspace.")
	} else if err != nil {
		return nil, err
	}
	return u, nil
}
