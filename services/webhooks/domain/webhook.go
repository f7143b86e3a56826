package domain

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
)

// Limits of a webhook's fields.
const (
	MaxURLLength    = 2048
	MaxEvents       = 50
	SecretMinLength = 16
	SecretMaxLength = 256
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
// nil.
type Input struct {
	URL         *string           `json:"url"`
	Events      []string          `json:"events"`
	Secret      *string           `json:"secret"`
	Active      *bool             `json:"active"`
	RetryConfig *RetryConfigInput `json:"retry_config"`
	// Relay (create only) makes a webhook without a url whose deliveries
	// a polling client takes (voiceai webhooks listen).
	Relay *bool `json:"relay"`
}

// Spec is a validated webhook definition.
type Spec struct {
	URL    string
	Events []string
	Secret string // "" on create: generate one; on update: unchanged
	Active bool
	Retry  RetryPolicy
	Relay  bool
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

// validate applies the fields present in in to s; a create also requires
// url and events.
func validate(in Input, s Spec, allowed HostAllowed, create bool) (Spec, error) {
	var v apperr.Validator
	required := func(field string) {
		if create {
			v.Add("Field required", "missing", "body", field)
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
		required("url")
	default:
		s.URL = checkURL(&v, *in.URL, allowed)
	}
	if in.Events == nil {
		required("events")
	} else {
		s.Events = checkEvents(&v, in.Events)
	}
	if in.Secret != nil {
		s.Secret = checkSecret(&v, *in.Secret)
	}
	if in.Active != nil {
		s.Active = *in.Active
	}
	if in.RetryConfig != nil {
		s.Retry = checkRetry(&v, *in.RetryConfig, s.Retry)
	}
	return s, v.Err()
}

func checkURL(v *apperr.Validator, raw string, allowed HostAllowed) string {
	loc := []any{"body", "url"}
	if len(raw) > MaxURLLength {
		v.Add(fmt.Sprintf("URL should have at most %d characters", MaxURLLength), "string_too_long", loc...)
		return ""
	}
	if raw != strings.TrimSpace(raw) || strings.ContainsFunc(raw, unicode.IsControl) {
		v.Add("URL must not contain whitespace or control characters", "url_parsing", loc...)
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		v.Add("Input should be an absolute https URL", "url_parsing", loc...)
		return ""
	}
	host := strings.ToLower(u.Hostname())
	isAllowed := allowed != nil && allowed(host)
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isAllowed:
	default:
		v.Add("URL scheme should be 'https'", "url_scheme", loc...)
		return ""
	}
	if ip, err := netip.ParseAddr(host); err == nil && !isAllowed {
		if reason, bad := ForbiddenAddr(ip); bad {
			v.Add("URL points to a "+reason+" address, which webhooks may not reach", "url_forbidden_address", loc...)
			return ""
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

func checkEvents(v *apperr.Validator, events []string) []string {
	if len(events) == 0 {
		v.Add("List should have at least 1 item", "too_short", "body", "events")
		return nil
	}
	if len(events) > MaxEvents {
		v.Add(fmt.Sprintf("List should have at most %d items", MaxEvents), "too_long", "body", "events")
		return nil
	}
	out := make([]string, 0, len(events))
	for i, e := range events {
		if !IsKnownEvent(e) {
			v.Add(fmt.Sprintf("Unknown event name %q; expected one of: %s", e, strings.Join(KnownEvents(), ", ")), "enum", "body", "events", i)
			continue
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func checkSecret(v *apperr.Validator, s string) string {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }):
		v.Add("Secret must be printable characters without whitespace", "value_error", "body", "secret")
	case n < SecretMinLength:
		v.Add(fmt.Sprintf("Secret should have at least %d characters", SecretMinLength), "string_too_short", "body", "secret")
	case n > SecretMaxLength:
		v.Add(fmt.Sprintf("Secret should have at most %d characters", SecretMaxLength), "string_too_long", "body", "secret")
	default:
		return s
	}
	return ""
}

func checkRetry(v *apperr.Validator, in RetryConfigInput, base RetryPolicy) RetryPolicy {
	p := base
	rangeCheck := func(val *int64, lo, hi int64, field string, dst *int) {
		if val == nil {
			return
		}
		if *val < lo || *val > hi {
			v.Add(fmt.Sprintf("Input should be between %d and %d", lo, hi), "range", "body", "retry_config", field)
			return
		}
		*dst = int(*val)
	}
	rangeCheck(in.MaxRetries, 0, MaxRetriesMax, "max_retries", &p.MaxRetries)
	rangeCheck(in.RetryDelay, RetryDelayMin, RetryDelayMax, "retry_delay", &p.RetryDelay)
	rangeCheck(in.MaxDelay, RetryDelayMin, MaxDelayMax, "max_delay", &p.MaxDelay)
	if in.ExponentialBackoff != nil {
		p.ExponentialBackoff = *in.ExponentialBackoff
	}
	// Without max_delay, one below retry_delay is raised (a create starts
	// from DefaultMaxDelay, so it gets max(DefaultMaxDelay, retry_delay)).
	if in.MaxDelay == nil && p.MaxDelay < p.RetryDelay {
		p.MaxDelay = max(DefaultMaxDelay, p.RetryDelay)
	}
	if p.MaxDelay < p.RetryDelay {
		v.Add("max_delay should be at least retry_delay", "value_error", "body", "retry_config", "max_delay")
	}
	if in.RetryOnStatus != nil {
		if len(in.RetryOnStatus) > RetryOnStatusMaxItems {
			v.Add(fmt.Sprintf("List should have at most %d items", RetryOnStatusMaxItems), "too_long", "body", "retry_config", "retry_on_status")
		} else {
			codes := make([]int, 0, len(in.RetryOnStatus))
			for i, c := range in.RetryOnStatus {
				if c < RetryStatusMin || c > RetryStatusMax {
					v.Add(fmt.Sprintf("Input should be an HTTP status between %d and %d", RetryStatusMin, RetryStatusMax), "range", "body", "retry_config", "retry_on_status", i)
					continue
				}
				if !slices.Contains(codes, int(c)) {
					codes = append(codes, int(c))
				}
			}
			slices.Sort(codes)
			p.RetryOnStatus = codes
		}
	}
	return p
}
