package config

import "testing"

// No password of a connection setting reaches a log line.
func TestRedactedHidesEveryPassword(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222": "nats://127.0.0.1:4222",
		"nats://ops:TopSecret@n1:4222,nats://ops:TopSecret@n2:4222": "nats://ops:xxxxx@n1:4222,nats://ops:xxxxx@n2:4222",
		"nats://token-only-TopSecret@n1:4222":                       "nats://xxxxx@n1:4222",
		"mongodb://app:TopSecret@m1,m2/?replicaSet=rs0":             "mongodb://app:xxxxx@m1,m2/?replicaSet=rs0",
		"nats://ops:Top%zzSecret@n1:4222":                           "xxxxx@n1:4222",
	} {
		if got := Redacted(in); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
}
