// Package diskguard holds the platform's writes back before the disk
// under its data fills. When a write fails for want of space, nats-server
// keeps that stream's write error until the server restarts: every later
// append to the stream waits out its time-out, even once space is freed.
// The store's files share the disk. So, like a database's flood-stage
// watermark, writes are refused at the edge (503 storage_full) while the
// free space is under a floor, reads go on, and writes resume by
// themselves once space is freed.
package diskguard

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/obs"
	"github.com/voiceai-platform/voiceai/pkg/tick"
)

// Options configure a Guard.
type Options struct {
	// Dir is the directory whose file system is watched.
	Dir string
	// Floor is the free space, in bytes, under which writes are held; 0
	// never holds them.
	Floor uint64
	// Every is how often the free space is read; 0 is every 100 ms. The
	// floor must outlast what writes fill between two readings (at 1 s,
	// a test's 8 MiB floor was crossed by ingests on a busy machine): a
	// reading is one statfs, microseconds.
	Every time.Duration
	// Free reads the free space (nil: the file system's, for an
	// unprivileged user); tests replace it.
	Free func() (uint64, error)
	Log  *slog.Logger
	// Registry, when set, gets voiceai_disk_free_bytes and
	// voiceai_disk_writes_held.
	Registry prometheus.Registerer
}

// Guard says whether writes may go on.
type Guard struct {
	o    Options
	held atomic.Bool
	free atomic.Uint64
	// unread is set while the free space cannot be read: writes are
	// not held for it (a guard must not stop a platform it cannot see).
	unread atomic.Bool
}

// Start reads the free space once, then every o.Every until ctx ends.
func Start(ctx context.Context, o Options) *Guard {
	if o.Every <= 0 {
		o.Every = 100 * time.Millisecond
	}
	if o.Free == nil {
		dir := o.Dir
		o.Free = func() (uint64, error) { return freeSpace(dir) }
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{o: o}
	if o.Registry != nil {
		obs.Register(o.Registry, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "voiceai_disk_free_bytes",
			Help: "Free space of the file system under the data directory"}, func() float64 { return float64(g.free.Load()) }))
		obs.Register(o.Registry, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "voiceai_disk_writes_held",
			Help: "1 while writes are refused because the free space is under VOICEAI_DISK_FREE_MIN_BYTES"}, func() float64 {
			if g.held.Load() {
				return 1
			}
			return 0
		}))
	}
	if o.Floor == 0 {
		return g
	}
	g.look()
	go tick.Every(ctx, o.Every, g.look)
	return g
}

// look reads the free space and holds or releases writes.
func (g *Guard) look() {
	free, err := g.o.Free()
	if err != nil {
		if !g.unread.Swap(true) {
			g.o.Log.Warn("disk guard: cannot read the free space; writes are not held for it", "dir", g.o.Dir, "err", err)
		}
		g.held.Store(false)
		return
	}
	g.unread.Store(false)
	g.free.Store(free)
	switch hold := free < g.o.Floor; {
	case hold && !g.held.Swap(true):
		g.o.Log.Warn("disk nearly full: writes are refused (503 storage_full) until space is freed; reads go on",
			"dir", g.o.Dir, "free_bytes", free, "floor_bytes", g.o.Floor)
	case !hold && g.held.Swap(false):
		g.o.Log.Info("disk space freed: writes accepted again", "dir", g.o.Dir, "free_bytes", free, "floor_bytes", g.o.Floor)
	}
}

// Check is nil while writes may go on, else apperr.StorageFull.
func (g *Guard) Check() error {
	if g != nil && g.held.Load() {
		return apperr.StorageFull
	}
	return nil
}

// Free is the free space last read, in bytes (0 before any reading).
func (g *Guard) Free() uint64 { return g.free.Load() }

// errUnsupported is freeSpace's answer where the platform cannot tell.
var errUnsupported = errors.New("free space is not read on this platform")
