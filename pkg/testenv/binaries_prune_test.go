package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The binaries of a checkout unused for a day are removed, unless a build
// holds them; those used since are kept.
func TestPruneUnusedBinaries(t *testing.T) {
	base := t.TempDir()
	now := time.Now()
	checkout := func(name string, lastUsed time.Time) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{".lock", "voiceai"} {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(filepath.Join(dir, ".lock"), lastUsed, lastUsed); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	stale := checkout("stale", now.Add(-48*time.Hour))
	recent := checkout("recent", now.Add(-time.Hour))
	building := checkout("building", now.Add(-48*time.Hour))
	held, err := os.Open(filepath.Join(building, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	pruneUnused(base, now.Add(-binariesKeptFor))
	for dir, kept := range map[string]bool{stale: false, recent: true, building: true} {
		if _, err := os.Stat(filepath.Join(dir, "voiceai")); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(dir), err == nil, kept)
		}
	}
}
