package ordlist

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// listModel drives an List and a plain slice with the same changes
// and checks that they hold the same ordinals, and that a search, a
// forward and a backward walk from every position agree with the slice.
type listModel struct {
	t    testing.TB
	l    List
	want []uint32
	next uint32
	// places is each ordinal's index in want, made again after want changes
	// (nil until then).
	places map[uint32]int
}

// placesOf is each ordinal's index in want.
func (m *listModel) placesOf() map[uint32]int {
	if m.places == nil {
		m.places = make(map[uint32]int, len(m.want))
		for j, o := range m.want {
			m.places[o] = j
		}
	}
	return m.places
}

// removeAt removes the model's i-th ordinal from the list and the slice.
func (m *listModel) removeAt(i int) {
	m.l.Remove(m.cursor(i))
	m.want, m.places = slices.Delete(m.want, i, i+1), nil
}

// fresh is an ordinal not in the list: the list's ordinals stay distinct,
// so a search can be told the model's index to stop at.
func (m *listModel) fresh(rng *rand.Rand) uint32 {
	m.next += 1 + uint32(rng.IntN(3))
	if rng.IntN(8) == 0 {
		m.next += uint32(rng.IntN(1 << 20)) // a rare word's gap
	}
	return m.next
}

func (m *listModel) step(rng *rand.Rand) {
	switch op := rng.IntN(10); {
	case op < 6 || len(m.want) == 0:
		o := m.fresh(rng)
		if rng.IntN(2) == 0 {
			m.l.AppendBuilding(o)
		} else {
			m.l.Append(o)
		}
		m.want, m.places = append(m.want, o), nil
		if rng.IntN(64) == 0 {
			m.l.Trim()
		}
	case op < 8:
		i := rng.IntN(len(m.want) + 1)
		if rng.IntN(2) == 0 {
			i = max(0, len(m.want)-1-rng.IntN(min(len(m.want), 70))) // a call that ended out of order
		}
		o := m.fresh(rng)
		m.l.Insert(m.cursor(i), o)
		m.want, m.places = slices.Insert(m.want, i, o), nil
	default:
		m.removeAt(rng.IntN(len(m.want)))
	}
}

// cursor is the list's cursor for the model's index i, found by Search.
func (m *listModel) cursor(i int) Cursor {
	index := m.placesOf()
	return m.l.Search(func(o uint32) bool { return index[o] >= i })
}

func (m *listModel) check() {
	m.t.Helper()
	if got := m.l.AppendTo(nil); !slices.Equal(got, m.want) || m.l.Len() != len(m.want) {
		m.t.Fatalf("the list holds %d %v, want %d %v", m.l.Len(), got, len(m.want), m.want)
	}
	if len(m.want) > 0 && m.l.last != m.want[len(m.want)-1] {
		m.t.Fatalf("last %d, want %d", m.l.last, m.want[len(m.want)-1])
	}
	index := m.placesOf()
	for i := 0; i <= len(m.want); i += 1 + len(m.want)/50 {
		c := m.cursor(i)
		var fwd, back []uint32
		m.l.Forward(c, func(o uint32) bool { fwd = append(fwd, o); return true })
		m.l.Backward(c, func(o uint32) bool { back = append(back, o); return true })
		slices.Reverse(back)
		var sought []uint32
		m.l.Seek(func(o uint32) bool { return index[o] >= i }, func(o uint32) bool { sought = append(sought, o); return true })
		if !slices.Equal(sought, fwd) {
			m.t.Fatalf("seek from %d: %v, want %v", i, sought, fwd)
		}
		if !slices.Equal(fwd, m.want[i:]) || !slices.Equal(back, m.want[:i]) {
			m.t.Fatalf("from %d: forward %v, backward %v, want %v | %v", i, fwd, back, m.want[i:], m.want[:i])
		}
	}
	// A reader finds, for targets going back in steps of every size, the
	// last ordinal standing at or before each.
	r := m.l.Reverse()
	for target, step := len(m.want)-1, 1; target >= -1; target, step = target-step, step%7+1 {
		o, ok := r.Find(func(o uint32) bool { return index[o] > target })
		if target < 0 {
			if ok {
				m.t.Fatalf("reverse found %d before the first", o)
			}
			break
		}
		if !ok || o != m.want[target] {
			m.t.Fatalf("reverse to %d: %d %v, want %d", target, o, ok, m.want[target])
		}
	}
}

func TestOrdListAgreesWithASlice(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 9))
		m := &listModel{t: t}
		for range 3000 {
			m.step(rng)
			if rng.IntN(50) == 0 {
				m.check()
			}
			if rng.IntN(400) == 0 { // read back whole, as a snapshot is, then changed further
				m.l, _ = Of(m.l.AppendTo(nil), nil)
				m.check()
			}
		}
		m.check()
		for len(m.want) > 0 { // emptied to the last
			m.removeAt(rng.IntN(len(m.want)))
		}
		m.check()
		m.step(rng) // and used again
		m.check()
	}
}

func TestOrdListStopsWhereToldTo(t *testing.T) {
	var l List
	for o := range uint32(300) {
		l.Append(o * 2)
	}
	c := l.Search(func(o uint32) bool { return o >= 200 })
	stop := l.Forward(c, func(o uint32) bool { return o < 210 })
	var at uint32
	l.Forward(stop, func(o uint32) bool { at = o; return false })
	if at != 210 {
		t.Fatalf("forward stopped before %d, want 210", at)
	}
	var seen []uint32
	l.Backward(c, func(o uint32) bool { seen = append(seen, o); return len(seen) < 3 })
	if !slices.Equal(seen, []uint32{198, 196, 194}) {
		t.Fatalf("backward saw %v", seen)
	}
}

// A list in arrival order keeps a byte or two per ordinal, not four.
func TestOrdListIsCompact(t *testing.T) {
	var l List
	rng := rand.New(rand.NewPCG(3, 4))
	o := uint32(0)
	for range 100_000 {
		o += 1 + uint32(rng.IntN(100))
		l.Append(o)
	}
	if per := float64(cap(l.data)+8*cap(*l.blocks)) / 100_000; per > 2 {
		t.Fatalf("%.2f bytes per ordinal", per)
	}
}

// A list built whole (AppendBuilding), then trimmed, holds what one
// appended to holds, with no more room than Append leaves, and its bytes
// were copied about once, not eight times.
func TestABuiltListIsTrimmed(t *testing.T) {
	var built, appended List
	grown := 0
	for o := range uint32(100_000) {
		before := cap(built.data)
		built.AppendBuilding(o * 3)
		appended.Append(o * 3)
		if cap(built.data) != before {
			grown += before
		}
	}
	if grown > 2*len(built.data) {
		t.Errorf("building copied %d bytes for a list of %d", grown, len(built.data))
	}
	built.Trim()
	if n := len(built.data); cap(built.data) > n+n/8+8 || !slices.Equal(built.AppendTo(nil), appended.AppendTo(nil)) {
		t.Errorf("built and trimmed: %d bytes of room for %d, %d ordinals; appended: %d ordinals",
			cap(built.data), n, built.Len(), appended.Len())
	}
}

func FuzzOrdList(f *testing.F) {
	f.Add(uint64(1), uint16(500))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		rng := rand.New(rand.NewPCG(seed, 1))
		m := &listModel{t: t}
		for range int(steps) % 2000 {
			m.step(rng)
		}
		m.check()
	})
}
