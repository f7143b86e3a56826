package meaning

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func model(t testing.TB) *Model {
	t.Helper()
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Each rule of the package comment, on a case written for it.
func TestDecide(t *testing.T) {
	m := model(t)
	for _, c := range []struct {
		rule, cond, reply string
		want              Result
		reason            string // a fragment of the reason
	}{
		{"synonyms: a shared WordNet synset", "The agent says the parcel was delivered", "Your package was delivered this morning.", Met, "parcel"},
		{"derived forms: refund (v) for refund (n)", "The agent offers a refund", "We will refund you in full.", Met, "refund"},
		{"more specific: a jacket is clothing", "The agent says clothing can be returned", "Jackets can be returned.", Met, "clothing"},
		{"negation contradicts", "The agent says a refund is possible within 30 days with a receipt", "Refunds are possible within 30 days, and you do not need a receipt.", NotMet, `"receipt" (reply: not "receipt")`},
		{"a negative condition is met by a negative reply", "The agent says refunds are not possible after 30 days", "After 30 days we can't give refunds.", Met, ""},
		{"antonyms contradict", "The agent says the tickets are cheap", "Those tickets are expensive.", NotMet, "opposite"},
		{"a different amount contradicts", "The agent says a refund is possible within 30 days with a receipt", "Refunds are possible within 60 days with a receipt.", NotMet, `"30 days" (reply: "60 days")`},
		{"an amount said of another thing is missing, not contradicted", "The agent says delivery takes three days", "Refunds are possible within 30 days.", NotMet, "does not say most of it (found nothing; missing delivery, three days)"},
		{"an amount said of nothing else contradicts", "The agent says delivery takes three days", "It takes 5 days.", NotMet, `"three days" (reply: "5 days")`},
		{"an amount beside the condition's subject contradicts", "The agent says returns are accepted within 30 days", "Returns are accepted. You have 60 days.", NotMet, `"30 days" (reply: "60 days")`},
		{"a month is 30 days", "The agent says returns are accepted within 30 days", "You can return it within a month.", Met, "30 days"},
		{"clock times in words", "The agent says the store opens at 9:30", "We open at half past nine.", Met, "9:30"},
		{"money in words", "The agent says the limit is $200", "The limit is two hundred dollars.", Met, "$200"},
		{"free is the amount 0", "The agent says delivery is free", "Delivery costs $4.99.", NotMet, "$4.99"},
		{"no charge is free", "The agent says delivery is free", "There's no charge for delivery.", Met, "free"},
		{"24/7", "The agent says the line is open 24/7", "Our helpline is open around the clock.", Met, "24/7"},
		{"weekday names contradict", "The agent confirms the table for Friday", "Your table is booked for Thursday.", NotMet, "thursday"},
		{"a part left out fails", "The agent gives the claim reference and says an assessor will call within 48 hours", "An assessor will phone you within 48 hours.", NotMet, "claim"},
		{"every part said passes", "The agent gives the claim reference and says an assessor will call within 48 hours", "Your claim reference is HC-20931. An assessor will phone you within 48 hours.", Met, ""},
		{"a missing thing keeps it from being met", "The agent says a refund is possible within 30 days with a receipt", "Yes, you can get a refund within 30 days.", Unknown, "receipt"},
		{"the kind of amount asked for", "The agent tells the caller the price of personal training", "Personal trainers here are all fully qualified.", NotMet, "price"},
		{"a question states nothing", "The agent confirms the appointment on Tuesday at 10am", "Would you like me to book Tuesday at 10am?", NotMet, ""},
		{"a refusal fails an information condition", "The agent says a refund is possible within 30 days", "I'm sorry, I can't find that in my instructions.", NotMet, "declines"},
		{"declining is met by a refusal", "The agent politely declines to give medical advice", "I'm sorry, I'm not able to give medical advice; please speak to your doctor.", Met, "declines"},
		{"declining is not met by an answer", "The agent declines to give medical advice", "Take two paracetamol every four hours.", NotMet, "does not"},
		{"a prohibition is met when the reply does not do it", "The agent does not ask for the full card number", "I've blocked the card ending 4421.", Met, "forbids"},
		{"a prohibition is not met when the reply does it", "The agent does not ask for the full card number", "Please read me the full 16-digit card number.", NotMet, "forbids"},
		{"we speak for the business", "The agent says the store opens at 9", "We open at 9.", Met, "store"},
		{"a condition naming nothing cannot be checked", "The agent responds.", "Hello.", Unknown, "cannot check"},
		{"a person it names is checked when it names nothing else", "The agent says a referral is not needed", "No referral is needed - you can book the physio directly.", Met, "referral"},
		{"a person named alone is still checked", "The agent says pets are not allowed", "Pets are welcome in every room.", NotMet, "pets"},
		{"a hedge says only that it may be so", "The agent says the order has shipped", "Your order should be shipped by tonight, I think.", NotMet, "may be so"},
		{"leave given to the caller is no hedge", "The agent says the caller can bring a guest", "You may bring a guest with you.", Met, ""},
		{"a hedged condition is met by a hedge", "The agent says the train may be delayed", "The train might be delayed by the storm.", Met, ""},
		{"free only under a condition is not free", "The agent says parking is free", "Parking is free if you spend over £20 in store; otherwise it's £3 an hour.", NotMet, "only sometimes"},
		{"free beside another price is still free", "The agent says delivery is free", "Delivery is free, and assembly costs £40.", Met, ""},
		{"any time restricted to hours", "The agent says the caller can visit at any time", "You can visit at any time during opening hours.", NotMet, "only sometimes"},
		{"every day is not restricted by hours", "The agent says the pool is open every day", "The pool is open every day from 7am to 9pm.", Met, ""},
		{"every day but one", "The agent says the pool is open every day", "The pool is open every day except Mondays.", NotMet, ""},
		{"a forbidden charge named", "The agent does not charge the caller a late fee", "No problem, that's just a £5 admin charge on your next bill.", NotMet, "forbids a charge"},
		{"a forbidden charge not named", "The agent does not charge the caller a late fee", "No problem, I've moved the payment date for you.", Met, "forbids"},
		{"done is not promised", "The agent says the refund has been issued", "Your refund will be issued once we receive the item.", NotMet, "only that it will be"},
		{"done, with what follows", "The agent says the refund has been issued", "I have issued your refund, and you will see it within 3 days.", Met, ""},
		{"it is what was named before", "The agent says the kayak is available on Sunday", "The kayak is booked on Saturday, but it's available on Sunday.", Met, ""},
		{"not paying a penny is free", "The agent says the eye test is free for the caller", "You won't pay a penny for the eye test.", Met, ""},
		{"no fee for a thing does not deny the thing", "The agent says there is no late cancellation fee", "We won't charge you anything for cancelling late.", Met, ""},
		{"a price per period in other words", "The agent says the locker costs £50 a year", "The locker is fifty pounds annually.", Met, ""},
		{"another period contradicts", "The agent says the locker costs £50 a year", "The locker is £50 a month.", NotMet, "a year"},
		{"a forbidden date given", "The agent does not promise a delivery date", "It will definitely arrive on Friday.", NotMet, "forbids giving a date"},
		{"a forbidden date not given", "The agent does not promise a delivery date", "I can't promise a date yet, but I'll email you when it ships.", Met, "forbids"},
		{"another amount where the rest is said", "The agent says the 10am tour has spaces", "The 9am tour has spaces; the 10am one is full.", NotMet, "where it says the rest"},
		{"another modifier in its place", "The agent says the pet insurance covers dental treatment", "The pet insurance covers emergency treatment; dental work is excluded.", NotMet, "in its place"},
		{"the subject's verb is no noun", "The agent says the library closes at 8pm", "The library opens at 10am and closes at 8pm on weekdays.", Met, ""},
		{"whenever you like is at any time", "The agent says the caller can leave the course at any time", "You can leave the course whenever you like.", Met, ""},
		{"on weekdays but one", "The agent says the desk is staffed on weekdays", "The desk is staffed on weekdays - except Fridays.", NotMet, "only sometimes"},
		{"greeting: hello is a greeting", "The agent greets the caller", "Hello! How can I help you today?", Met, "greets"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			d := m.Decide(c.cond, c.reply)
			if d.Result != c.want || !strings.Contains(d.Reason, c.reason) {
				t.Errorf("Decide(%q, %q) = %s (%s), want %s with %q; found %q, missing %q, conflicts %q",
					c.cond, c.reply, d.Result, d.Reason, c.want, c.reason, d.Found, d.Missing, d.Conflicts)
			}
		})
	}
}

// A condition that names nothing a reply could say or lack cannot be
// checked: met, it would pass any reply (a QA probe's case: the agent
// answers the opening hours to "Do you sell pet food?"). Declining names
// nothing either, but is checked by the reply's declining.
func TestDecideNothingToCheck(t *testing.T) {
	m := model(t)
	reply := "Our opening hours are nine to five every weekday."
	for _, cond := range []string{"The agent answers correctly.", "The agent provides accurate information.", "The agent gives a relevant answer.",
		"The agent does what the user asks.", "The agent responds.", "None.", "   ", ""} {
		d := m.Decide(cond, reply)
		if d.Result != Unknown || !d.Uncheckable || d.Reason != NothingToCheck {
			t.Errorf("Decide(%q) = %s (%s), uncheckable %v; want unknown: nothing to check", cond, d.Result, d.Reason, d.Uncheckable)
		}
	}
	for _, c := range []struct {
		reply string
		want  Result
	}{{"I'm sorry, I can't help with that.", Met}, {reply, NotMet}} {
		if d := m.Decide("The agent declines.", c.reply); d.Result != c.want || d.Uncheckable {
			t.Errorf("Decide(declines, %q) = %s (%s), want %s", c.reply, d.Result, d.Reason, c.want)
		}
	}
}

// The offline agent's question in the issue: the prompt says "Refunds",
// the caller asks to "return" — WordNet's shared synset (refund, return,
// repay, give back) answers it.
func TestCoverByMeaning(t *testing.T) {
	m := model(t)
	asked, hits := m.Cover("Can I return the jacket I bought last week?", []string{
		"Our opening hours are 9 to 5.",
		"Refunds are possible within 30 days.",
	})
	if !slices.Contains(asked, "return") {
		t.Fatalf("asked %q lacks return", asked)
	}
	i := slices.Index(asked, "return")
	if hits[0][i] || !hits[1][i] {
		t.Fatalf("hits %v: want only the refund sentence to cover return", hits)
	}
}

func TestQuantities(t *testing.T) {
	for _, c := range []struct {
		text, dim string
		value     float64
	}{
		{"within 30 days", "duration", 30}, {"a fortnight", "duration", 14}, {"48 hours", "duration", 2},
		{"two hundred and fifty dollars", "money:usd", 250}, {"£35", "money:gbp", 35}, {"€120", "money:eur", 120},
		{"50 pence", "money:gbp", 0.5}, {"10%", "percent", 10}, {"half past nine", "clock", 9*60 + 30},
		{"quarter to ten", "clock", 9*60 + 45}, {"7pm", "clock", 19 * 60}, {"7 in the evening", "clock", 19 * 60},
		{"9:30 a.m.", "clock", 9*60 + 30}, {"thirty-five", "count", 35}, {"1,000", "count", 1000},
		{"5 business days", "workdays", 5}, {"free of charge", "money:any", 0}, {"24/7", "always", 1},
		{"half an hour", "duration", 0.5 / 24}, {"half a day", "duration", 0.5}, {"a quarter of an hour", "duration", 0.25 / 24},
		{"three quarters of an hour", "duration", 0.75 / 24}, {"an hour and a half", "duration", 1.5 / 24},
		{"four and a half", "count", 4.5}, {"2 and a half hours", "duration", 2.5 * (1.0 / 24)},
		{"a hundred twenty-nine", "count", 129}, {"half seven", "clock", 7*60 + 30},
		{"half seven in the evening", "clock", 19*60 + 30}, {"twice a year", "frequency", 2.0 / 365},
		{"every 6 months", "frequency", 1.0 / (6 * 30)}, {"three times a week", "frequency", 3.0 / 7},
		{"one and a half thousand", "count", 1500},
	} {
		qs := quantities(split(c.text))
		if len(qs) != 1 || qs[0].dim != c.dim || !slices.ContainsFunc(qs[0].values, func(v float64) bool { return math.Abs(v-c.value) < 1e-9 }) {
			t.Errorf("quantities(%q) = %+v, want one %s of %v", c.text, qs, c.dim, c.value)
		}
	}
	// a price per a period
	for _, text := range []string{"$60 a year", "60 dollars per year", "sixty dollars annually"} {
		if qs := quantities(split(text)); len(qs) != 2 || qs[1].dim != "per" || !slices.Contains(qs[1].values, 365) {
			t.Errorf("quantities(%q) = %v, want money and per year", text, dims(qs))
		}
	}
	// a range of days of a month is not a range of hours
	if qs := quantities(split("from 3 to 10 August")); len(qs) != 3 || qs[0].dim != "count" || qs[1].dim != "count" {
		t.Errorf("quantities(3 to 10 August) = %+v, want two counts and a month", dims(qs))
	}
	for _, text := range []string{"feel free to call", "the one you bought", "may I help", "open every day", "once you have paid"} {
		if qs := quantities(split(text)); len(qs) != 0 {
			t.Errorf("quantities(%q) = %+v, want none", text, qs)
		}
	}
}

func TestNegationScope(t *testing.T) {
	m := model(t)
	negated := func(text, word string) bool {
		for _, tok := range m.analyse(text, false).tokens {
			if tok.surface == word {
				return tok.negated
			}
		}
		t.Fatalf("%q has no token %q", text, word)
		return false
	}
	for _, c := range []struct {
		text, word string
		want       bool
	}{
		{"You do not need a receipt.", "receipt", true},
		{"Refunds are possible, and you do not need a receipt.", "refunds", false},
		{"No refunds after 30 days.", "refunds", true},
		{"There's no charge for delivery.", "delivery", false},
		{"You can't get a refund without a receipt.", "receipt", false},
		{"The pool is open every day except Sundays.", "pool", false},
		{"No, you can return it.", "return", false},
		{"We don't deliver on Sundays, but we do on Saturdays.", "saturdays", false},
	} {
		if got := negated(c.text, c.word); got != c.want {
			t.Errorf("in %q, %q negated = %v, want %v", c.text, c.word, got, c.want)
		}
	}
}

func TestRefuses(t *testing.T) {
	for _, s := range []string{"I don't know.", "I can't help with that.", "I'm unable to share that.", "Sorry, I could not find that in my instructions.", "We can't switch off the antivirus."} {
		if !Refuses(s) {
			t.Errorf("Refuses(%q) = false", s)
		}
	}
	for _, s := range []string{"Refunds are not possible after 30 days.", "It's not far.", "Yes, we can help."} {
		if Refuses(s) {
			t.Errorf("Refuses(%q) = true", s)
		}
	}
}

// FuzzDecide: an agent's reply and a test's condition are untrusted
// text; no input panics, and a decision is always one of the three.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{"", "I don't know", "$$$ 1,2,3.4.5 half past", "a-b--c - - ;;; ???", "24/7 no no no without", "quarter to", "ⱥȺ\xff\xfe", strings.Repeat("and ", 300)} {
		f.Add("The agent says a refund is possible within 30 days", s)
	}
	m := model(f)
	f.Fuzz(func(t *testing.T, cond, reply string) {
		if len(cond) > 4096 || len(reply) > 4096 {
			return
		}
		d := m.Decide(cond, reply)
		if d.Result != Met && d.Result != NotMet && d.Result != Unknown {
			t.Fatalf("result %q", d.Result)
		}
		m.Cover(reply, []string{cond})
		m.Similarity(cond, reply)
	})
}

func BenchmarkDecide(b *testing.B) {
	m := model(b)
	for b.Loop() {
		m.Decide("The agent says a refund is possible within 30 days with a receipt", "Sure - bring it back within a month with your till slip and we'll refund you.")
	}
}

func dims(qs []quantity) []string {
	var out []string
	for _, q := range qs {
		out = append(out, q.dim+" "+q.surface)
	}
	return out
}
