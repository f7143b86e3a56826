package offline

import (
	"reflect"
	"testing"
)

// bookingScenario asks three things of a bookings agent (as the
// runner's simulation tests do).
const bookingScenario = `You are Ann, a regular guest. You want to know the opening hours. ` +
	`Then ask about refunds for cancelled bookings. Finally ask the agent to book a table for 4 guests, date friday.`

func TestOfflineRequests(t *testing.T) {
	cases := []struct {
		scenario string
		want     []string
	}{
		{bookingScenario, []string{"I want to know the opening hours.", "Can you tell me about refunds for cancelled bookings?",
			"Could you book a table for 4 guests, date friday?"}},
		{"The caller wants to cancel her booking for friday and asks whether she gets a refund.",
			[]string{"I want to cancel my booking for friday.", "Can you tell me whether I get a refund?"}},
		{"You are a busy nurse.\n- Ask: \"Do you have parking?\"\n- asks for a refund\nGoal: book a table",
			[]string{"Book a table.", "Do you have parking?", "Could I get a refund?"}},
		{"You are looking for a vegan restaurant. You need it for tonight.",
			[]string{"I'm looking for a vegan restaurant. I need it for tonight."}},
		{"Opening hours. Refund policy", []string{"Opening hours.", "Refund policy."}},
		{"", nil},
	}
	for _, c := range cases {
		if got := offlineRequests(c.scenario); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got  %q\n want %q", c.scenario, got, c.want)
		}
	}
}
