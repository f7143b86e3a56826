//go:build unix

package dirlock

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive lock on f without waiting (flock: released by
// the kernel when the process ends).
func lock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
