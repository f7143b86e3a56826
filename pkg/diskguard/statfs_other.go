//go:build !unix

package diskguard

func freeSpace(string) (uint64, error) { return 0, errUnsupported }
