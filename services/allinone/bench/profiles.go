package main

import (
	"errors"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"
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

// cost is what the process spent on memory during a measurement.
type cost struct {
	mallocs, bytes uint64
	gcs            uint32
	pause          time.Duration
}

func readCost() cost {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return cost{mallocs: m.Mallocs, bytes: m.TotalAlloc, gcs: m.NumGC, pause: time.Duration(m.PauseTotalNs)}
}

func (c cost) minus(o cost) cost {
	return cost{mallocs: c.mallocs - o.mallocs, bytes: c.bytes - o.bytes, gcs: c.gcs - o.gcs, pause: c.pause - o.pause}
}

func (c *cost) add(o cost) {
	c.mallocs += o.mallocs
	c.bytes += o.bytes
	c.gcs += o.gcs
	c.pause += o.pause
}
