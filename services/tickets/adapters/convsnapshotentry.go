package adapters

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// snapshotEntry is one entry of a snapshot as the index keeps it
// (packedSummary), so that reading a million of them makes little more
// than the strings each keeps: its names are numbers into the header's
// name table, and the maps and lists entries share are numbers into
// tables the snapshot builds as it goes, each value written once, by the
// first entry that holds it (New). Decoding a whole summary, its maps
// made afresh for each entry and then dropped for the shared ones, was
// most of a restart's garbage.
type snapshotEntry struct {
	Key, Summary                        string // Key: workspace/conversation
	StartedAtMs, EndedAtMs, DurationSec int64
	Messages                            int32
	// Names: workspace, agent, status, outcome, feedback.
	Names                            [5]uint32
	Seen, DurationReported, HasWords bool
	PlatSeq, AnnSeq                  uint64
	// Values: evaluations, data, numbers, tools, tools errored, tags,
	// each 0 for none or its number (from 1) in its table: the string
	// maps, the number maps or the lists. The number one past a table's
	// end is the next value of that kind in New.
	Values [6]uint32
	New    snapshotValues
}

// snapshotValues are the values an entry is the first to hold, in the
// order of its Values.
type snapshotValues struct {
	StringMaps []map[string]string
	NumberMaps []map[string]float64
	Lists      [][]string
}

// The slots of snapshotEntry.Values, and the kind each value is shared
// under in the index (pack, share).
const (
	slotEvaluations = iota
	slotData
	slotNumbers
	slotTools
	slotToolsErrored
	slotTags
)

var slotKinds = [6]string{"v", "d", "n", "t", "e", "g"}

// entryWriter turns entries into snapshotEntry, numbering the values it
// has written by their identity (a map's or a list's pointer: the index
// shares values by pointer).
type entryWriter struct {
	x          *ConversationIndex
	se         snapshotEntry // reused: one per entry would be garbage
	stringMaps map[unsafe.Pointer]uint32
	numberMaps map[unsafe.Pointer]uint32
	lists      map[*[]string]uint32
}

func newEntryWriter(x *ConversationIndex) *entryWriter {
	return &entryWriter{x: x, stringMaps: map[unsafe.Pointer]uint32{}, numberMaps: map[unsafe.Pointer]uint32{}, lists: map[*[]string]uint32{}}
}

func (w *entryWriter) entry(e *convEntry) *snapshotEntry {
	p := &e.c
	w.se = snapshotEntry{
		Key: w.x.names[p.workspace] + "/" + p.id, Summary: p.summary,
		StartedAtMs: p.startedAtMs, EndedAtMs: p.endedAtMs, DurationSec: p.durationSec, Messages: p.messages,
		Names: [5]uint32{p.workspace, p.agent, p.status, p.outcome, p.feedback},
		Seen:  p.seen, DurationReported: p.durationReported, HasWords: e.hasWords,
		PlatSeq: e.platSeq, AnnSeq: e.annSeq,
	}
	// In the slots' order: a reader defines new values in it. An empty
	// value is none (0), as a summary without it reads.
	v, n := &w.se.Values, &w.se.New
	mapRef := func(m map[string]string) uint32 {
		return numbered(w.stringMaps, reflect.ValueOf(m).UnsafePointer(), len(m) == 0, m, &n.StringMaps)
	}
	listRef := func(l *[]string) uint32 { return numbered(w.lists, l, l == nil || len(*l) == 0, deref(l), &n.Lists) }
	v[slotEvaluations] = mapRef(p.evaluations)
	v[slotData] = mapRef(p.data)
	v[slotNumbers] = numbered(w.numberMaps, reflect.ValueOf(p.numbers).UnsafePointer(), len(p.numbers) == 0, p.numbers, &n.NumberMaps)
	v[slotTools] = listRef(p.tools)
	v[slotToolsErrored] = listRef(p.toolsErrored)
	v[slotTags] = listRef(p.tags)
	return &w.se
}

// numbered is the number of the value whose identity is id (0 when the
// value is empty), added to news when the snapshot has not written it.
func numbered[K comparable, V any](refs map[K]uint32, id K, empty bool, v V, news *[]V) uint32 {
	if empty {
		return 0
	}
	if ref, ok := refs[id]; ok {
		return ref
	}
	ref := uint32(len(refs) + 1)
	refs[id] = ref
	*news = append(*news, v)
	return ref
}

// entryReader turns snapshotEntry back into entries: the tables of the
// values read so far, each value shared in the index from then on, as
// pack would have shared it.
type entryReader struct {
	x          *ConversationIndex
	stringMaps []map[string]string
	numberMaps []map[string]float64
	lists      []*[]string
}

// packed is se's key (workspace/conversation) and summary as its entry
// keeps it, or an error when se names what the snapshot never defined.
func (r *entryReader) packed(se *snapshotEntry) (string, packedSummary, error) {
	for _, n := range se.Names {
		if int(n) >= len(r.x.names) {
			return "", packedSummary{}, fmt.Errorf("%w: an entry names name %d of %d", errSnapshot, n, len(r.x.names))
		}
	}
	ws := r.x.names[se.Names[0]]
	id, ok := strings.CutPrefix(se.Key, ws+"/")
	if !ok || id == "" {
		return "", packedSummary{}, fmt.Errorf("%w: entry %q is not of its workspace %q", errSnapshot, se.Key, ws)
	}
	p := packedSummary{
		id: id, summary: se.Summary,
		startedAtMs: se.StartedAtMs, endedAtMs: se.EndedAtMs, durationSec: se.DurationSec, messages: se.Messages,
		workspace: se.Names[0], agent: se.Names[1], status: se.Names[2], outcome: se.Names[3], feedback: se.Names[4],
		seen: se.Seen, durationReported: se.DurationReported,
	}
	x, n, v := r.x, &se.New, se.Values
	mapOf := func(slot int) (map[string]string, error) {
		return tableValue(&r.stringMaps, &n.StringMaps, v[slot], func(m map[string]string) map[string]string {
			return share(x, slotKinds[slot], m, mapKey(m))
		})
	}
	listOf := func(slot int) (*[]string, error) {
		return tableValue(&r.lists, &n.Lists, v[slot], func(l []string) *[]string { return x.shareList(slotKinds[slot], l) })
	}
	var errs [6]error
	p.evaluations, errs[0] = mapOf(slotEvaluations)
	p.data, errs[1] = mapOf(slotData)
	p.numbers, errs[2] = tableValue(&r.numberMaps, &n.NumberMaps, v[slotNumbers], func(m map[string]float64) map[string]float64 {
		return share(x, slotKinds[slotNumbers], m, mapKey(p.data)) // under its data's key, as pack shares it
	})
	p.tools, errs[3] = listOf(slotTools)
	p.toolsErrored, errs[4] = listOf(slotToolsErrored)
	p.tags, errs[5] = listOf(slotTags)
	return se.Key, p, errors.Join(errs[:]...)
}

// tableValue is the value numbered ref (0: none) in table; the number
// one past its end is the next of news, which define makes the index's
// value and table then holds.
func tableValue[T, N any](table *[]T, news *[]N, ref uint32, define func(N) T) (T, error) {
	var none T
	switch k := uint32(len(*table)); {
	case ref == 0:
		return none, nil
	case ref <= k:
		return (*table)[ref-1], nil
	case ref == k+1 && len(*news) > 0:
		v := define((*news)[0])
		*news = (*news)[1:]
		*table = append(*table, v)
		return v, nil
	}
	return none, fmt.Errorf("%w: an entry names value %d of %d", errSnapshot, ref, len(*table))
}
