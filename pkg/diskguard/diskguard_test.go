package diskguard

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voiceai-platform/voiceai/pkg/apperr"
	"github.com/voiceai-platform/voiceai/pkg/testkit"
)

// fakeDisk is a file system whose free space the test sets.
type fakeDisk struct {
	free  atomic.Uint64
	fails atomic.Bool
}

func (d *fakeDisk) read() (uint64, error) {
	if d.fails.Load() {
		return 0, errors.New("statfs: input/output error")
	}
	return d.free.Load(), nil
}

func start(t *testing.T, disk *fakeDisk, floor uint64) (*Guard, *testkit.LogBuffer, *prometheus.Registry) {
	t.Helper()
	logs, reg := &testkit.LogBuffer{}, prometheus.NewRegistry()
	g := Start(t.Context(), Options{Dir: "/data", Floor: floor, Every: 5 * time.Millisecond, Free: disk.read,
		Log: slog.New(slog.NewTextHandler(logs, nil)), Registry: reg})
	return g, logs, reg
}

// count is how many lines of logs say what.
func count(logs *testkit.LogBuffer, what string) int { return strings.Count(logs.String(), what) }

// Under the floor, writes are refused with storage_full, said once in the
// log; above it again, they are accepted by themselves, said once too.
func TestWritesAreHeldUnderTheFloorAndResumeOnceSpaceIsFreed(t *testing.T) {
	disk := &fakeDisk{}
	disk.free.Store(10 << 20)
	g, logs, reg := start(t, disk, 1<<20)
	if err := g.Check(); err != nil {
		t.Fatalf("10 MiB free over a 1 MiB floor: %v", err)
	}

	disk.free.Store(512 << 10)
	testkit.Eventually(t, time.Second, "writes held under the floor", func() bool { return errors.Is(g.Check(), apperr.StorageFull) })
	if got := gauge(t, reg, "voiceai_disk_writes_held"); got != 1 {
		t.Errorf("voiceai_disk_writes_held = %v while held", got)
	}
	if got := gauge(t, reg, "voiceai_disk_free_bytes"); got != 512<<10 {
		t.Errorf("voiceai_disk_free_bytes = %v; want %d", got, 512<<10)
	}
	testkit.Eventually(t, time.Second, "several looks while held", func() bool { return g.Free() == 512<<10 && count(logs, "disk nearly full") == 1 })

	disk.free.Store(2 << 20)
	testkit.Eventually(t, time.Second, "writes accepted again once space is freed", func() bool { return g.Check() == nil })
	if n := count(logs, "disk nearly full"); n != 1 {
		t.Errorf("the hold logged %d times; want once", n)
	}
	if n := count(logs, "disk space freed"); n != 1 {
		t.Errorf("the release logged %d times; want once", n)
	}
}

// A guard that cannot read the free space holds nothing (it must not stop
// a platform it cannot see), says so once, and guards again once it can.
func TestAnUnreadableDiskHoldsNothing(t *testing.T) {
	disk := &fakeDisk{}
	disk.free.Store(0)
	g, logs, _ := start(t, disk, 1<<20)
	if !errors.Is(g.Check(), apperr.StorageFull) {
		t.Fatal("no space at start: writes not held from the first look")
	}
	disk.fails.Store(true)
	testkit.Eventually(t, time.Second, "writes not held while the disk cannot be read", func() bool { return g.Check() == nil })
	disk.fails.Store(false)
	testkit.Eventually(t, time.Second, "writes held again once it can", func() bool { return errors.Is(g.Check(), apperr.StorageFull) })
	if n := count(logs, "cannot read the free space"); n != 1 {
		t.Errorf("the unreadable disk logged %d times; want once", n)
	}
}

// A floor of 0 never holds; a nil guard (a gateway without one) neither.
func TestNoFloorNoGuard(t *testing.T) {
	disk := &fakeDisk{}
	g, _, _ := start(t, disk, 0)
	if g.Check() != nil {
		t.Fatal("floor 0 held writes")
	}
	var none *Guard
	if none.Check() != nil {
		t.Fatal("a nil guard held writes")
	}
}

// The real reading: the free space of the test's own directory.
func TestFreeSpaceOfARealDirectory(t *testing.T) {
	free, err := freeSpace(t.TempDir())
	if err != nil {
		t.Skipf("free space not read here: %v", err)
	}
	if free == 0 {
		t.Fatal("0 bytes free in the test's directory")
	}
	g := Start(context.Background(), Options{Dir: t.TempDir(), Floor: 1})
	if g.Check() != nil || g.Free() == 0 {
		t.Fatalf("a 1-byte floor on %d free: %v", g.Free(), g.Check())
	}
	if _, err := freeSpace("/no/such/dir/" + strings.Repeat("x", 8)); err == nil {
		t.Error("a missing directory read without error")
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not registered", name)
	return 0
}
