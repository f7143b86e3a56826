package adapters

import (
	"encoding/binary"
	"slices"
	"sort"
)

// ordList is a sequence of conversation ordinals kept compressed: a word
// list holds its conversations in listing order, which is nearly the
// order they arrived in, so most differences between neighbours take a
// byte where a plain []uint32 takes four (the word lists are most of the
// index's memory at a million conversations).
//
// The ordinals are cut into blocks of up to maxBlock: each block is its
// first ordinal as a uvarint, then the differences to the one before as
// zigzag varints, all blocks one after the other in data. A search is a
// binary search over the blocks' first ordinals, then a decode of one
// block; an insertion or a removal re-encodes one block and moves the
// bytes after it, so the usual change (at the newest end) costs a block.
type ordList struct {
	n, last uint32      // how many; the last ordinal
	data    []byte      // the blocks
	blocks  *[]ordBlock // where each block starts; nil while there is only one (a pointer: most lists hold an ordinal or two, and 16 bytes a list count)
}

// ordBlock is where a block starts in data, and how many ordinals it holds.
type ordBlock struct{ off, n uint32 }

const (
	fullBlock = 64            // an appended ordinal past this many starts a new block
	maxBlock  = 2 * fullBlock // an insertion past this many splits a block
)

// ordCursor is the position of an ordinal: its block, and its index in
// that block. The end of the list is the block past the last, index 0.
type ordCursor struct{ b, i int }

// Len is how many ordinals the list holds.
func (l *ordList) Len() int { return int(l.n) }

func (l *ordList) numBlocks() int {
	if l.blocks == nil {
		if l.n == 0 {
			return 0
		}
		return 1
	}
	return len(*l.blocks)
}

func (l *ordList) block(k int) ordBlock {
	if l.blocks == nil {
		return ordBlock{0, l.n}
	}
	return (*l.blocks)[k]
}

// end is the cursor past the last ordinal.
func (l *ordList) end() ordCursor { return ordCursor{l.numBlocks(), 0} }

// first is block k's first ordinal.
func (l *ordList) first(k int) uint32 {
	v, _ := binary.Uvarint(l.data[l.block(k).off:])
	return uint32(v)
}

// decode writes block k's ordinals into buf and returns them.
func (l *ordList) decode(k int, buf *[maxBlock + 1]uint32) []uint32 {
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
func (l *ordList) Append(o uint32) {
	switch {
	case l.n == 0:
		l.data = binary.AppendUvarint(l.data[:0], uint64(o))
		l.blocks = nil
	case l.block(l.numBlocks()-1).n < fullBlock:
		var b [binary.MaxVarintLen64]byte
		l.data = appendGrowing(l.data, binary.AppendVarint(b[:0], int64(o)-int64(l.last)))
		if l.blocks != nil {
			bs := *l.blocks
			bs[len(bs)-1].n++
		} // else the one block's count is l.n
	default:
		l.materialize()
		*l.blocks = append(*l.blocks, ordBlock{off: uint32(len(l.data)), n: 1})
		var b [binary.MaxVarintLen64]byte
		l.data = appendGrowing(l.data, binary.AppendUvarint(b[:0], uint64(o)))
	}
	l.n++
	l.last = o
}

// ordListOf is the list of ords, its bytes exactly sized (a snapshot's
// lists are read whole: appended one by one, each would grow many times),
// encoded in scratch first, which it returns for the next list.
func ordListOf(ords []uint32, scratch []byte) (ordList, []byte) {
	if len(ords) == 0 {
		return ordList{}, scratch
	}
	var blocks []ordBlock
	if len(ords) > fullBlock {
		blocks = make([]ordBlock, 0, (len(ords)+fullBlock-1)/fullBlock)
	}
	scratch = scratch[:0]
	for start := 0; start < len(ords); start += fullBlock {
		end := min(start+fullBlock, len(ords))
		if blocks != nil {
			blocks = append(blocks, ordBlock{off: uint32(len(scratch)), n: uint32(end - start)})
		}
		scratch = encodeBlock(scratch, ords[start:end])
	}
	l := ordList{n: uint32(len(ords)), last: ords[len(ords)-1], data: slices.Clone(scratch)}
	if blocks != nil {
		l.blocks = &blocks
	}
	return l, scratch
}

// appendGrowing appends b to data, growing a full data by an eighth rather
// than by append's half to double: a common word's list holds a million.
func appendGrowing(data, b []byte) []byte {
	if len(data)+len(b) > cap(data) {
		grown := make([]byte, len(data), len(data)+max(len(b), len(data)/8, 8))
		copy(grown, data)
		data = grown
	}
	return append(data, b...)
}

// materialize gives a one-block list its blocks slice.
func (l *ordList) materialize() {
	if l.blocks == nil {
		l.blocks = &[]ordBlock{{0, l.n}}
	}
}

// Search is the cursor of the first ordinal for which after is true,
// after being false then true along the list; the end if none.
func (l *ordList) Search(after func(uint32) bool) ordCursor {
	var buf [maxBlock + 1]uint32
	c, _ := l.find(after, &buf)
	return c
}

// Seek calls fn, as Forward does, from the first ordinal for which after
// is true (Search's), and returns the cursor fn stopped at: Forward after
// Search, decoding the block they share once.
func (l *ordList) Seek(after func(uint32) bool, fn func(uint32) bool) ordCursor {
	var buf [maxBlock + 1]uint32
	c, ords := l.find(after, &buf)
	return l.forward(c, ords, fn)
}

// find is Search, with the block of the cursor decoded into buf (none at
// the end).
func (l *ordList) find(after func(uint32) bool, buf *[maxBlock + 1]uint32) (ordCursor, []uint32) {
	nb := l.numBlocks()
	k := sort.Search(nb, func(k int) bool { return after(l.first(k)) })
	if k > 0 {
		ords := l.decode(k-1, buf)
		// A binary search here too: each test reads an entry elsewhere in memory.
		if i := 1 + sort.Search(len(ords)-1, func(i int) bool { return after(ords[i+1]) }); i < len(ords) {
			return ordCursor{k - 1, i}, ords
		}
	}
	if k == nb {
		return ordCursor{k, 0}, nil
	}
	return ordCursor{k, 0}, l.decode(k, buf)
}

// Forward calls fn with each ordinal from c on until fn returns false,
// and returns the cursor fn stopped at (or the end).
func (l *ordList) Forward(c ordCursor, fn func(uint32) bool) ordCursor {
	if c.b >= l.numBlocks() {
		return l.end()
	}
	var buf [maxBlock + 1]uint32
	return l.forward(c, l.decode(c.b, &buf), fn)
}

// forward is Forward with c's block decoded already (ords).
func (l *ordList) forward(c ordCursor, ords []uint32, fn func(uint32) bool) ordCursor {
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
				return ordCursor{k, i}
			}
		}
	}
	return l.end()
}

// Backward calls fn with each ordinal before c, the nearest first, until
// fn returns false.
func (l *ordList) Backward(c ordCursor, fn func(uint32) bool) {
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
func (l *ordList) Insert(c ordCursor, o uint32) {
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
		*l.blocks = slices.Insert(*l.blocks, c.b+1, ordBlock{off: off, n: 0})
		var scratch [maxBlock * binary.MaxVarintLen32]byte
		l.splice(c.b+1, 0, encodeBlock(scratch[:0], ords[half:]), uint32(len(ords)-half))
	}
	l.n++
}

// Remove takes out the ordinal at c, which must not be the end.
func (l *ordList) Remove(c ordCursor) {
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
func (l *ordList) rewrite(k int, ords []uint32) {
	var scratch [maxBlock * binary.MaxVarintLen32]byte
	l.splice(k, l.blockLen(k), encodeBlock(scratch[:0], ords), uint32(len(ords)))
}

// blockLen is how many bytes block k takes.
func (l *ordList) blockLen(k int) int {
	if k+1 < l.numBlocks() {
		return int(l.block(k+1).off - l.block(k).off)
	}
	return len(l.data) - int(l.block(k).off)
}

// splice replaces block k's old bytes with b, sets its count to n (a
// list of one block counts by l.n), and moves the blocks after it.
func (l *ordList) splice(k, old int, b []byte, n uint32) {
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
func (l *ordList) AppendTo(dst []uint32) []uint32 {
	var buf [maxBlock + 1]uint32
	for k := range l.numBlocks() {
		dst = append(dst, l.decode(k, &buf)...)
	}
	return dst
}
