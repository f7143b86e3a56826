package memory

import (
	"testing"

	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
)

// readHead reads of any encoding what proto.Unmarshal makes of it, and
// refuses none that Unmarshal takes.
func FuzzReadHead(f *testing.F) {
	deleted := int64(7)
	for _, t := range []*ticketsv1.Ticket{
		{},
		{TicketId: "tkt_1", WorkspaceId: "ws_1", Title: "Refund promised", CreatedAtUnixMs: 1_700_000_000_123, Labels: []string{"billing"}},
		{TicketId: "tkt_2", CreatedAtUnixMs: -5, DeletedAtUnixSecs: &deleted, TicketComments: []*ticketsv1.Comment{{Comment: "x"}}},
		{TicketId: "tkt_3", DeletedAtUnixSecs: new(int64)},
	} {
		b, err := proto.Marshal(t)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, b...)) // every field twice: the last wins
	}
	f.Add([]byte{0x0a, 0x05, 't', 'k'})         // the id cut short
	f.Add([]byte{0xc8, 0x01, 0x80})             // the creation time cut short
	f.Add([]byte{0x0d, 0x01, 0x02, 0x03, 0x04}) // the id with another wire type
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := readHead(b)
		var want ticketsv1.Ticket
		if uerr := proto.Unmarshal(b, &want); uerr != nil {
			return // refused or not, Loaded decodes it and leaves it out
		}
		if err != nil {
			t.Fatalf("refused %x, which Unmarshal takes: %v", b, err)
		}
		if h.id != want.TicketId || h.created != want.CreatedAtUnixMs || h.deleted != (want.DeletedAtUnixSecs != nil) {
			t.Fatalf("%x: read %+v, Unmarshal has id %q created %d deleted %v", b, h, want.TicketId, want.CreatedAtUnixMs, want.DeletedAtUnixSecs != nil)
		}
	})
}
