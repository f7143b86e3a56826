package stack

import (
	"os"
	"runtime/debug"
)

// TuneGC trades memory for CPU where the operator has not chosen: the
// all-in-one process holds its read indexes in memory and allocates per
// request, so the collector runs a quarter as often as Go's default
// (GOGC 400) under a soft memory limit (640 MiB, GOMEMLIMIT) that makes it
// work harder before the process would outgrow a small machine: the limit,
// not GOGC, bounds a large heap. The binary calls it first; the benches
// that run the stack in their own process call it too, so that they
// measure what the binary ships.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(640 << 20)
	}
}
