package memory

import (
	"google.golang.org/protobuf/encoding/protowire"

	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"
)

// head is what a loading index reads of a ticket it stages: its id, its
// creation time (the listing's order) and whether it is deleted.
type head struct {
	id      string
	created int64
	deleted bool
}

// The fields readHead reads, numbered as the ticket's schema numbers them.
var (
	ticketFields     = (&ticketsv1.Ticket{}).ProtoReflect().Descriptor().Fields()
	ticketIDField    = ticketFields.ByName("ticket_id").Number()
	createdAtMsField = ticketFields.ByName("created_at_unix_ms").Number()
	deletedAtField   = ticketFields.ByName("deleted_at_unix_secs").Number()
)

// readHead reads a ticket's head off its encoding in one pass over its
// fields, decoding none of the others: what proto.Unmarshal would make of
// them (the last of a field repeated wins), or an error where the
// encoding is not well formed. The rest of the ticket (its texts, its
// strings' UTF-8) is checked when it is decoded.
func readHead(b []byte) (head, error) {
	var h head
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return head{}, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == ticketIDField && typ == protowire.BytesType:
			var v []byte
			if v, n = protowire.ConsumeBytes(b); n >= 0 {
				h.id = string(v)
			}
		case num == createdAtMsField && typ == protowire.VarintType:
			var v uint64
			if v, n = protowire.ConsumeVarint(b); n >= 0 {
				h.created = int64(v)
			}
		case num == deletedAtField && typ == protowire.VarintType:
			if _, n = protowire.ConsumeVarint(b); n >= 0 {
				h.deleted = true
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return head{}, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return h, nil
}
