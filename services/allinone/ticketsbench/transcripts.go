package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A contact centre's calls, as a bench's transcripts: 10 to 40 turns of
// sentences a caller and an agent say, with names, places, products,
// amounts, order numbers and dates varying between calls, tool calls in
// some turns (one in eight answered with an error), so that the words a
// search indexes are as many and as varied as a real transcript's.
var (
	callerLines = []string{
		"hi I am calling about my order {order} it has not arrived yet",
		"I was charged {amount} dollars twice on my card ending {digits}",
		"my name is {first} {last} and I live in {city}",
		"I want to change my booking to {day} the {date}",
		"the {product} I bought last week stopped working",
		"can you tell me why my refund was denied",
		"I have been waiting on hold for {minutes} minutes",
		"my account number is {digits}{digits} and the email is {first}.{last}@example.com",
		"the delivery driver left the parcel at the wrong address on {street} street",
		"I would like to cancel my subscription before the next billing date",
		"is there any way to upgrade to the {plan} plan without paying the fee",
		"the app keeps crashing when I open the {feature} screen",
		"I never received the confirmation email for order {order}",
		"could you please send the invoice to my office in {city}",
		"that is not what your colleague told me yesterday",
		"okay thank you that helps a lot",
		"no that does not solve my problem at all",
		"yes please go ahead and do that",
		"I need to speak to a supervisor about this complaint",
		"my flight from {city} to {city2} was cancelled and I need a new one",
		"the {product} arrived damaged and the box was open",
		"how long will the replacement take to ship to {city}",
		"I think someone else used my card for a chargeback",
		"can I pay the remaining {amount} in two instalments",
	}
	agentLines = []string{
		"thank you for calling {brand} my name is {agent} how can I help you today",
		"I am sorry to hear that let me look into it for you",
		"could you confirm the order number please",
		"I can see order {order} was shipped on {day} from our warehouse in {city}",
		"I have issued a refund of {amount} dollars it should appear within five business days",
		"for security could you confirm the last four digits of your card",
		"I have updated your booking to {day} the {date} at {time}",
		"unfortunately the {plan} plan cannot be changed until the end of the term",
		"I understand your frustration and I will escalate this to our {team} team",
		"is there anything else I can help you with today",
		"let me transfer you to a specialist who can help with the {feature} issue",
		"I have sent a new confirmation email to the address on file",
		"the replacement {product} will ship within {minutes} hours",
		"I can offer you a voucher of {amount} dollars for the inconvenience",
		"according to our policy refunds are only possible within thirty days",
		"please try restarting the app and clearing its cache",
		"I have noted your complaint with reference {digits}",
		"your new flight leaves {city2} at {time} on {day}",
		"the charge of {amount} dollars was a temporary authorisation and will be released",
		"thank you for your patience have a great day",
	}
	slots = map[string][]string{
		"first":   {"Maria", "James", "Aisha", "Chen", "Lucas", "Olga", "Ravi", "Fatima", "Noah", "Ingrid", "Mateo", "Yuki", "Kwame", "Sofia", "Liam", "Zara"},
		"last":    {"Garcia", "Smith", "Okafor", "Wang", "Silva", "Petrova", "Patel", "Haddad", "Johnson", "Larsen", "Rossi", "Tanaka", "Mensah", "Costa", "Murphy", "Khan"},
		"city":    {"Denver", "Paris", "Lima", "Berlin", "Lagos", "Toronto", "Madrid", "Osaka", "Austin", "Dublin", "Nairobi", "Lisbon", "Chicago", "Seoul", "Oslo", "Quito"},
		"city2":   {"Boston", "Rome", "Cairo", "Sydney", "Vienna", "Dallas", "Manila", "Prague"},
		"product": {"headphones", "router", "blender", "laptop", "phone case", "smart watch", "vacuum cleaner", "coffee machine", "printer", "camera"},
		"plan":    {"premium", "family", "business", "student", "unlimited"},
		"feature": {"payments", "settings", "tracking", "login", "profile", "checkout"},
		"team":    {"billing", "logistics", "technical", "customer care", "fraud"},
		"brand":   {"Acme Air", "Northwind", "Globex", "Initech"},
		"agent":   {"Sam", "Alex", "Jordan", "Taylor"},
		"day":     {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"},
		"street":  {"Oak", "Maple", "Pine", "Cedar", "Elm", "Main", "High", "Church"},
	}
	toolNames = []string{"lookup_order", "issue_refund", "update_booking", "check_balance", "create_ticket", "send_email"}
)

// fill replaces a line's slots with values drawn by r.
func fill(line string, r *rand.Rand) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '{')
		if i < 0 {
			b.WriteString(line)
			return b.String()
		}
		j := strings.IndexByte(line[i:], '}') + i
		b.WriteString(line[:i])
		switch slot := line[i+1 : j]; slot {
		case "order":
			fmt.Fprintf(&b, "%d", 100000+r.IntN(900000))
		case "digits":
			fmt.Fprintf(&b, "%04d", r.IntN(10000))
		case "amount":
			fmt.Fprintf(&b, "%d", 5+r.IntN(995))
		case "minutes":
			fmt.Fprintf(&b, "%d", 2+r.IntN(58))
		case "date":
			fmt.Fprintf(&b, "%d", 1+r.IntN(28))
		case "time":
			fmt.Fprintf(&b, "%d:%02d", r.IntN(24), r.IntN(60))
		default:
			vs := slots[slot]
			b.WriteString(vs[r.IntN(len(vs))])
		}
		line = line[j+1:]
	}
}

// transcriptOf is conversation i's transcript: 10 to 40 turns, the agent
// calling a tool in some of its turns.
func transcriptOf(i int) (turns []map[string]any, tools []string) {
	r := rand.New(rand.NewPCG(uint64(i), 46))
	n := 10 + r.IntN(31)
	turns = make([]map[string]any, n)
	at := 0
	for t := range turns {
		role, lines := "agent", agentLines
		if t%2 == 1 {
			role, lines = "user", callerLines
		}
		line := lines[r.IntN(len(lines))]
		if t == 0 {
			line = agentLines[0]
		}
		turn := map[string]any{"role": role, "message": fill(line, r), "time_in_call_secs": at}
		if role == "agent" && t > 0 && r.IntN(6) == 0 {
			tool := toolNames[r.IntN(len(toolNames))]
			req := fmt.Sprintf("req_%d_%d", i, t)
			turn["tool_calls"] = []any{map[string]any{"request_id": req, "tool_name": tool, "params_as_json": `{"order":"` + fmt.Sprint(100000+r.IntN(900000)) + `"}`, "tool_has_been_called": true}}
			turn["tool_results"] = []any{map[string]any{"request_id": req, "tool_name": tool, "result_value": `{"status":"ok"}`, "is_error": r.IntN(8) == 0, "tool_has_been_called": true}}
			tools = append(tools, tool)
		}
		turns[t] = turn
		at += 3 + r.IntN(20)
	}
	return turns, tools
}
