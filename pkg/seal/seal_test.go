package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpensOnlyForItsOwnerAndKey(t *testing.T) {
	s, err := New(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal("ws_1/secret_1", "sk-live-123")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("sk-live-123")) {
		t.Fatal("sealed value holds the plain text")
	}
	if got, err := s.Open("ws_1/secret_1", sealed); err != nil || string(got) != "sk-live-123" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := s.Open("ws_2/secret_1", sealed); !errors.Is(err, ErrUnsealable) {
		t.Fatalf("another owner opened it: %v", err)
	}
	other, _ := New(bytes.Repeat([]byte{2}, 32))
	if _, err := other.Open("ws_1/secret_1", sealed); !errors.Is(err, ErrUnsealable) {
		t.Fatalf("another key opened it: %v", err)
	}
	if _, err := s.Open("ws_1/secret_1", sealed[:5]); !errors.Is(err, ErrUnsealable) {
		t.Fatal("short input")
	}
}
