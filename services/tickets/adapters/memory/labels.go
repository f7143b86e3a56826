package memory

import (
	"math"

	"github.com/voiceai-platform/voiceai/services/tickets/adapters/ordlist"
)

// A workspace's listed entries carry labels, numbers in the listing's
// order (the order-maintenance problem): an entry that comes last takes
// the last label plus labelGap; one that comes between two takes a label
// between theirs, and when they have none free, the entries around it
// are spread out again over a window that doubles until it has room.
// So a comparison of two entries, however late either came, is one read
// of a dense array rather than of their creation times and ids.

// labelGap is the distance an appended entry keeps from the one before:
// room for 32 entries coming in between at the same place before any
// window is spread out.
const labelGap = 1 << 32

// minSpread is the smallest distance a spread window leaves between two
// of its entries.
const minSpread = 1 << 16

// place lists e in the list of all, at its place, and labels it.
func (sp *space) place(e *entry) {
	l := &sp.all
	if l.Len() == 0 || sp.before(l.Last(), e.created, e.id) {
		label := uint64(labelGap)
		if l.Len() > 0 {
			if sp.labels[l.Last()] > math.MaxUint64-labelGap {
				sp.relabelAll()
			}
			label = sp.labels[l.Last()] + labelGap
		}
		sp.append(l, e.ord)
		sp.labels[e.ord] = label
		return
	}
	c := l.Search(func(o uint32) bool { return !sp.before(o, e.created, e.id) })
	pred, hasPred := neighbours(l, c, 1, false)
	succ, _ := neighbours(l, c, 1, true)
	lo := uint64(0)
	if hasPred {
		lo = sp.labels[pred[0]]
	}
	hi := sp.labels[succ[0]]
	l.Insert(c, e.ord)
	if hi-lo >= 2 {
		sp.labels[e.ord] = lo + (hi-lo)/2
		return
	}
	sp.spread(e)
}

// neighbours are up to n ordinals of l from cursor c, the nearest first:
// those before c, or from c on when forward; and whether there were n.
func neighbours(l *ordlist.List, c ordlist.Cursor, n int, forward bool) ([]uint32, bool) {
	out := make([]uint32, 0, n)
	collect := func(o uint32) bool {
		out = append(out, o)
		return len(out) < n
	}
	if forward {
		l.Forward(c, collect)
	} else {
		l.Backward(c, collect)
	}
	return out, len(out) == n
}

// spread labels e, just listed between two entries with no label free
// between them, by spreading the labels of the entries around it evenly
// over their window's room, doubling the window until there is
// minSpread between each (or, when the window is the whole list, by
// labelling it anew).
func (sp *space) spread(e *entry) {
	l := &sp.all
	c := l.Search(func(o uint32) bool { return !sp.before(o, e.created, e.id) }) // e's cursor
	for k := 16; ; k *= 2 {
		left, leftBound := neighbours(l, c, k+1, false)
		right, rightBound := neighbours(l, c, k+2, true) // e, k more, then the bound
		lo, hi := uint64(0), uint64(0)
		if leftBound {
			lo, left = sp.labels[left[k]], left[:k]
		}
		if rightBound {
			hi, right = sp.labels[right[k+1]], right[:k+1]
		} else {
			// The window reaches the end: it may take the room an append
			// would, up to a gap past the last.
			if last := sp.labels[l.Last()]; last <= math.MaxUint64-labelGap {
				hi = last + labelGap
			}
		}
		step := (hi - lo) / uint64(len(left)+len(right)+1)
		if hi > lo && step >= minSpread {
			label := lo
			for i := len(left) - 1; i >= 0; i-- {
				label += step
				sp.labels[left[i]] = label
			}
			for _, o := range right {
				label += step
				sp.labels[o] = label
			}
			return
		}
		if !leftBound && !rightBound {
			sp.relabelAll()
			return
		}
	}
}

// relabelAll labels every listed entry labelGap apart.
func (sp *space) relabelAll() {
	for i, o := range sp.all.AppendTo(nil) {
		sp.labels[o] = uint64(i+1) * labelGap
	}
}
