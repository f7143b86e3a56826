package testkit

// IDs is the id of each of xs, in their order: what a test compares a
// listing by.
func IDs[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}
