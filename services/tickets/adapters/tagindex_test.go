package adapters

import (
	"context"
	"fmt"
	"testing"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
	"google.golang.org/protobuf/proto"
)

// Tags page newest first from the cursor; a deleted one leaves, a stale
// redelivery changes nothing, and another workspace's never shows.
func TestTagIndexPages(t *testing.T) {
	x, ctx := NewTagIndex(), context.Background()
	for i := range 5 {
		_ = x.Put(ctx, uint64(i+1), &ticketsv1.ConversationTag{TagId: fmt.Sprintf("ctag_%d", i), WorkspaceId: "ws_1", Title: "t"})
	}
	_ = x.Put(ctx, 6, &ticketsv1.ConversationTag{TagId: "ctag_9", WorkspaceId: "ws_2", Title: "other"})
	gone := int64(1)
	_ = x.Put(ctx, 7, &ticketsv1.ConversationTag{TagId: "ctag_2", WorkspaceId: "ws_1", DeletedAtUnixSecs: &gone})
	_ = x.Put(ctx, 3, &ticketsv1.ConversationTag{TagId: "ctag_2", WorkspaceId: "ws_1", Title: "stale"})
	var got []string
	after := ""
	for {
		page, more := x.TagPage("ws_1", after, 2)
		for _, tg := range page {
			got = append(got, tg.TagId)
		}
		if !more {
			break
		}
		after = page[len(page)-1].TagId
	}
	if fmt.Sprint(got) != "[ctag_4 ctag_3 ctag_1 ctag_0]" {
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
