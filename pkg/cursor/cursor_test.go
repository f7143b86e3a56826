package cursor

import (
	"errors"
	"testing"
)

type pos struct {
	T  int64  `json:"t"`
	ID string `json:"id"`
}

func TestRoundTripAndTamper(t *testing.T) {
	c := NewCodec([]byte("k"))
	s, err := c.Encode("agents|q=a", pos{5, "agent_1"})
	if err != nil {
		t.Fatal(err)
	}
	var got pos
	if err := c.Decode("agents|q=a", s, &got); err != nil || got != (pos{5, "agent_1"}) {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	if err := c.Decode("agents|q=b", s, &got); !errors.Is(err, ErrInvalid) {
		t.Fatalf("other scope accepted: %v", err)
	}
	flipped := []byte(s)
	flipped[2] ^= 1
	if err := c.Decode("agents|q=a", string(flipped), &got); !errors.Is(err, ErrInvalid) {
		t.Fatalf("tampered cursor accepted: %v", err)
	}
	if err := NewCodec([]byte("other")).Decode("agents|q=a", s, &got); !errors.Is(err, ErrInvalid) {
		t.Fatalf("cursor of another key accepted: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	c := NewCodec([]byte("k"))
	good, _ := c.Encode("s", pos{1, "a"})
	f.Add(good)
	f.Add("")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, s string) {
		var p pos
		err := c.Decode("s", s, &p)
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}
