package domain

import (
	"slices"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/outbound"
)

// RetryConfigInput is the retry_config object of a request; absent fields
// are nil.
type RetryConfigInput struct {
	MaxRetries         *int64  `json:"max_retries"`
	RetryDelay         *int64  `json:"retry_delay"`
	ExponentialBackoff *bool   `json:"exponential_backoff"`
	MaxDelay           *int64  `json:"max_delay"`
	RetryOnStatus      []int64 `json:"retry_on_status"`
}

// Input is the body of a create (POST) or update (PUT); absent fields are
// nil. Its shape (types, the url's length, known event names, the
// secret's length and characters, retry_config's ranges) is the API
// schema's (WebhookCreate, WebhookUpdate), checked at the edge; the
// validation here is what a schema cannot say.
type Input struct {
	URL         *string           `json:"url"`
	Events      []string          `json:"events"`
	Secret      *string           `json:"secret"`
	Active      *bool             `json:"active"`
	RetryConfig *RetryConfigInput `json:"retry_config"`
	// Relay (create only) makes a webhook without a url whose deliveries
	// a polling client takes (voiceai webhooks listen).
	Relay *bool `json:"relay"`
	// Name is a display name; RequestHeaders are sent with each delivery
	// (all of them replace the current ones; a null value drops one).
	Name           *string            `json:"name"`
	RequestHeaders map[string]*string `json:"request_headers"`

	// What the workspace webhooks API says its own way: RetryEnabled
	// (false: no retries; true: the default retries when there were
	// none), WorkspaceEvents (the complete set of workspace-level event
	// types, see WithWorkspaceEvents), and Within, where these fields are
	// in its body (create nests them in "settings"), and URLField, what
	// it calls the url (webhook_url).
	RetryEnabled    *bool    `json:"-"`
	WorkspaceEvents []string `json:"-"`
	Within          []any    `json:"-"`
	URLField        string   `json:"-"`
}

// urlField is what the body calls the url.
func (in Input) urlField() string {
	if in.URLField != "" {
		return in.URLField
	}
	return "url"
}

// loc is where field is in the body.
func (in Input) loc(field string) []any {
	return append(append([]any{"body"}, in.Within...), field)
}

// Spec is a validated webhook definition.
type Spec struct {
	URL    string
	Events []string
	Secret string // "" on create: generate one; on update: unchanged
	Active bool
	Retry  RetryPolicy
	Relay  bool
	Name   string
	// Headers are the request headers sent with each delivery.
	Headers map[string]string
}

// HostAllowed reports whether the operator allowed a host (lowercase,
// without port) to be private and reached over plain http.
type HostAllowed func(host string) bool

// ValidateCreate checks a create body and applies the defaults.
func ValidateCreate(in Input, allowed HostAllowed) (Spec, error) {
	return validate(in, Spec{Active: true, Retry: DefaultRetryPolicy()}, allowed, true)
}

// ValidateUpdate checks an update body against the current definition:
// fields present replace the current ones (retry_config field by field).
func ValidateUpdate(in Input, cur Spec, allowed HostAllowed) (Spec, error) {
	cur.Secret = ""
	return validate(in, cur, allowed, false)
}

// validate applies the fields present in in to s: the url's scheme and
// address (against the operator's allow-list), relay against url and
// against the webhook's, and max_delay against retry_delay; a create
// also requires a url unless it makes a relay webhook.
func validate(in Input, s Spec, allowed HostAllowed, create bool) (Spec, error) {
	var v apperr.Validator
	required := func(field string) {
		if create {
			v.Add("Field required", "missing", in.loc(field)...)
		}
	}
	if in.Relay != nil {
		if create {
			s.Relay = *in.Relay
		} else if *in.Relay != s.Relay {
			v.Add("A webhook's relay setting is fixed at creation", "value_error", "body", "relay")
		}
	}
	switch {
	case s.Relay && in.URL != nil:
		v.Add("A relay webhook has no url: a polling client takes its deliveries", "value_error", "body", "url")
	case s.Relay:
	case in.URL == nil:
		required(in.urlField())
	default:
		s.URL = checkURL(&v, *in.URL, allowed, in.loc(in.urlField()))
	}
	if in.Events != nil {
		s.Events = distinct(in.Events)
	}
	if in.WorkspaceEvents != nil {
		s.Events = WithWorkspaceEvents(s.Events, in.WorkspaceEvents)
	}
	if in.Name != nil {
		s.Name = *in.Name
	}
	if in.RequestHeaders != nil {
		s.Headers = CheckRequestHeaders(&v, in.RequestHeaders, s.Headers, in.loc("request_headers")...)
	}
	if in.Secret != nil {
		s.Secret = *in.Secret
	}
	if in.Active != nil {
		s.Active = *in.Active
	}
	if in.RetryConfig != nil {
		s.Retry = checkRetry(&v, *in.RetryConfig, s.Retry)
	}
	switch {
	case in.RetryEnabled == nil:
	case !*in.RetryEnabled:
		s.Retry.MaxRetries = 0
	case s.Retry.MaxRetries == 0:
		s.Retry.MaxRetries = DefaultRetryPolicy().MaxRetries
	}
	return s, v.Err()
}

func checkURL(v *apperr.Validator, raw string, allowed HostAllowed, loc []any) string {
	u, problem := outbound.CheckURL(raw, allowed, "webhooks")
	if problem != nil {
		v.Add(problem.Msg, problem.Type, loc...)
	}
	return u
}

// distinct is events without repetitions, in their first order.
func distinct(events []string) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// checkRetry applies a retry_config, whose ranges the schema bounds, to
// base: max_delay is at least retry_delay, and retry_on_status is kept
// sorted, each status once.
func checkRetry(v *apperr.Validator, in RetryConfigInput, base RetryPolicy) RetryPolicy {
	p := base
	set := func(val *int64, dst *int) {
		if val != nil {
			*dst = int(*val)
		}
	}
	set(in.MaxRetries, &p.MaxRetries)
	set(in.RetryDelay, &p.RetryDelay)
	set(in.MaxDelay, &p.MaxDelay)
	if in.ExponentialBackoff != nil {
		p.ExponentialBackoff = *in.ExponentialBackoff
	}
	// Without max_delay, one below retry_delay is raised to it, the least
	// change that keeps the two in order: a create starts from
	// DefaultMaxDelay, so it gets max(DefaultMaxDelay, retry_delay); an
	// update keeps the stored cap wherever it still holds.
	if in.MaxDelay == nil && p.MaxDelay < p.RetryDelay {
		p.MaxDelay = p.RetryDelay
	}
	if p.MaxDelay < p.RetryDelay {
		v.Add("max_delay should be at least retry_delay", "value_error", "body", "retry_config", "max_delay")
	}
	if in.RetryOnStatus != nil {
		codes := make([]int, 0, len(in.RetryOnStatus))
		for _, c := range in.RetryOnStatus {
			if !slices.Contains(codes, int(c)) {
				codes = append(codes, int(c))
			}
		}
		slices.Sort(codes)
		p.RetryOnStatus = codes
	}
	return p
}
