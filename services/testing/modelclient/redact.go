package modelclient

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/voiceai-platform/voiceai/services/testing/model"
)

// RedactedSecret stands wherever a credential a run sent to an agent's
// endpoint came back: in the endpoint's error text, the agent's turns (and
// their tool calls), and so in run results, simulate answers, events and
// log lines.
const RedactedSecret = "[redacted secret]"

// MinRedacted is the shortest credential value redacted: a shorter one
// (a 4-digit PIN in a header, say) would blank every innocent "1234" of a
// reply, and is no secret worth the name. The agents service's README says
// so; such values are sent as given but never hidden.
const MinRedacted = 8

// redactor hides the credential values of one endpoint: the value as
// sent, as an endpoint may echo it back (base64 in its standard and URL
// alphabets, JSON-escaped), and, for a Basic scheme, the decoded
// user:password.
type redactor struct {
	forms []string // longest first, so a longer form is never half-hidden by a shorter one
}

// newRedactor hides each of values.
func newRedactor(values ...string) *redactor {
	r := &redactor{}
	for _, v := range values {
		r.add(v)
	}
	slices.SortFunc(r.forms, func(a, b string) int { return len(b) - len(a) })
	r.forms = slices.Compact(r.forms)
	return r
}

func (r *redactor) add(v string) {
	if len(v) < MinRedacted {
		return
	}
	forms := []string{v, base64.StdEncoding.EncodeToString([]byte(v)), base64.URLEncoding.EncodeToString([]byte(v)),
		base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
	if b, err := json.Marshal(v); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	for _, scheme := range []string{"Bearer ", "Basic "} { // a header value carrying a scheme: the credential alone
		if rest, ok := strings.CutPrefix(v, scheme); ok {
			r.add(rest)
			if scheme == "Basic " {
				if plain, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest)); err == nil {
					r.add(string(plain))
					if _, pass, ok := strings.Cut(string(plain), ":"); ok {
						r.add(pass)
					}
				}
			}
		}
	}
	for _, f := range forms {
		if len(f) >= MinRedacted {
			r.forms = append(r.forms, f)
		}
	}
}

// String is s with every form of every value replaced by RedactedSecret.
func (r *redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, f := range r.forms {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, RedactedSecret)
		}
	}
	return s
}

// Turn is t with its text and tool calls redacted.
func (r *redactor) Turn(t model.Turn) model.Turn {
	if r == nil || len(r.forms) == 0 {
		return t
	}
	t.Text = r.String(t.Text)
	if len(t.Calls) > 0 {
		calls := make([]model.Call, len(t.Calls))
		for i, c := range t.Calls {
			calls[i] = model.Call{ID: r.String(c.ID), Name: r.String(c.Name), Arguments: r.String(c.Arguments)}
		}
		t.Calls = calls
	}
	return t
}

// Error is err with its text redacted. errors.Is still sees what it wraps
// (a time-out, the run's end); errors.As does not, so no wrapped error's
// own text (an endpoint's echo) can be reached through it.
func (r *redactor) Error(err error) error {
	if err == nil || r == nil {
		return err
	}
	msg := err.Error()
	if clean := r.String(msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
