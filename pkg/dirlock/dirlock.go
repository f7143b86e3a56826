// Package dirlock keeps a data directory to one process: two processes
// writing one JetStream store and one SQLite store each believe their own
// state, and the loser of that race loses acknowledged writes.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrInUse is Acquire's answer for a directory another process holds.
var ErrInUse = errors.New("the data directory is in use by another process")

// fileName is the lock file Acquire keeps in the directory.
const fileName = ".lock"

// Acquire takes dir for this process until release is called (or the
// process ends: the operating system lets go of the lock with it, so a
// process killed leaves no stale lock behind). Another process holding
// it is ErrInUse, naming its pid.
func Acquire(dir string) (release func(), err error) {
	path := filepath.Join(dir, fileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := lock(f); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("%w: %s (held by pid %s; stop it, or use another VOICEAI_DATA_DIR)", ErrInUse, dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	// Who holds it, for the next process's message.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = unlock(f)
		_ = f.Close()
	}, nil
}

// errLocked is lock's answer when another holds the lock.
var errLocked = errors.New("locked")
