package app

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	commonv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/common/v1"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/aggregate"
	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/cursor"
	"github.com/voiceai-platform/voiceai/pkg/esproto"
	"github.com/voiceai-platform/voiceai/pkg/eventlog"
	"github.com/voiceai-platform/voiceai/pkg/ids"
	"github.com/voiceai-platform/voiceai/pkg/principal"
)

// Tags is what the service knows of every live conversation tag, per
// workspace: few per workspace, so every replica keeps them in memory
// from stream TICKETS (and its own writes at once).
type Tags interface {
	// Put records t as of stream sequence seq (older or equal: ignored).
	Put(ctx context.Context, seq uint64, t *ticketsv1.ConversationTag) error
	// Tag is a live tag of the workspace.
	Tag(workspaceID, tagID string) (*ticketsv1.ConversationTag, bool)
	// Deleted reports whether the tag is known deleted: a tag another
	// replica created a moment ago is neither live here yet nor deleted.
	Deleted(workspaceID, tagID string) bool
	// TagPage is up to limit live tags of the workspace, newest first
	// (TagPosition order), strictly after the position after (nil: from
	// the newest).
	TagPage(workspaceID string, after *TagPosition, limit int) (page []*ticketsv1.ConversationTag, more bool)
}

// TagPosition is where a tag stands in its workspace's listing, newest
// first: by creation, then by id. Ids alone do not sort by creation: a
// tag created under an Idempotency-Key has an id derived from the key.
type TagPosition struct {
	CreatedAt int64  `json:"c"`
	ID        string `json:"i"`
}

// PositionOfTag is t's place in the listing.
func PositionOfTag(t *ticketsv1.ConversationTag) TagPosition {
	return TagPosition{CreatedAt: t.GetCreatedAtUnixSecs(), ID: t.GetTagId()}
}

// Compare orders positions newest first: negative when p lists before q.
func (p TagPosition) Compare(q TagPosition) int {
	if c := cmp.Compare(q.CreatedAt, p.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(q.ID, p.ID)
}

// maxTagsPerConversation bounds the tags on one conversation.
const maxTagsPerConversation = 50

// TagInput creates a tag (the SDK's CreateConversationTagRequestModel).
type TagInput struct {
	Title       string  `json:"title"`
	Description *string `json:"description"`
}

// TagPatch changes one (PatchConversationTagRequestModel): each field
// given replaces the tag's.
type TagPatch struct {
	Title       *string `json:"title"`
	Description *string `json:"description"`
}

// CreateTag creates a conversation tag of the caller's workspace.
func (a *App) CreateTag(ctx context.Context, caller principal.Caller, in TagInput) (*ticketsv1.ConversationTag, error) {
	now := a.Now()
	t := &ticketsv1.ConversationTag{
		TagId: ids.New("ctag"), WorkspaceId: caller.WorkspaceID, OwnerUserId: caller.UserID,
		Title: strings.TrimSpace(in.Title), Description: in.Description,
		CreatedAtUnixSecs: now.Unix(), UpdatedAtUnixSecs: now.Unix(),
	}
	if err := checkTitle(t.Title); err != nil {
		return nil, err
	}
	if caller.CommandID != "" {
		t.TagId = "ctag_" + esproto.StableID(caller.WorkspaceID, caller.CommandID)
	}
	meta := esproto.Meta(ctx, t.WorkspaceId, caller.CommandID, now)
	t, _, err := a.TagRepo.Create(ctx, t.WorkspaceId, t.TagId, meta, &ticketsv1.ConversationTagCreated{Meta: meta, Tag: t}, t)
	return t, err
}

func checkTitle(title string) error {
	var v apperr.Validator
	v.Check(title != "", "The title must not be blank", "value_error", "body", "title")
	return v.Err()
}

// GetTag is a live tag of the caller's workspace.
func (a *App) GetTag(ctx context.Context, workspaceID, tagID string) (*ticketsv1.ConversationTag, error) {
	t, _, err := a.TagRepo.Get(ctx, workspaceID, tagID)
	return t, err
}

// UpdateTag changes a tag's title or description.
func (a *App) UpdateTag(ctx context.Context, caller principal.Caller, tagID string, in TagPatch) (*ticketsv1.ConversationTag, error) {
	if in.Title != nil {
		if err := checkTitle(strings.TrimSpace(*in.Title)); err != nil {
			return nil, err
		}
	}
	return a.TagRepo.Update(ctx, caller.WorkspaceID, tagID, caller.CommandID, func(t *ticketsv1.ConversationTag, meta *commonv1.EventMeta) (proto.Message, error) {
		var changed []string
		if in.Title != nil && strings.TrimSpace(*in.Title) != t.Title {
			t.Title, changed = strings.TrimSpace(*in.Title), append(changed, "title")
		}
		if in.Description != nil && t.GetDescription() != *in.Description {
			t.Description, changed = in.Description, append(changed, "description")
		}
		if changed == nil {
			return nil, nil
		}
		return &ticketsv1.ConversationTagUpdated{Meta: meta, Tag: t, ChangedFields: changed}, nil
	})
}

// DeleteTag deletes a tag: conversations tagged with it stop showing it,
// and a listing filtered by it is a 404.
func (a *App) DeleteTag(ctx context.Context, caller principal.Caller, tagID string) error {
	now := a.Now().Unix()
	_, err := a.TagRepo.Update(ctx, caller.WorkspaceID, tagID, caller.CommandID, func(t *ticketsv1.ConversationTag, meta *commonv1.EventMeta) (proto.Message, error) {
		t.DeletedAtUnixSecs = &now
		return &ticketsv1.ConversationTagDeleted{Meta: meta, Tag: t}, nil
	})
	return err
}

// TagListParams are the tag listing's query parameters.
type TagListParams struct {
	PageSize int    `json:"page_size"`
	Cursor   string `json:"cursor"`
}

// TagPage is one page of tags.
type TagPage struct {
	Tags       []*ticketsv1.ConversationTag
	NextCursor *string
	HasMore    bool
}

// ListTags lists the workspace's tags, newest first.
func (a *App) ListTags(workspaceID string, p TagListParams) (TagPage, error) {
	limit := p.PageSize
	if limit == 0 {
		limit = 30
	}
	scope := cursor.Scope("conversation-tags", workspaceID)
	after, err := cursor.After[TagPosition](a.Cursors, scope, p.Cursor)
	if err != nil {
		return TagPage{}, err
	}
	rows, more := a.Tags.TagPage(workspaceID, after, limit)
	page := TagPage{Tags: rows, HasMore: more}
	if more {
		page.NextCursor, err = cursor.Next(a.Cursors, scope, PositionOfTag(rows[len(rows)-1]))
	}
	return page, err
}

// FeedbackInput is the SDK's ConversationFeedbackRequestModel.
type FeedbackInput struct {
	Feedback *string `json:"feedback"`
}

// GiveFeedback records a like or a dislike on a conversation of the
// caller's workspace (a later one replaces it), as an event on the
// conversation's annotations.
func (a *App) GiveFeedback(ctx context.Context, caller principal.Caller, conversationID string, in FeedbackInput) (ConversationSummary, error) {
	var v apperr.Validator
	v.Check(in.Feedback != nil && slices.Contains(FeedbackScores, *in.Feedback), "feedback must be like or dislike", "value_error", "body", "feedback")
	if err := v.Err(); err != nil {
		return ConversationSummary{}, err
	}
	now := a.Now().Unix()
	return a.annotate(ctx, caller, conversationID, func(an *ticketsv1.ConversationAnnotations, meta *commonv1.EventMeta) (proto.Message, error) {
		if an.Feedback == *in.Feedback {
			return nil, nil
		}
		an.Feedback, an.FeedbackAtUnixSecs = *in.Feedback, now
		if caller.UserID != "" {
			an.FeedbackUserId = &caller.UserID
		}
		return &ticketsv1.ConversationFeedbackGiven{Meta: meta, Annotations: an}, nil
	})
}

// AssignTagsInput is the SDK's AssignConversationTagsRequestModel.
type AssignTagsInput struct {
	TagIDs []string `json:"tag_ids"`
}

// AssignTags attaches tags of the workspace to a conversation; one
// already attached is a no-op, an unknown one a 404.
func (a *App) AssignTags(ctx context.Context, caller principal.Caller, conversationID string, in AssignTagsInput) (ConversationSummary, error) {
	var v apperr.Validator
	v.Check(len(in.TagIDs) > 0 && len(in.TagIDs) <= maxTagsPerConversation, "give 1 to 50 tag ids", "value_error", "body", "tag_ids")
	for i, id := range in.TagIDs {
		v.ID(id, "body", "tag_ids", i)
	}
	if err := v.Err(); err != nil {
		return ConversationSummary{}, err
	}
	// A replay answers what the first attempt left, though a tag it
	// attached was deleted since.
	if _, an, found, err := a.Annotations.Recorded(ctx, caller.WorkspaceID, conversationID, caller.CommandID); err != nil || found {
		if err != nil {
			return ConversationSummary{}, err
		}
		c, err := a.seenConversation(ctx, caller.WorkspaceID, conversationID)
		return c.Annotated(an), err
	}
	for _, id := range in.TagIDs {
		if _, err := a.GetTag(ctx, caller.WorkspaceID, id); err != nil {
			return ConversationSummary{}, err
		}
	}
	return a.annotate(ctx, caller, conversationID, func(an *ticketsv1.ConversationAnnotations, meta *commonv1.EventMeta) (proto.Message, error) {
		var added []string
		for _, id := range in.TagIDs {
			if !slices.Contains(an.TagIds, id) && !slices.Contains(added, id) {
				added = append(added, id)
			}
		}
		if len(added) == 0 {
			return nil, nil
		}
		// A deleted tag no longer shows on the conversation, nor takes a
		// place: it leaves the list with this change.
		an.TagIds = slices.DeleteFunc(an.TagIds, func(id string) bool { return a.Tags.Deleted(caller.WorkspaceID, id) })
		an.TagIds = append(an.TagIds, added...)
		if len(an.TagIds) > maxTagsPerConversation {
			var v apperr.Validator
			v.Add("a conversation holds at most 50 tags", "value_error", "body", "tag_ids")
			return nil, v.Err()
		}
		return &ticketsv1.ConversationTagsChanged{Meta: meta, Annotations: an, AddedTagIds: added}, nil
	})
}

// UnassignTag detaches a tag from a conversation; one not attached is a
// no-op.
func (a *App) UnassignTag(ctx context.Context, caller principal.Caller, conversationID, tagID string) error {
	if !ids.Valid(tagID) {
		return apperr.ConversationTagNotFound
	}
	_, err := a.annotate(ctx, caller, conversationID, func(an *ticketsv1.ConversationAnnotations, meta *commonv1.EventMeta) (proto.Message, error) {
		i := slices.Index(an.TagIds, tagID)
		if i < 0 {
			return nil, nil
		}
		an.TagIds = slices.Delete(an.TagIds, i, i+1)
		return &ticketsv1.ConversationTagsChanged{Meta: meta, Annotations: an, RemovedTagIds: []string{tagID}}, nil
	})
	return err
}

// annotate changes a seen conversation's annotations through their
// aggregate: created by the first change, updated after.
func (a *App) annotate(ctx context.Context, caller principal.Caller, conversationID string, m aggregate.Mutation[*ticketsv1.ConversationAnnotations]) (ConversationSummary, error) {
	c, err := a.seenConversation(ctx, caller.WorkspaceID, conversationID)
	if err != nil {
		return c, err
	}
	for range 3 {
		an, err := a.Annotations.Update(ctx, caller.WorkspaceID, conversationID, caller.CommandID, m)
		if errors.Is(err, apperr.ConversationUnknown) {
			fresh := &ticketsv1.ConversationAnnotations{WorkspaceId: caller.WorkspaceID, ConversationId: conversationID}
			meta := esproto.Meta(ctx, caller.WorkspaceID, caller.CommandID, a.Now())
			var ev proto.Message
			if ev, err = m(fresh, meta); err != nil || ev == nil {
				return c, err
			}
			fresh.UpdatedAtUnixSecs = a.Now().Unix()
			an, _, err = a.Annotations.Create(ctx, caller.WorkspaceID, conversationID, meta, ev, fresh)
			if errors.Is(err, eventlog.ErrConflict) {
				continue // another writer made them first: update theirs
			}
		}
		if err != nil {
			return c, err
		}
		return c.Annotated(an), nil
	}
	return c, apperr.ConcurrentUpdate
}
