package app_test

import (
	"slices"
	"testing"

	events "github.com/voiceai-platform/voiceai/proto-events"
	ticketsv1 "github.com/voiceai-platform/voiceai/proto-events/gen/voiceai/tickets/v1"

	"github.com/voiceai-platform/voiceai/services/tickets/domain"
)

// lastPublic is the public change the newest event of ticket id carries.
func (f *fixture) lastPublic(t *testing.T, id string) *ticketsv1.PublicChange {
	t.Helper()
	recs := f.history(t, id)
	last := recs[len(recs)-1]
	msg, err := events.Decode(last.Type, last.Data)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := msg.(*ticketsv1.TestFailureRecorded)
	if !ok {
		t.Fatalf("the last event is a %s", last.Type)
	}
	return e.GetPublic()
}

// Each failure recorded on a ticket says which public event it is: the
// webhooks deliver it as that, knowing none of these rules.
func TestFailuresSayWhatSubscribersHear(t *testing.T) {
	f := newFixture(t)
	tk := f.record(t, failing("test_1", run("inv_1", "run_1"))) // a TicketCreated: public as itself

	f.record(t, failing("test_1", run("inv_2", "run_2")))
	if p := f.lastPublic(t, tk.TicketId); p.GetEvent() != domain.EventTicketCommented || p.GetPreviousStatus() != "" || len(p.GetChangedFields()) != 0 {
		t.Fatalf("a new failing invocation: %v", p)
	}
	f.record(t, failing("test_1", run("inv_2", "run_3")))
	if p := f.lastPublic(t, tk.TicketId); p.GetEvent() != domain.EventTicketUpdated || !slices.Equal(p.GetChangedFields(), []string{"test_failures"}) {
		t.Fatalf("more runs of a recorded invocation: %v", p)
	}
	if _, err := f.setStatus(domain.StatusResolved)(t, tk.TicketId); err != nil {
		t.Fatal(err)
	}
	f.record(t, failing("test_1", run("inv_3", "run_4")))
	if p := f.lastPublic(t, tk.TicketId); p.GetEvent() != domain.EventTicketStatusChanged || p.GetPreviousStatus() != domain.StatusResolved || len(p.GetChangedFields()) != 0 {
		t.Fatalf("a failure that reopened the ticket: %v", p)
	}
}
