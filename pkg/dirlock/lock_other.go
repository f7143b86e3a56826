//go:build !unix

package dirlock

import "os"

// lock does nothing where flock is not: the directory is not guarded.
func lock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }
