package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// A tag's title is trimmed; a blank one is refused, on create and on
// update, and a refused update leaves the tag as it was.
func TestTagTitleIsTrimmedAndRequired(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	for _, blank := range []string{"", "  \t "} {
		_, err := f.app.CreateTag(ctx, as(f.qa, ""), app.TagInput{Title: blank})
		wantKind(t, err, apperr.Invalid, "creating a tag titled "+blank)
	}
	if n := f.appended(); n != 0 {
		t.Fatalf("refused creates appended %d events", n)
	}
	tg, err := f.app.CreateTag(ctx, as(f.qa, ""), app.TagInput{Title: "  Refund  ", Description: ptr("asked for money")})
	if err != nil || tg.Title != "Refund" || tg.GetDescription() != "asked for money" || tg.OwnerUserId != "user_qa" ||
		tg.WorkspaceId != "ws_a" || tg.CreatedAtUnixSecs != f.clock.Unix() {
		t.Fatalf("created %+v %v", tg, err)
	}
	_, err = f.app.UpdateTag(ctx, as(f.qa, ""), tg.TagId, app.TagPatch{Title: ptr(" "), Description: ptr("other")})
	wantKind(t, err, apperr.Invalid, "blanking a tag's title")

	f.clock = f.clock.Add(time.Minute)
	got, err := f.app.UpdateTag(ctx, as(f.qa, ""), tg.TagId, app.TagPatch{Title: ptr(" Refunds ")})
	if err != nil || got.Title != "Refunds" || got.GetDescription() != "asked for money" || got.UpdatedAtUnixSecs != f.clock.Unix() {
		t.Fatalf("updated %+v %v", got, err)
	}
	// A patch changing nothing (the title as trimmed) appends nothing.
	before := f.appended()
	if _, err := f.app.UpdateTag(ctx, as(f.qa, ""), tg.TagId, app.TagPatch{Title: ptr("Refunds  "), Description: ptr("asked for money")}); err != nil {
		t.Fatal(err)
	}
	stored, err := f.app.GetTag(ctx, "ws_a", tg.TagId)
	if err != nil || stored.Title != "Refunds" || f.appended() != before {
		t.Fatalf("after a no-op patch: %+v %v, %d events (was %d)", stored, err, f.appended(), before)
	}
}

// Another workspace's tag is not found by any operation, and stays as it
// was.
func TestAnotherWorkspacesTagIsNotFound(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	tg := f.tag(t, "mine")
	f.hear(call{ws: "ws_b", id: "conv_b", agent: "agent_9", start: 1_700_000_100})
	for what, op := range map[string]func() error{
		"get": func() error { _, err := f.app.GetTag(ctx, "ws_b", tg.TagId); return err },
		"update": func() error {
			_, err := f.app.UpdateTag(ctx, as(f.other, ""), tg.TagId, app.TagPatch{Title: ptr("theirs")})
			return err
		},
		"delete": func() error { return f.app.DeleteTag(ctx, as(f.other, ""), tg.TagId) },
		"assign": func() error {
			_, err := f.app.AssignTags(ctx, as(f.other, ""), "conv_b", app.AssignTagsInput{TagIDs: []string{tg.TagId}})
			return err
		},
		"filter": func() error {
			_, err := f.app.ListConversations(ctx, "ws_b", app.ConversationParams{TagIDs: []string{tg.TagId}})
			return err
		},
	} {
		wantKind(t, op(), apperr.NotFound, what+" of another workspace's tag")
	}
	if got, err := f.app.GetTag(ctx, "ws_a", tg.TagId); err != nil || got.Title != "mine" {
		t.Fatalf("the tag after another workspace's writes: %+v %v", got, err)
	}
	if page, _ := f.app.ListTags("ws_b", app.TagListParams{}); len(page.Tags) != 0 {
		t.Fatalf("ws_b lists ws_a's tags: %v", page.Tags)
	}
}

// A deleted tag is gone: not found, not listed, not assignable, no
// filter, and the conversations tagged with it stop showing it.
func TestDeletedTagIsGoneEverywhere(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	doomed, kept := f.tag(t, "doomed"), f.tag(t, "kept")
	if _, err := f.app.AssignTags(ctx, as(f.qa, ""), "conv_1", app.AssignTagsInput{TagIDs: []string{doomed.TagId, kept.TagId}}); err != nil {
		t.Fatal(err)
	}
	if err := f.app.DeleteTag(ctx, as(f.qa, ""), doomed.TagId); err != nil {
		t.Fatal(err)
	}
	_, err := f.app.GetTag(ctx, "ws_a", doomed.TagId)
	wantKind(t, err, apperr.NotFound, "getting a deleted tag")
	_, err = f.app.UpdateTag(ctx, as(f.qa, ""), doomed.TagId, app.TagPatch{Title: ptr("back")})
	wantKind(t, err, apperr.NotFound, "updating a deleted tag")
	wantKind(t, f.app.DeleteTag(ctx, as(f.qa, ""), doomed.TagId), apperr.NotFound, "deleting a deleted tag")
	_, err = f.app.AssignTags(ctx, as(f.qa, ""), "conv_1", app.AssignTagsInput{TagIDs: []string{doomed.TagId}})
	wantKind(t, err, apperr.NotFound, "assigning a deleted tag")
	_, err = f.app.ListConversations(ctx, "ws_a", app.ConversationParams{TagIDs: []string{doomed.TagId}})
	wantKind(t, err, apperr.NotFound, "filtering by a deleted tag")

	if page, _ := f.app.ListTags("ws_a", app.TagListParams{}); len(page.Tags) != 1 || page.Tags[0].TagId != kept.TagId {
		t.Fatalf("listed after the delete: %v", page.Tags)
	}
	if got := f.detail(t, "conv_1").TagIDs; !slices.Equal(got, []string{kept.TagId}) {
		t.Fatalf("GET shows tags %v", got)
	}
	if _, page := f.list(t, app.ConversationParams{}); !slices.Equal(page.Conversations[0].TagIDs, []string{kept.TagId}) {
		t.Fatalf("the listing shows tags %v", page.Conversations[0].TagIDs)
	}
}

// Tags list newest first, in pages whose cursors are the workspace's.
func TestTagListingIsNewestFirstInPages(t *testing.T) {
	f := newConvFixture(t)
	var want []string
	for i, title := range []string{"a", "b", "c", "d", "e"} {
		f.clock = f.clock.Add(time.Second)
		key := "" // b and d made under an Idempotency-Key: ids from the key, not in creation order
		if i%2 == 1 {
			key = "key-" + title
		}
		tg, err := f.app.CreateTag(context.Background(), as(f.qa, key), app.TagInput{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		want = slices.Insert(want, 0, tg.Title)
	}
	if page, err := f.app.ListTags("ws_a", app.TagListParams{}); err != nil || len(page.Tags) != 5 || page.HasMore || page.NextCursor != nil {
		t.Fatalf("a listing with the default page size: %d tags, more %v, %v", len(page.Tags), page.HasMore, err)
	}
	var got []string
	cursor, pages := "", 0
	for {
		page, err := f.app.ListTags("ws_a", app.TagListParams{PageSize: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, tg := range page.Tags {
			got = append(got, tg.Title)
		}
		if !page.HasMore {
			break
		}
		if pages == 1 {
			_, err := f.app.ListTags("ws_b", app.TagListParams{PageSize: 2, Cursor: *page.NextCursor})
			wantKind(t, err, apperr.Invalid, "another workspace's cursor")
		}
		cursor = *page.NextCursor
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("paged %v in %d pages, want %v in 3", got, pages, want)
	}
}

// A tag command repeated with its command id answers the first result
// and writes nothing again, whatever the repeat's body says.
func TestKeyedTagCommandsApplyOnce(t *testing.T) {
	f := newConvFixture(t)
	ctx := context.Background()
	var created []*ticketsv1.ConversationTag
	for _, title := range []string{"first", "second"} {
		tg, err := f.app.CreateTag(ctx, as(f.qa, "key-create"), app.TagInput{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, tg)
	}
	if created[1].TagId != created[0].TagId || created[1].Title != "first" || f.appended() != 1 {
		t.Fatalf("a repeated create: %+v, %d events", created[1], f.appended())
	}
	id := created[0].TagId
	for _, title := range []string{"renamed", "renamed again"} {
		got, err := f.app.UpdateTag(ctx, as(f.qa, "key-update"), id, app.TagPatch{Title: &title})
		if err != nil || got.Title != "renamed" {
			t.Fatalf("a repeated update: %+v %v", got, err)
		}
	}
	for range 2 {
		if err := f.app.DeleteTag(ctx, as(f.qa, "key-delete"), id); err != nil {
			t.Fatalf("a repeated delete: %v", err)
		}
	}
	if f.appended() != 3 {
		t.Fatalf("create, update and delete, each repeated, appended %d events", f.appended())
	}
}
