package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Binaries builds the main packages pkgs (import paths, or paths relative
// to the repository's root) without the race detector and returns the
// directory holding them, each named after its package's last element.
//
// The directory is kept between runs, one per checkout: `go build -o`
// leaves a binary that is already up to date untouched, so only the first
// test process of a run links (a link is seconds of CPU per binary), and a
// lock keeps two processes from writing one file at once.
func Binaries(pkgs ...string) (string, error) {
	key := strings.Join(pkgs, " ")
	built.Lock()
	defer built.Unlock()
	if dir, ok := built.dirs[key]; ok {
		return dir, nil
	}
	dir, err := buildBinaries(pkgs)
	if err == nil {
		built.dirs[key] = dir
	}
	return dir, err
}

// built remembers what this process has built already: asking go build
// again costs a second of CPU even when nothing is stale.
var built = struct {
	sync.Mutex
	dirs map[string]string
}{dirs: map[string]string{}}

func buildBinaries(pkgs []string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(base, "voiceai-test-bins", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	now := time.Now()
	_ = os.Chtimes(lock.Name(), now, now) // this checkout's binaries are in use
	pruneUnused(filepath.Dir(dir), now.Add(-binariesKeptFor))
	// Without DWARF: a third less link work, and a stack trace needs none.
	args := append([]string{"build", "-ldflags=-w", "-o", dir + string(filepath.Separator)}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %v: %w\n%s", pkgs, err, out)
	}
	return dir, nil
}

// binariesKeptFor is how long the binaries of a checkout no test has used
// are kept: each checkout (a worktree, a CI clone) has its own, a few
// hundred megabytes, which would otherwise pile up.
const binariesKeptFor = 24 * time.Hour

// pruneUnused removes the binaries of every checkout under base last used
// before cutoff (its lock file's time), unless a build holds its lock.
func pruneUnused(base string, cutoff time.Time) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		lockPath := filepath.Join(base, e.Name(), ".lock")
		info, err := os.Stat(lockPath)
		if !e.IsDir() || err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		lock, err := os.Open(lockPath)
		if err != nil {
			continue
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(filepath.Join(base, e.Name()))
		}
		lock.Close()
	}
}
