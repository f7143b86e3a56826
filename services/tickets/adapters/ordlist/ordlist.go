// Package ordlist keeps sorted sets of ordinals compressed: the posting
// lists of the tickets service's in-memory indexes (a conversation's
// search words, a ticket's terms and trigrams).
package ordlist

import (
	"encoding/binary"
	"slices"
	"sort"
)

// List is a sequence of ordinals kept compressed: an index's list holds
// its items in listing order, which is nearly the order they arrived in,
// so most differences between neighbours take a byte where a plain
// []uint32 takes four (the lists are most of an index's memory at a
// million items).
//
// The ordinals are cut into blocks of up to maxBlock: each block is its
// first ordinal as a uvarint, then the differences to the one before as
// zigzag varints, all blocks one after the other in data. A search is a
// binary search over the blocks' first ordinals, then a decode of one
// block; an insertion or a removal re-encodes one block and moves the
// bytes after it, so the usual change (at the newest end) costs a block.
type List struct {
	n, last uint32  // how many; the last ordinal
	data    []byte  // the blocks
	blocks  *[]span // where each block starts; nil while there is only one (a pointer: most lists hold an ordinal or two, and 16 bytes a list count)
}

// span is where a block starts in data, and how many ordinals it holds.
type span struct{ off, n uint32 }

const (
	fullBlock = 64            // an appended ordinal past this many starts a new block
	maxBlock  = 2 * fullBlock // an insertion past this many splits a block
)

// Cursor is the position of an ordinal: its block, and its index in
// that block. The end of the list is the block past the last, index 0.
type Cursor struct{ b, i int }

// Last is the last ordinal; 0 in an empty list.
func (l *List) Last() uint32 { return l.last }

// Len is how many ordinals the list holds.
func (l *List) Len() int { return int(l.n) }

func (l *List) numBlocks() int {
	if l.blocks == nil {
		if l.n == 0 {
			return 0
		}
		return 1
	}
	return len(*l.blocks)
}

func (l *List) block(k int) span {
	if l.blocks == nil {
		return span{0, l.n}
	}
	return (*l.blocks)[k]
}

// End is the cursor past the last ordinal.
func (l *List) End() Cursor { return Cursor{l.numBlocks(), 0} }

// first is block k's first ordinal.
func (l *List) first(k int) uint32 {
	v, _ := binary.Uvarint(l.data[l.block(k).off:])
	return uint32(v)
}

// decode writes block k's ordinals into buf and returns them.
func (l *List) decode(k int, buf *[maxBlock + 1]uint32) []uint32 {
	blk := l.block(k)
	b := l.data[blk.off:]
	v, w := binary.Uvarint(b)
	b = b[w:]
	out := buf[:blk.n]
	out[0] = uint32(v)
	for i := 1; i < len(out); i++ {
		d, w := binary.Varint(b)
		b = b[w:]
		out[i] = uint32(int64(out[i-1]) + d)
	}
	return out
}

// encodeBlock appends ords as one block to out.
func encodeBlock(out []byte, ords []uint32) []byte {
	out = binary.AppendUvarint(out, uint64(ords[0]))
	for i := 1; i < len(ords); i++ {
		out = binary.AppendVarint(out, int64(ords[i])-int64(ords[i-1]))
	}
	return out
}

// Append adds o after the last ordinal.
func (l *List) Append(o uint32) { l.append(o, 8) }

// AppendBuilding is Append for a list being built whole from its first
// ordinal to its last (a replay's): its bytes grow by doubling where
// Append's grow by an eighth, which copies a large list eight times
// over while it is built. Trim then gives back the room left over.
func (l *List) AppendBuilding(o uint32) { l.append(o, 1) }

// Trim gives back what room l's bytes have past an eighth of what they
// hold, as Append leaves them.
func (l *List) Trim() {
	if cap(l.data) > len(l.data)+len(l.data)/8+8 {
		l.data = slices.Clone(l.data)
	}
}

// append is Append, growing the bytes by 1/growth of what they hold.
func (l *List) append(o uint32, growth int) {
	switch {
	case l.n == 0:
		l.data = binary.AppendUvarint(l.data[:0], uint64(o))
		l.blocks = nil
	case l.block(l.numBlocks()-1).n < fullBlock:
		var b [binary.MaxVarintLen64]byte
		l.data = appendGrowing(l.data, binary.AppendVarint(b[:0], int64(o)-int64(l.last)), growth)
		if l.blocks != nil {
			bs := *l.blocks
			bs[len(bs)-1].n++
		} // else the one block's count is l.n
	default:
		l.materialize()
		*l.blocks = append(*l.blocks, span{off: uint32(len(l.data)), n: 1})
		var b [binary.MaxVarintLen64]byte
		l.data = appendGrowing(l.data, binary.AppendUvarint(b[:0], uint64(o)), growth)
	}
	l.n++
	l.last = o
}

// Of is the list of ords, its bytes exactly sized (a snapshot's
// lists are read whole: appended one by one, each would grow many times),
// encoded in scratch first, which it returns for the next list.
func Of(ords []uint32, scratch []byte) (List, []byte) {
	if len(ords) == 0 {
		return List{}, scratch
	}
	var blocks []span
	if len(ords) > fullBlock {
		blocks = make([]span, 0, (len(ords)+fullBlock-1)/fullBlock)
	}
	scratch = scratch[:0]
	for start := 0; start < len(ords); start += fullBlock {
		end := min(start+fullBlock, len(ords))
		if blocks != nil {
			blocks = append(blocks, span{off: uint32(len(scratch)), n: uint32(end - start)})
		}
		scratch = encodeBlock(scratch, ords[start:end])
	}
	l := List{n: uint32(len(ords)), last: ords[len(ords)-1], data: slices.Clone(scratch)}
	if blocks != nil {
		l.blocks = &blocks
	}
	return l, scratch
}

// appendGrowing appends b to data, growing a full data by 1/growth of
// what it holds (Append's eighth, rather than append's half to double: a
// common word's list holds a million).
func appendGrowing(data, b []byte, growth int) []byte {
	if len(data)+len(b) > cap(data) {
		grown := make([]byte, len(data), len(data)+max(len(b), len(data)/growth, 8))
		copy(grown, data)
		data = grown
	}
	return append(data, b...)
}

// materialize gives a one-block list its blocks slice.
func (l *List) materialize() {
	if l.blocks == nil {
		l.blocks = &[]span{{0, l.n}}
	}
}

// Search is the cursor of the first ordinal for which after is true,
// after being false then true along the list; the end if none.
func (l *List) Search(after func(uint32) bool) Cursor {
	var buf [maxBlock + 1]uint32
	c, _ := l.find(after, &buf)
	return c
}

// Seek calls fn, as Forward does, from the first ordinal for which after
// is true (Search's), and returns the cursor fn stopped at: Forward after
// Search, decoding the block they share once.
func (l *List) Seek(after func(uint32) bool, fn func(uint32) bool) Cursor {
	var buf [maxBlock + 1]uint32
	c, ords := l.find(after, &buf)
	return l.forward(c, ords, fn)
}

// find is Search, with the block of the cursor decoded into buf (none at
// the end).
func (l *List) find(after func(uint32) bool, buf *[maxBlock + 1]uint32) (Cursor, []uint32) {
	nb := l.numBlocks()
	// The usual search (an insertion near the newest end, a page's start
	// there) ends in the last block: one test of its first ordinal saves
	// the binary search its own tests, each a read of an entry elsewhere
	// in memory.
	k := nb
	if nb > 0 && after(l.first(nb-1)) {
		k = sort.Search(nb-1, func(k int) bool { return after(l.first(k)) })
	}
	if k > 0 {
		ords := l.decode(k-1, buf)
		// A binary search here too: each test reads an entry elsewhere in memory.
		if i := 1 + sort.Search(len(ords)-1, func(i int) bool { return after(ords[i+1]) }); i < len(ords) {
			return Cursor{k - 1, i}, ords
		}
	}
	if k == nb {
		return Cursor{k, 0}, nil
	}
	return Cursor{k, 0}, l.decode(k, buf)
}

// Forward calls fn with each ordinal from c on until fn returns false,
// and returns the cursor fn stopped at (or the end).
func (l *List) Forward(c Cursor, fn func(uint32) bool) Cursor {
	if c.b >= l.numBlocks() {
		return l.End()
	}
	var buf [maxBlock + 1]uint32
	return l.forward(c, l.decode(c.b, &buf), fn)
}

// forward is Forward with c's block decoded already (ords).
func (l *List) forward(c Cursor, ords []uint32, fn func(uint32) bool) Cursor {
	var buf [maxBlock + 1]uint32
	for k := c.b; k < l.numBlocks(); k++ {
		i := 0
		if k == c.b {
			i = c.i
		} else {
			ords = l.decode(k, &buf)
		}
		for ; i < len(ords); i++ {
			if !fn(ords[i]) {
				return Cursor{k, i}
			}
		}
	}
	return l.End()
}

// Backward calls fn with each ordinal before c, the nearest first, until
// fn returns false.
func (l *List) Backward(c Cursor, fn func(uint32) bool) {
	var buf [maxBlock + 1]uint32
	for k := min(c.b, l.numBlocks()-1); k >= 0; k-- {
		ords := l.decode(k, &buf)
		i := len(ords) - 1
		if k == c.b {
			i = c.i - 1
		}
		for ; i >= 0; i-- {
			if !fn(ords[i]) {
				return
			}
		}
	}
}

// Insert puts o before the ordinal at c (at the end, after the last).
func (l *List) Insert(c Cursor, o uint32) {
	if c.b >= l.numBlocks() {
		l.Append(o)
		return
	}
	var buf [maxBlock + 1]uint32
	ords := slices.Insert(l.decode(c.b, &buf), c.i, o)
	if len(ords) <= maxBlock {
		l.rewrite(c.b, ords)
	} else {
		l.materialize()
		half := len(ords) / 2
		l.rewrite(c.b, ords[:half]) // the block's bytes shrink: the second half's go after them
		off := l.block(c.b).off + uint32(l.blockLen(c.b))
		*l.blocks = slices.Insert(*l.blocks, c.b+1, span{off: off, n: 0})
		var scratch [maxBlock * binary.MaxVarintLen32]byte
		l.splice(c.b+1, 0, encodeBlock(scratch[:0], ords[half:]), uint32(len(ords)-half))
	}
	l.n++
}

// Remove takes out the ordinal at c, which must not be the end.
func (l *List) Remove(c Cursor) {
	var buf [maxBlock + 1]uint32
	ords := l.decode(c.b, &buf)
	ords = append(ords[:c.i], ords[c.i+1:]...)
	l.n--
	switch {
	case l.n == 0:
		l.data, l.blocks, l.last = nil, nil, 0
		return
	case len(ords) == 0:
		l.splice(c.b, l.blockLen(c.b), nil, 0)
		*l.blocks = slices.Delete(*l.blocks, c.b, c.b+1)
	default:
		l.rewrite(c.b, ords)
	}
	if c.b >= l.numBlocks()-1 { // the last block changed: so may the last ordinal
		ords := l.decode(l.numBlocks()-1, &buf)
		l.last = ords[len(ords)-1]
	}
}

// rewrite replaces block k's ordinals with ords.
func (l *List) rewrite(k int, ords []uint32) {
	var scratch [maxBlock * binary.MaxVarintLen32]byte
	l.splice(k, l.blockLen(k), encodeBlock(scratch[:0], ords), uint32(len(ords)))
}

// blockLen is how many bytes block k takes.
func (l *List) blockLen(k int) int {
	if k+1 < l.numBlocks() {
		return int(l.block(k+1).off - l.block(k).off)
	}
	return len(l.data) - int(l.block(k).off)
}

// splice replaces block k's old bytes with b, sets its count to n (a
// list of one block counts by l.n), and moves the blocks after it.
func (l *List) splice(k, old int, b []byte, n uint32) {
	off := int(l.block(k).off)
	l.data = slices.Replace(l.data, off, off+old, b...)
	if l.blocks == nil {
		return
	}
	bs := *l.blocks
	bs[k].n = n
	if moved := len(b) - old; moved != 0 {
		for j := k + 1; j < len(bs); j++ {
			bs[j].off = uint32(int(bs[j].off) + moved)
		}
	}
}

// AppendTo appends every ordinal, in order, to dst.
func (l *List) AppendTo(dst []uint32) []uint32 {
	var buf [maxBlock + 1]uint32
	for k := range l.numBlocks() {
		dst = append(dst, l.decode(k, &buf)...)
	}
	return dst
}

// Reverse reads a list from its last ordinal toward its first, for tests
// of membership of ordinals that come in the list's order backward (a
// listing's candidates, newest first): each test goes on from where the
// last stopped, skipping whole blocks by their first ordinal, so testing
// a list against another costs about a pass over both, not a search each.
type Reverse struct {
	l       *List
	k, i    int // the block in ords, and the index of the ordinal last found
	decoded bool
	ords    []uint32
	buf     [maxBlock + 1]uint32
}

// Reverse is a reader at the list's end.
func (l *List) Reverse() *Reverse { return &Reverse{l: l, k: l.numBlocks() - 1} }

// Find moves back to the last ordinal for which after is false (after
// being false then true along the list, as Search takes it) and returns
// it; false when every ordinal left is after. Each call's after must be
// true of all that the previous call's was.
func (r *Reverse) Find(after func(uint32) bool) (uint32, bool) {
	for r.k >= 0 {
		if !r.decoded {
			if after(r.l.first(r.k)) {
				r.k--
				continue
			}
			r.ords, r.i, r.decoded = r.l.decode(r.k, &r.buf), int(r.l.block(r.k).n)-1, true
		}
		for r.i >= 0 && after(r.ords[r.i]) {
			r.i--
		}
		if r.i >= 0 {
			return r.ords[r.i], true
		}
		r.k, r.decoded = r.k-1, false
	}
	return 0, false
}
