package config

import (
	"net/url"
	"strings"
)

// Redacted is a connection setting (VOICEAI_NATS_URL's comma-separated
// servers, VOICEAI_MONGO_URI) fit for a log line or an error: each URL's
// password is replaced, as url.URL.Redacted does, and a user without one
// too (NATS reads it as a token); one that does not parse keeps only what
// follows its last "@".
func Redacted(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
			if _, hasPassword := u.User.Password(); u.User != nil && !hasPassword {
				u.User = url.User("xxxxx")
			}
			parts[i] = u.Redacted()
		} else if at := strings.LastIndex(p, "@"); at >= 0 {
			parts[i] = "xxxxx@" + p[at+1:]
		}
	}
	return strings.Join(parts, ",")
}
