package app

import (
	"context"
	"errors"
	"net/mail"
	"strings"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"

	events "github.com/voiceai-platform/voiceai/proto-events"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// Member roles.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// MaxEmailLen bounds an e-mail address: RFC 5321 bounds a path to 254
// characters. The API schema (MemberAdd) says it too; the operator's
// create-workspace command adds its owner here without passing the edge.
const MaxEmailLen = 254

// NewMember is a person to make a member of a workspace.
type NewMember struct {
	Email, FirstName string
	Role             string // RoleAdmin or RoleMember ("": RoleMember)
	Owner            bool   // the workspace's owner, whom its operator created it for
}

// AddUser makes a person a member of the workspace. The user id derives
// from the e-mail address, so one address is one member: adding it again
// is a 409, unless it is a replay of the command that added it (the same
// command id, an Idempotency-Key), answered with the member it added. The
// role and the first name are checked at the edge, against the schema
// (MemberInvite); the address is parsed here, which no schema can say.
func (a *App) AddUser(ctx context.Context, caller principal.Caller, m NewMember) (*identityv1.User, error) {
	workspaceID, commandID := caller.WorkspaceID, caller.CommandID
	userID, normalized, err := memberOf(workspaceID, m.Email)
	if err != nil {
		return nil, err
	}
	role := m.Role
	if role == "" {
		role = RoleMember
	}
	if role == RoleAdmin && caller.KeyID != "" && !caller.IsAdmin() {
		// Seating an admin is the seat change POST /v1/workspace/members
		// makes, which needs workspace_write: inviting one is no way round.
		return nil, apperr.MissingPermission("workspace_write")
	}
	now := a.Now()
	u := &identityv1.User{
		UserId: userID, WorkspaceId: workspaceID, Email: normalized, FirstName: strings.TrimSpace(m.FirstName), Role: role,
		CreatedAtUnix: now.Unix(), CreatedAtUnixNanos: now.UnixNano(), Owner: m.Owner,
	}
	subject, err := events.UserSubject(workspaceID, u.UserId)
	if err != nil {
		return nil, err
	}
	if err := a.checkMemberRoom(ctx, workspaceID, subject); err != nil {
		return nil, err
	}
	meta := esproto.Meta(ctx, workspaceID, commandID, a.Now())
	res, err := a.record(ctx, subject, 0, meta, &identityv1.UserAdded{Meta: meta, User: u})
	if errors.Is(err, eventlog.ErrConflict) {
		return nil, apperr.MemberExists
	}
	if err != nil {
		return nil, err
	}
	if res.Duplicate {
		return a.addedUser(ctx, res.Seq)
	}
	return u, nil
}

// memberOf is the user id of the member with e-mail address email, and
// the address as kept (lower case): 422 at body.email for what is not an
// address.
func memberOf(workspaceID, email string) (userID, normalized string, err error) {
	addr, err := mail.ParseAddress(strings.TrimSpace(email))
	if len(email) > MaxEmailLen || err != nil || addr.Name != "" {
		return "", "", apperr.ValidationErrors{{Loc: []any{"body", "email"}, Msg: "Input should be a valid e-mail address of at most 254 characters", Type: "value_error"}}
	}
	normalized = strings.ToLower(addr.Address)
	return "user_" + esproto.StableID(workspaceID, normalized), normalized, nil
}

// MemberChange is what UpdateUser changes of a member; nil leaves a field
// as it is.
type MemberChange struct {
	Role   *string // RoleAdmin or RoleMember
	Locked *bool
}

// UpdateUser changes the seat (role) and the lock of the member with
// e-mail address email: 404 member_not_found for an address that is no
// member. A change that changes nothing stores nothing.
func (a *App) UpdateUser(ctx context.Context, caller principal.Caller, email string, change MemberChange) (*identityv1.User, error) {
	userID, _, err := memberOf(caller.WorkspaceID, email)
	if err != nil {
		return nil, err
	}
	return a.users().Update(ctx, caller.WorkspaceID, userID, caller.CommandID, func(next *identityv1.User, meta *commonv1.EventMeta) (proto.Message, error) {
		var changed []string
		if change.Role != nil && *change.Role != next.Role {
			next.Role, changed = *change.Role, append(changed, "role")
		}
		if change.Locked != nil && *change.Locked != next.Locked {
			next.Locked, changed = *change.Locked, append(changed, "locked")
		}
		if len(changed) == 0 {
			return nil, nil
		}
		return &identityv1.UserUpdated{Meta: meta, User: next, ChangedFields: changed}, nil
	})
}

// users is the repository of members, one subject each.
func (a *App) users() *aggregate.Repo[*identityv1.User] {
	return &aggregate.Repo[*identityv1.User]{
		Env:     a.env(),
		Subject: events.UserSubject,
		Project: func(ctx context.Context, seq uint64, u *identityv1.User) error {
			return a.ReadModel.Put(ctx, seq, UserDocOf(u))
		},
		NotFound: apperr.MemberNotFound,
	}
}

// checkMemberRoom refuses a new member in a workspace that has
// Limits.Members. A member already there (its subject has an event) goes
// on, to be answered as before (409 member_exists, or the replay of the
// keyed add that added it).
func (a *App) checkMemberRoom(ctx context.Context, workspaceID, subject string) error {
	return a.checkRoom(ctx, workspaceID, bound{Members, a.Limits.Members, "members", raiseIt}, func() (bool, error) {
		_, found, err := a.Store.Last(ctx, subject)
		return found, err
	})
}

// addedUser is the member a command's first attempt added at seq, put in
// the read model again: that attempt may have died before.
func (a *App) addedUser(ctx context.Context, seq uint64) (*identityv1.User, error) {
	msg, err := esproto.At(ctx, a.Store, seq)
	if err != nil {
		return nil, err
	}
	ev, ok := msg.(*identityv1.UserAdded)
	if !ok {
		return nil, apperr.MemberExists // the key's first use was not this
	}
	if err := a.ReadModel.Put(ctx, seq, UserDocOf(ev.GetUser())); err != nil {
		a.Log.WarnContext(ctx, "inline read-model write failed; the stream will catch it up", "user_id", ev.GetUser().GetUserId(), "err", err)
	}
	return ev.GetUser(), nil
}
