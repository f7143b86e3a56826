// Package textsim measures how alike two texts' words are: the one
// measure test-run bucketing and ticket clustering share.
package textsim

// Jaccard is |a∩b| / |a∪b| of two word sets; two empty sets share no
// word, so they score 0 (a caller that counts two silences alike says so).
func Jaccard(a, b map[string]bool) float64 {
	if len(a) < len(b) {
		a, b = b, a
	}
	shared := 0
	for w := range b {
		if a[w] {
			shared++
		}
	}
	union := len(a) + len(b) - shared
	if union == 0 {
		return 0
	}
	return float64(shared) / float64(union)
}
