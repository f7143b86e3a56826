package app

import (
	"cmp"
	"context"
	"encoding/hex"
	"strings"

	"google.golang.org/protobuf/proto"

	events "github.com/voiceai-platform/voiceai/proto-events"
	identityv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/identity/v1"
)

// ReadModel is what identity's listings read: a workspace's service
// accounts, members and live API keys, each oldest first (creation time,
// then id). Implementations (in memory, MongoDB) pass one conformance
// suite (readmodeltest).
type ReadModel interface {
	// Put records doc as of stream sequence seq; a sequence older than or
	// equal to the document's is ignored, so redelivery and reordering
	// converge.
	Put(ctx context.Context, seq uint64, doc Doc) error
	// ListAccounts returns a workspace's service accounts.
	ListAccounts(ctx context.Context, workspaceID string) ([]AccountDoc, error)
	// ListKeys returns the keys of a workspace, or of one of its accounts
	// when accountID is set, that are not revoked.
	ListKeys(ctx context.Context, workspaceID, accountID string) ([]KeyDoc, error)
	// ListUsers returns a workspace's members (people).
	ListUsers(ctx context.Context, workspaceID string) ([]UserDoc, error)
	// Count returns how many documents one of a workspace's listings
	// holds, without reading them: what a workspace's bounds compare.
	Count(ctx context.Context, workspaceID string, l Listing) (int, error)
}

// Listing names one of a workspace's listings, for Count.
type Listing int

const (
	Accounts Listing = iota + 1 // service accounts
	LiveKeys                    // keys not revoked, whatever account holds them
	Members                     // members (people)
)

// Doc is a listed document: an AccountDoc, KeyDoc or UserDoc.
type Doc interface {
	// Position is where the document stands in its listings.
	Position() Position
}

// Position orders a workspace's listings: ascending creation time (the
// second, then the nanosecond: 0 for what was made before it was kept),
// then id. All are fixed at creation.
type Position struct {
	WorkspaceID  string
	Created      int64
	CreatedNanos int64
	ID           string
}

// Compare orders positions of one workspace.
func (p Position) Compare(o Position) int {
	return cmp.Or(cmp.Compare(p.Created, o.Created), cmp.Compare(p.CreatedNanos, o.CreatedNanos), strings.Compare(p.ID, o.ID))
}

// The documents are also the stored form of the MongoDB read model,
// hence their bson names.

// AccountDoc is a service account as listed. Its id is unique only
// within its workspace: every workspace has domain.AdminAccountID.
type AccountDoc struct {
	ID            string `bson:"user_id"`
	WorkspaceID   string `bson:"workspace_id"`
	Name          string `bson:"name"`
	Email         string `bson:"email"`
	CreatedAtUnix int64  `bson:"created_at_unix"`
	CreatedNanos  int64  `bson:"created_at_unix_nanos"`
}

// UserDoc is a workspace member (a person) as listed.
type UserDoc struct {
	ID            string `bson:"_id"`
	WorkspaceID   string `bson:"workspace_id"`
	Email         string `bson:"email"`
	FirstName     string `bson:"first_name"`
	Role          string `bson:"role"`
	CreatedAtUnix int64  `bson:"created_at_unix"`
	CreatedNanos  int64  `bson:"created_at_unix_nanos"`
	Locked        bool   `bson:"locked"`
	Owner         bool   `bson:"owner"`
}

// KeyDoc is an API key as listed: never the secret, only its hash.
type KeyDoc struct {
	ID                   string   `bson:"_id"`
	WorkspaceID          string   `bson:"workspace_id"`
	ServiceAccountUserID string   `bson:"service_account_user_id"`
	Name                 string   `bson:"name"`
	Hint                 string   `bson:"hint"`
	HashedKey            string   `bson:"hashed_key"`
	Permissions          []string `bson:"permissions"`
	AllowedIPs           []string `bson:"allowed_ips"`
	ExpiresAtUnix        *int64   `bson:"expires_at_unix"`
	IsDisabled           bool     `bson:"is_disabled"`
	Revoked              bool     `bson:"revoked"`
	CreatedAtUnix        int64    `bson:"created_at_unix"`
	CreatedNanos         int64    `bson:"created_at_unix_nanos"`
	RateLimitPerMinute   *int64   `bson:"rate_limit_per_minute"`
	RateLimitPerHour     *int64   `bson:"rate_limit_per_hour"`
}

// Position of an account.
func (d AccountDoc) Position() Position {
	return Position{d.WorkspaceID, d.CreatedAtUnix, d.CreatedNanos, d.ID}
}

// Position of a member.
func (d UserDoc) Position() Position {
	return Position{d.WorkspaceID, d.CreatedAtUnix, d.CreatedNanos, d.ID}
}

// Position of a key.
func (d KeyDoc) Position() Position {
	return Position{d.WorkspaceID, d.CreatedAtUnix, d.CreatedNanos, d.ID}
}

// KeyDocOf maps key state to its listed form.
func KeyDocOf(k *identityv1.ApiKey) KeyDoc {
	return KeyDoc{
		ID: k.GetKeyId(), WorkspaceID: k.GetWorkspaceId(), ServiceAccountUserID: k.GetServiceAccountUserId(),
		Name: k.GetName(), Hint: k.GetHint(), HashedKey: hex.EncodeToString(k.GetSecretSha256()),
		Permissions: k.GetPermissions(), AllowedIPs: k.GetAllowedIps(), ExpiresAtUnix: k.ExpiresAtUnix,
		IsDisabled: k.GetIsDisabled(), Revoked: k.RevokedAtUnix != nil, CreatedAtUnix: k.GetCreatedAtUnix(), CreatedNanos: k.GetCreatedAtUnixNanos(),
		RateLimitPerMinute: k.RateLimitPerMinute, RateLimitPerHour: k.RateLimitPerHour,
	}
}

// AccountDocOf maps account state to its listed form.
func AccountDocOf(a *identityv1.ServiceAccount) AccountDoc {
	return AccountDoc{ID: a.GetUserId(), WorkspaceID: a.GetWorkspaceId(), Name: a.GetName(), Email: a.GetEmail(),
		CreatedAtUnix: a.GetCreatedAtUnix(), CreatedNanos: a.GetCreatedAtUnixNanos()}
}

// UserDocOf maps member state to its listed form.
func UserDocOf(u *identityv1.User) UserDoc {
	return UserDoc{ID: u.GetUserId(), WorkspaceID: u.GetWorkspaceId(), Email: u.GetEmail(), FirstName: u.GetFirstName(), Role: u.GetRole(),
		CreatedAtUnix: u.GetCreatedAtUnix(), CreatedNanos: u.GetCreatedAtUnixNanos(), Locked: u.GetLocked(), Owner: u.GetOwner()}
}

// DocOf is the listed state an identity event carries, or nil for events
// no listing shows (workspaces).
func DocOf(msg proto.Message) Doc {
	if k, ok := events.StateOf[*identityv1.ApiKey](msg); ok {
		return KeyDocOf(k)
	}
	if a, ok := events.StateOf[*identityv1.ServiceAccount](msg); ok {
		return AccountDocOf(a)
	}
	if u, ok := events.StateOf[*identityv1.User](msg); ok {
		return UserDocOf(u)
	}
	return nil
}
