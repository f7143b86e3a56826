// Package warmup brings a benchmark's process to the state a running
// one's is before it is measured: its heap grown to its size and
// collected a few times over. Until then each page the heap takes for the
// first time is a page fault, charged to whatever the process does at the
// moment (tens of microseconds each on a small VM), a cost of a process's
// first seconds that a long-running one does not pay.
package warmup

import "runtime"

// UntilCollected runs step (numbered from 0) until the process has
// collected garbage collections times since the call, or most steps
// have run; a step's error ends it.
func UntilCollected(collections uint32, most int, step func(i int) error) error {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	until := m.NumGC + collections
	for i := 0; i < most && m.NumGC < until; i++ {
		if err := step(i); err != nil {
			return err
		}
		runtime.ReadMemStats(&m)
	}
	return nil
}
