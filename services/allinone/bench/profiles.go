package main

import (
	"errors"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"time"

	"github.com/voiceai-platform/voiceai/services/allinone/internal/benchproc"
)

// profiles are the files the profile switches asked for ("" for none).
type profiles struct {
	cpu, allocs, mutex, block, trace string
	only                             string // one measurement alone
}

// start begins what was asked for; the returned stop ends it and writes
// the files. Mutex and block sampling are on only when asked: they cost.
func (p profiles) start() (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		stops = nil
		return errors.Join(errs...)
	}
	begin := func(path string, open func(*os.File) error, close func(*os.File) error) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err == nil {
			err = open(f)
		}
		if err != nil {
			return errors.Join(err, stop())
		}
		stops = append(stops, func() error { return errors.Join(close(f), f.Close()) })
		return nil
	}
	none := func(*os.File) error { return nil }
	writeProfile := func(name string) func(*os.File) error {
		return func(f *os.File) error {
			if name == "allocs" {
				runtime.GC() // the profile is as of the last collection
			}
			return pprof.Lookup(name).WriteTo(f, 0)
		}
	}
	if p.mutex != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if p.block != "" {
		runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	}
	if p.allocs != "" {
		// Allocation counts are cumulative: FILE.start, written now, is
		// the base that leaves the measured rounds alone
		// (go tool pprof -base FILE.start FILE).
		if err := writeFile(p.allocs+".start", writeProfile("allocs")); err != nil {
			return nil, err
		}
	}
	for _, b := range []struct {
		path        string
		open, close func(*os.File) error
	}{
		{p.cpu, func(f *os.File) error { return pprof.StartCPUProfile(f) }, func(*os.File) error { pprof.StopCPUProfile(); return nil }},
		{p.trace, func(f *os.File) error { return trace.Start(f) }, func(*os.File) error { trace.Stop(); return nil }},
		{p.allocs, none, writeProfile("allocs")},
		{p.mutex, none, writeProfile("mutex")},
		{p.block, none, writeProfile("block")},
	} {
		if err := begin(b.path, b.open, b.close); err != nil {
			return nil, err
		}
	}
	return stop, nil
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(write(f), f.Close())
}

// cost is what the process spent on memory during a measurement (page
// faults included), and how long its goroutines waited for a CPU once
// woken.
type cost struct {
	mallocs, bytes uint64
	gcs            uint32
	pause          time.Duration
	waits          waits
	faults         int64
}

func readCost() cost {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return cost{mallocs: m.Mallocs, bytes: m.TotalAlloc, gcs: m.NumGC, pause: time.Duration(m.PauseTotalNs), waits: readWaits(),
		faults: benchproc.UsageOf(os.Getpid()).Faults}
}

func (c cost) minus(o cost) cost {
	return cost{mallocs: c.mallocs - o.mallocs, bytes: c.bytes - o.bytes, gcs: c.gcs - o.gcs, pause: c.pause - o.pause, waits: c.waits.minus(o.waits), faults: c.faults - o.faults}
}

func (c *cost) add(o cost) {
	c.mallocs += o.mallocs
	c.bytes += o.bytes
	c.gcs += o.gcs
	c.pause += o.pause
	c.waits = c.waits.plus(o.waits)
	c.faults += o.faults
}

// waits is the runtime's histogram of how long goroutines stayed
// runnable before they ran (/sched/latencies, sampled): the time a woken
// goroutine waits for a CPU, which on a small virtual machine includes
// waking an idle one.
type waits struct {
	counts  []uint64
	buckets []float64 // seconds; len(counts)+1 boundaries
}

func readWaits() waits {
	m := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64Histogram {
		return waits{}
	}
	h := m[0].Value.Float64Histogram()
	return waits{counts: slices.Clone(h.Counts), buckets: h.Buckets}
}

func (w waits) minus(o waits) waits { return w.combine(o, -1) }
func (w waits) plus(o waits) waits  { return w.combine(o, +1) }

func (w waits) combine(o waits, sign int) waits {
	if len(o.counts) == 0 {
		return w
	}
	if len(w.counts) == 0 {
		w = waits{counts: make([]uint64, len(o.counts)), buckets: o.buckets}
	}
	out := waits{counts: make([]uint64, len(w.counts)), buckets: w.buckets}
	for i := range w.counts {
		if sign < 0 {
			out.counts[i] = w.counts[i] - o.counts[i]
		} else {
			out.counts[i] = w.counts[i] + o.counts[i]
		}
	}
	return out
}

// at is the q-quantile's bucket's upper bound (its lower bound for the
// last, unbounded one; 0 with no samples).
func (w waits) at(q float64) time.Duration {
	var total uint64
	for _, c := range w.counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	want, seen := uint64(q*float64(total)), uint64(0)
	for i, c := range w.counts {
		if seen += c; seen > want {
			bound := w.buckets[i+1]
			if math.IsInf(bound, 1) {
				bound = w.buckets[i]
			}
			return time.Duration(bound * float64(time.Second))
		}
	}
	return 0
}
