package domain

import "testing"

func TestStateMachine(t *testing.T) {
	allowed := map[[2]string]bool{
		{"open", "in_progress"}: true, {"open", "resolved"}: true,
		{"in_progress", "open"}: true, {"in_progress", "resolved"}: true,
		{"resolved", "open"}: true,
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			if got := CanTransition(from, to); got != allowed[[2]string{from, to}] {
				t.Errorf("%s → %s: %v", from, to, got)
			}
		}
	}
	if CanTransition("open", "merged") || CanAbsorb("merged") || !CanAbsorb("resolved") {
		t.Fatal("merged is reached only by merge; a merged ticket absorbs nothing")
	}
}

func TestPriorities(t *testing.T) {
	if HigherPriority("low", "urgent") != "urgent" || HigherPriority("high", "") != "high" || HigherPriority("", "") != "" {
		t.Fatal("HigherPriority")
	}
	if PriorityRank("") != 0 || PriorityRank("low") != 1 || PriorityRank("urgent") != 4 {
		t.Fatal("PriorityRank")
	}
}

func TestDeriveTitle(t *testing.T) {
	if DeriveTitle("  The agent quoted a wrong price\nmore text") != "The agent quoted a wrong price" {
		t.Fatal("first line")
	}
	long := DeriveTitle(string(make([]rune, 0)) + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	if len([]rune(long)) != 80 {
		t.Fatalf("long title: %d runes", len([]rune(long)))
	}
}

func TestPublicChangeOfRecordedFailures(t *testing.T) {
	for _, c := range []struct {
		reopened, newInvocation bool
		want                    string
	}{
		{true, true, EventTicketStatusChanged},
		{true, false, EventTicketStatusChanged},
		{false, true, EventTicketCommented},
		{false, false, EventTicketUpdated},
	} {
		got := FailuresRecorded(c.reopened, c.newInvocation)
		if got.Event != c.want {
			t.Errorf("reopened %v, new invocation %v: %s; want %s", c.reopened, c.newInvocation, got.Event, c.want)
		}
		if (got.PreviousStatus == StatusResolved) != c.reopened {
			t.Errorf("reopened %v: previous status %q", c.reopened, got.PreviousStatus)
		}
	}
	if got := Clustered([]string{"labels"}); got.Event != EventTicketUpdated || len(got.ChangedFields) != 1 {
		t.Errorf("clustered: %+v", got)
	}
}
