package testkit

import (
	"net"
	"testing"
)

// FreeAddr is a loopback address ("127.0.0.1:port") that nothing listens
// on at the time of the call: for a server the test starts there, or for
// a peer that must be found down.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
