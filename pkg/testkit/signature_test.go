package testkit

import "testing"

func TestSignedBy(t *testing.T) {
	// HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog"): the widely published example.
	const sig = "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
	body := []byte("The quick brown fox jumps over the lazy dog")
	if !SignedBy([]byte("key"), body, sig) {
		t.Fatal("the known signature does not verify")
	}
	if SignedBy([]byte("other"), body, sig) || SignedBy([]byte("key"), body[1:], sig) || SignedBy([]byte("key"), body, sig[7:]) {
		t.Fatal("a wrong key, body or prefix verifies")
	}
}
