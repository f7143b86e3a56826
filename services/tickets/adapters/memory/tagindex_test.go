package memory

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/app"
)

// Tags page newest first from the cursor, by creation whatever their
// ids (a tag made under an Idempotency-Key has an id derived from the
// key); a deleted one leaves, a stale redelivery changes nothing, and
// another workspace's never shows.
func TestTagIndexPages(t *testing.T) {
	x, ctx := NewTagIndex(), context.Background()
	// Created one a second, ids out of creation order; ctag_3 and ctag_6
	// in the same second.
	for i, tc := range []struct {
		id      string
		created int64
	}{{"ctag_5", 100}, {"ctag_0", 101}, {"ctag_3", 102}, {"ctag_6", 102}, {"ctag_2", 103}, {"ctag_1", 104}} {
		_ = x.Put(ctx, uint64(i+1), &ticketsv1.ConversationTag{TagId: tc.id, WorkspaceId: "ws_1", Title: "t", CreatedAtUnixSecs: tc.created})
	}
	_ = x.Put(ctx, 7, &ticketsv1.ConversationTag{TagId: "ctag_9", WorkspaceId: "ws_2", Title: "other", CreatedAtUnixSecs: 200})
	gone := int64(1)
	_ = x.Put(ctx, 8, &ticketsv1.ConversationTag{TagId: "ctag_2", WorkspaceId: "ws_1", CreatedAtUnixSecs: 103, DeletedAtUnixSecs: &gone})
	_ = x.Put(ctx, 5, &ticketsv1.ConversationTag{TagId: "ctag_2", WorkspaceId: "ws_1", Title: "stale", CreatedAtUnixSecs: 103})
	var got []string
	var after *app.TagPosition
	for {
		page, more := x.TagPage("ws_1", after, 2)
		for _, tg := range page {
			got = append(got, tg.TagId)
		}
		if !more {
			break
		}
		last := app.PositionOfTag(page[len(page)-1])
		after = &last
	}
	if fmt.Sprint(got) != "[ctag_1 ctag_6 ctag_3 ctag_0 ctag_5]" {
		t.Fatalf("pages %v", got)
	}
	if _, ok := x.Tag("ws_1", "ctag_9"); ok {
		t.Fatal("another workspace's tag is found")
	}
}

// A tag this replica has not heard of is not deleted (another replica
// may have made it a moment ago); one it saw deleted is, in its own
// workspace only.
func TestTagIndexKnowsDeletedFromUnheardOf(t *testing.T) {
	x := NewTagIndex()
	ctx := context.Background()
	if x.Deleted("ws_a", "ctag_new") {
		t.Fatal("a tag not heard of reads as deleted")
	}
	live := &ticketsv1.ConversationTag{TagId: "ctag_1", WorkspaceId: "ws_a", Title: "Refund"}
	_ = x.Put(ctx, 1, live)
	if x.Deleted("ws_a", "ctag_1") {
		t.Fatal("a live tag reads as deleted")
	}
	gone := proto.Clone(live).(*ticketsv1.ConversationTag)
	at := int64(5)
	gone.DeletedAtUnixSecs = &at
	_ = x.Put(ctx, 2, gone)
	if !x.Deleted("ws_a", "ctag_1") || x.Deleted("ws_b", "ctag_1") {
		t.Fatal("the deleted tag is not known deleted in its workspace only")
	}
}
