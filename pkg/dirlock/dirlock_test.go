package dirlock

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A directory is held by one holder at a time, named in the refusal; once
// released, it can be taken again.
func TestADirectoryIsHeldByOneHolder(t *testing.T) {
	dir := t.TempDir()
	release, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("a second holder: %v, want ErrInUse naming this pid", err)
	}
	release()
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// Another process is refused while this one holds the directory: the
// case that matters (two platforms on one data directory).
func TestAnotherProcessIsRefused(t *testing.T) {
	if os.Getenv("DIRLOCK_CHILD") != "" {
		if _, err := Acquire(os.Getenv("DIRLOCK_CHILD")); errors.Is(err, ErrInUse) {
			os.Exit(3)
		}
		os.Exit(0)
	}
	dir := t.TempDir()
	release, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAnotherProcessIsRefused$")
	cmd.Env = append(os.Environ(), "DIRLOCK_CHILD="+dir)
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("the other process: %v, want refused (exit 3)", err)
	}
}
