package main

import "testing"

// identity answers probe like every service binary: the container health
// checks run `/service probe` (docker-compose.yml); cobra refused it as an
// unknown command, so identity never reported healthy and the gateway,
// which waits for it, never started.
func TestIdentityAnswersProbe(t *testing.T) {
	cmd, _, err := rootCommand().Find([]string{"probe"})
	if err != nil || cmd.Name() != "probe" {
		t.Fatalf("probe: %v %v", cmd.Name(), err)
	}
}
