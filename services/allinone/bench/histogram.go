package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// latencies are one measurement's samples, sorted once.
type latencies []time.Duration

func sorted(s []time.Duration) latencies {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// at is the q-quantile (0 < q < 1) by nearest rank.
func (l latencies) at(q float64) time.Duration {
	return l[int(math.Round(float64(len(l)-1)*q))]
}

// Buckets are half octaves (each bound √2 times the last), from 1 µs:
// fine enough to tell a p99 three times the p50 from one seven times it,
// coarse enough to fit a screen.
const bucketsPerOctave = 2

func bucketOf(d time.Duration) int {
	us := max(float64(d)/float64(time.Microsecond), 1)
	return int(math.Floor(math.Log2(us) * bucketsPerOctave))
}

func bucketFloor(i int) time.Duration {
	return time.Duration(math.Pow(2, float64(i)/bucketsPerOctave) * float64(time.Microsecond))
}

// histogram prints the samples' counts per bucket with a bar scaled to the
// fullest bucket, marking where p50, p99 and p99.9 fall.
func (l latencies) histogram(w io.Writer, title string) {
	const width = 40
	first, last := bucketOf(l[0]), bucketOf(l[len(l)-1])
	counts := make([]int, last-first+1)
	for _, d := range l {
		counts[bucketOf(d)-first]++
	}
	most := slices.Max(counts)
	marks := map[int][]string{}
	for _, m := range []struct {
		name string
		q    float64
	}{{"p50", .50}, {"p90", .90}, {"p99", .99}, {"p99.9", .999}} {
		i := bucketOf(l.at(m.q)) - first
		marks[i] = append(marks[i], m.name)
	}
	fmt.Fprintf(w, "%s: %d requests, half-octave buckets\n", title, len(l))
	fmt.Fprintf(w, "  %10s  %10s  %6s\n", "from", "below", "count")
	for i, c := range counts {
		bar := strings.Repeat("#", (c*width+most-1)/most)
		fmt.Fprintf(w, "  %10s  %10s  %6d  %-*s %s\n", us(bucketFloor(first+i)), us(bucketFloor(first+i+1)), c, width, bar, strings.Join(marks[i], " "))
	}
}
