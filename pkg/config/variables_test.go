package config

import (
	"slices"
	"testing"
)

// A VOICEAI_* variable nothing reads is found, with the one it was most
// likely meant to be; known ones, the tests' own and other programs'
// variables are not.
func TestUnknownVariablesAreFoundWithTheirLikelyName(t *testing.T) {
	got := Unknown([]string{
		"VOICEAI_RATELIMIT_PER_HOUR=3", "VOICEAI_LOG_LEVEL=warn", "VOICEAI_TEST_LOG=1", "PATH=/bin",
		"VOICEAI_SECERT_KEY=x", "VOICEAI_SOMETHING_ELSE_ENTIRELY=1", "VOICEAI_NATS_URL",
	})
	want := []UnknownVariable{
		{Name: "VOICEAI_RATELIMIT_PER_HOUR", Suggestion: "VOICEAI_RATE_LIMIT_PER_HOUR"},
		{Name: "VOICEAI_SECERT_KEY", Suggestion: "VOICEAI_SECRET_KEY"},
		{Name: "VOICEAI_SOMETHING_ELSE_ENTIRELY"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Unknown = %+v, want %+v", got, want)
	}
	if !slices.IsSorted(Variables) {
		t.Fatal("Variables is not sorted")
	}
}
