package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// feedback gives feedback on conv_1 as the qa member, which must succeed.
func (f *convFixture) feedback(t *testing.T, key, value string) app.ConversationSummary {
	t.Helper()
	c, err := f.app.GiveFeedback(context.Background(), as(f.qa, key), "conv_1", app.FeedbackInput{Feedback: &value})
	if err != nil {
		t.Fatalf("feedback %s: %v", value, err)
	}
	return c
}

// assign attaches tags to conv_1 as the qa member, which must succeed.
func (f *convFixture) assign(t *testing.T, key string, tagIDs ...string) app.ConversationSummary {
	t.Helper()
	c, err := f.app.AssignTags(context.Background(), as(f.qa, key), "conv_1", app.AssignTagsInput{TagIDs: tagIDs})
	if err != nil {
		t.Fatalf("assign %v: %v", tagIDs, err)
	}
	return c
}

// Feedback is a like or a dislike, the later replacing the earlier; it is
// recorded with who gave it and when, and GET and the rating filters show
// it. Giving the same feedback again writes nothing.
func TestFeedbackIsLikeOrDislikeAndTheLastCounts(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	for _, bad := range []*string{nil, ptr(""), ptr("meh"), ptr("LIKE")} {
		_, err := f.app.GiveFeedback(ctx, as(f.qa, ""), "conv_1", app.FeedbackInput{Feedback: bad})
		wantKind(t, err, apperr.Invalid, fmt.Sprintf("feedback %v", bad))
	}
	if f.appended() != 0 {
		t.Fatalf("refused feedback appended %d events", f.appended())
	}
	if c := f.feedback(t, "", "like"); c.Feedback != "like" || c.ConversationID != "conv_1" || c.AgentID != "agent_1" {
		t.Fatalf("answered %+v", c)
	}
	an, _, err := f.app.Annotations.Get(ctx, "ws_a", "conv_1")
	if err != nil || an.Feedback != "like" || an.GetFeedbackUserId() != "user_qa" || an.FeedbackAtUnixSecs != f.clock.Unix() {
		t.Fatalf("recorded %+v %v", an, err)
	}
	f.feedback(t, "", "like")
	if f.appended() != 1 {
		t.Fatalf("the same feedback twice appended %d events", f.appended())
	}
	if ids, _ := f.list(t, app.ConversationParams{RatingMin: ptr(5)}); !slices.Equal(ids, []string{"conv_1"}) {
		t.Fatalf("rating_min 5 lists %v", ids)
	}
	f.feedback(t, "", "dislike")
	if got := f.detail(t, "conv_1"); got.Feedback != "dislike" || got.Rating() != 1 {
		t.Fatalf("GET after a dislike: %q rating %d", got.Feedback, got.Rating())
	}
	for _, p := range []app.ConversationParams{{RatingMin: ptr(2)}, {RatingMax: ptr(1)}} {
		ids, _ := f.list(t, p)
		if want := p.RatingMax != nil; slices.Contains(ids, "conv_1") != want {
			t.Fatalf("%+v lists %v", p, ids)
		}
	}
}

// Tags attach to a conversation once each (a tag given twice, or already
// there, is a no-op) and detach; GET and the tag filter show them.
func TestAssignAndUnassignTags(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	a, b := f.tag(t, "a").TagId, f.tag(t, "b").TagId
	events := f.appended()
	if c := f.assign(t, "", a, a, b); !slices.Equal(c.TagIDs, []string{a, b}) {
		t.Fatalf("assigned %v", c.TagIDs)
	}
	if c := f.assign(t, "", b, a); !slices.Equal(c.TagIDs, []string{a, b}) || f.appended() != events+1 {
		t.Fatalf("assigning them again: %v, %d events (was %d)", c.TagIDs, f.appended(), events)
	}
	if ids, _ := f.list(t, app.ConversationParams{TagIDs: []string{b}}); !slices.Equal(ids, []string{"conv_1"}) {
		t.Fatalf("tag_ids=b lists %v", ids)
	}
	for range 2 {
		if err := f.app.UnassignTag(ctx, as(f.qa, ""), "conv_1", a); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.detail(t, "conv_1").TagIDs; !slices.Equal(got, []string{b}) || f.appended() != events+2 {
		t.Fatalf("after unassigning a twice: %v, %d events (was %d)", got, f.appended(), events)
	}
	if ids, _ := f.list(t, app.ConversationParams{TagIDs: []string{a}}); len(ids) != 0 {
		t.Fatalf("tag_ids=a lists %v", ids)
	}
	wantKind(t, f.app.UnassignTag(ctx, as(f.qa, ""), "conv_1", "not an id!"), apperr.NotFound, "unassigning a malformed tag id")
}

// Assigning names 1 to 50 well-formed ids of live tags of the
// workspace; anything else is refused and writes nothing.
func TestAssignRefusals(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	tg := f.tag(t, "a").TagId
	many := make([]string, 51)
	for i := range many {
		many[i] = tg
	}
	for _, c := range []struct {
		what string
		ids  []string
		kind apperr.Kind
	}{
		{"no tag ids", nil, apperr.Invalid},
		{"51 tag ids", many, apperr.Invalid},
		{"a malformed tag id", []string{tg, "a/b"}, apperr.Invalid},
		{"an unknown tag", []string{tg, "ctag_unknown"}, apperr.NotFound},
	} {
		_, err := f.app.AssignTags(ctx, as(f.qa, ""), "conv_1", app.AssignTagsInput{TagIDs: c.ids})
		wantKind(t, err, c.kind, c.what)
	}
	if f.appended() != 1 {
		t.Fatalf("refused assignments appended %d events", f.appended()-1)
	}
}

// A conversation holds at most 50 tags: the 51st is refused and the 50
// stay; assigning one it holds still answers; a deleted tag frees its
// place.
func TestAConversationHoldsAtMost50Tags(t *testing.T) {
	f := newConvFixture(t)
	var ids []string
	for i := range 51 {
		ids = append(ids, f.tag(t, fmt.Sprint("tag ", i)).TagId)
	}
	f.assign(t, "", ids[:30]...)
	f.assign(t, "", ids[30:50]...)
	_, err := f.app.AssignTags(context.Background(), as(f.qa, ""), "conv_1", app.AssignTagsInput{TagIDs: ids[49:]})
	wantKind(t, err, apperr.Invalid, "a 51st tag")
	if c := f.assign(t, "", ids[0]); len(c.TagIDs) != 50 {
		t.Fatalf("holds %d tags", len(c.TagIDs))
	}
	if got := f.detail(t, "conv_1").TagIDs; !slices.Equal(got, ids[:50]) {
		t.Fatalf("GET shows %d tags", len(got))
	}
	// A deleted tag frees its place: the 51st fits once one is deleted.
	if err := f.app.DeleteTag(context.Background(), as(f.qa, ""), ids[7]); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Delete(slices.Clone(ids[:50]), 7, 8), ids[50])
	if c := f.assign(t, "", ids[50]); !slices.Equal(c.TagIDs, want) {
		t.Fatalf("after a tag's deletion the conversation holds %d tags, want the 49 others and the 51st", len(c.TagIDs))
	}
	if got := f.detail(t, "conv_1").TagIDs; !slices.Equal(got, want) {
		t.Fatalf("GET shows %d tags", len(got))
	}
}

// Only a conversation the platform told of, in the caller's workspace,
// takes feedback and tags: another workspace's, an unknown one, and one
// known only by annotations replayed before it are not found.
func TestAnnotatingNeedsASeenConversationOfTheWorkspace(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	tg := f.tag(t, "a").TagId
	_ = f.convs.Annotate(ctx, 1, annotations("ws_a", "conv_early", "like"))
	events := f.appended()
	for _, conv := range []string{"conv_9", "conv_unknown", "conv_early"} {
		_, err := f.app.GiveFeedback(ctx, as(f.qa, ""), conv, app.FeedbackInput{Feedback: ptr("like")})
		wantKind(t, err, apperr.NotFound, "feedback on "+conv)
		_, err = f.app.AssignTags(ctx, as(f.qa, ""), conv, app.AssignTagsInput{TagIDs: []string{tg}})
		wantKind(t, err, apperr.NotFound, "tags on "+conv)
		wantKind(t, f.app.UnassignTag(ctx, as(f.qa, ""), conv, tg), apperr.NotFound, "untagging "+conv)
	}
	if f.appended() != events {
		t.Fatalf("refused annotations appended %d events", f.appended()-events)
	}
}

// Feedback and tag commands repeated with their command id answer the
// first result and write nothing again, whatever the repeat's body says.
func TestKeyedAnnotationsApplyOnce(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	a, b := f.tag(t, "a").TagId, f.tag(t, "b").TagId
	events := f.appended()
	f.feedback(t, "key-feedback", "like")
	if c := f.feedback(t, "key-feedback", "dislike"); c.Feedback != "like" {
		t.Fatalf("a repeated feedback answered %q", c.Feedback)
	}
	f.assign(t, "key-assign", a)
	if c := f.assign(t, "key-assign", b); !slices.Equal(c.TagIDs, []string{a}) {
		t.Fatalf("a repeated assignment answered %v", c.TagIDs)
	}
	for range 2 {
		if err := f.app.UnassignTag(ctx, as(f.qa, "key-unassign"), "conv_1", a); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.detail(t, "conv_1"); got.Feedback != "like" || len(got.TagIDs) != 0 || f.appended() != events+3 {
		t.Fatalf("after three commands, each repeated: %q %v, %d events", got.Feedback, got.TagIDs, f.appended()-events)
	}
}

// A repeated assignment answers the first result even once a tag it
// attached was deleted, not that tag's 404, and writes nothing again.
func TestAKeyedAssignmentReplaysAfterItsTagIsDeleted(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	kept, gone := f.tag(t, "kept").TagId, f.tag(t, "gone").TagId
	first := f.assign(t, "key-assign", kept, gone)
	if err := f.app.DeleteTag(ctx, as(f.qa, ""), gone); err != nil {
		t.Fatal(err)
	}
	events := f.appended()
	if again := f.assign(t, "key-assign", kept, gone); !slices.Equal(again.TagIDs, first.TagIDs) || f.appended() != events {
		t.Fatalf("the replay answered %v (first %v) and wrote %d events", again.TagIDs, first.TagIDs, f.appended()-events)
	}
	_, err := f.app.AssignTags(ctx, as(f.qa, "key-other"), "conv_1", app.AssignTagsInput{TagIDs: []string{gone}})
	wantKind(t, err, apperr.NotFound, "a new assignment of the deleted tag")
}

// An Idempotency-Key is the workspace's for one operation: sent again for
// another conversation, it answers what its first request did and changes
// nothing on the second conversation, as every keyed write does.
func TestAKeyReusedOnAnotherConversationAnswersTheFirstResult(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	f.hear(call{ws: "ws_a", id: "conv_2", agent: "agent_1", start: 1_700_000_100, secs: 30})
	f.feedback(t, "key-feedback", "like")
	events := f.appended()
	dislike := "dislike"
	if _, err := f.app.GiveFeedback(ctx, as(f.qa, "key-feedback"), "conv_2", app.FeedbackInput{Feedback: &dislike}); err != nil {
		t.Fatalf("the key sent again for conv_2: %v, want the first result", err)
	}
	if f.appended() != events {
		t.Fatalf("the replay wrote %d events", f.appended()-events)
	}
	if got := f.detail(t, "conv_2"); got.Feedback != "" {
		t.Fatalf("conv_2 got feedback %q from a replayed key", got.Feedback)
	}
	if got := f.detail(t, "conv_1"); got.Feedback != "like" {
		t.Fatalf("conv_1 has feedback %q", got.Feedback)
	}
}
