package wordnet

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// LoadDir reads a WordNet database in the standard WNDB format: the
// data.{noun,verb,adj,adv} and index.{noun,verb,adj,adv} files and, when
// present, the {noun,verb,adj,adv}.exc exception lists.
func LoadDir(dir string) (*DB, error) {
	db := &builder{lemma: map[string]uint32{}}
	files := [numPOS]string{"noun", "verb", "adj", "adv"}
	offsets := [numPOS]map[int64]Synset{}
	type pending struct {
		from Synset
		rel  Rel
		pos  POS
		off  int64
	}
	var ptrs []pending
	for p, name := range files {
		offsets[p] = map[int64]Synset{}
		err := eachLine(filepath.Join(dir, "data."+name), func(line string) error {
			f := strings.Fields(strings.SplitN(line, " | ", 2)[0])
			if len(f) < 4 {
				return fmt.Errorf("short data line %q", line)
			}
			off, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return err
			}
			n, err := strconv.ParseUint(f[3], 16, 32)
			if err != nil {
				return err
			}
			s := Synset(len(db.pos))
			offsets[p][off] = s
			db.pos = append(db.pos, POS(p))
			i := 4
			var words []uint32
			for range n {
				if i+1 >= len(f) {
					return fmt.Errorf("synset %d: words cut short", off)
				}
				words = append(words, db.intern(normalise(f[i])))
				i += 2
			}
			db.words = append(db.words, words)
			db.rels = append(db.rels, nil)
			if i >= len(f) {
				return fmt.Errorf("synset %d: no pointer count", off)
			}
			np, err := strconv.Atoi(f[i])
			if err != nil {
				return err
			}
			i++
			for range np {
				if i+3 >= len(f) {
					return fmt.Errorf("synset %d: pointers cut short", off)
				}
				rel, keep := relSymbols[f[i]]
				to, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return err
				}
				if keep {
					ptrs = append(ptrs, pending{s, rel, posOf(f[i+2]), to})
				}
				i += 4
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("data.%s: %w", name, err)
		}
	}
	for _, pt := range ptrs {
		to, ok := offsets[pt.pos][pt.off]
		if !ok {
			return nil, fmt.Errorf("pointer to unknown synset %d", pt.off)
		}
		db.addLink(pt.from, pt.rel, to)
	}
	db.senses = make([][]Synset, len(db.names))
	for p, name := range files {
		err := eachLine(filepath.Join(dir, "index."+name), func(line string) error {
			f := strings.Fields(line)
			if len(f) < 4 {
				return fmt.Errorf("short index line %q", line)
			}
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return err
			}
			lemma := normalise(f[0])
			id, ok := db.lemma[lemma]
			if !ok {
				id = db.intern(lemma)
				db.senses = append(db.senses, nil)
			}
			for _, o := range f[len(f)-n:] {
				off, err := strconv.ParseInt(o, 10, 64)
				if err != nil {
					return err
				}
				s, ok := offsets[p][off]
				if !ok {
					return fmt.Errorf("%s: unknown synset %d", lemma, off)
				}
				db.senses[id] = append(db.senses[id], s)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("index.%s: %w", name, err)
		}
		db.exc[p] = map[string][]string{}
		err = eachLine(filepath.Join(dir, name+".exc"), func(line string) error {
			f := strings.Fields(line)
			if len(f) >= 2 {
				for _, b := range f[1:] {
					db.exc[p][normalise(f[0])] = append(db.exc[p][normalise(f[0])], normalise(b))
				}
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("%s.exc: %w", name, err)
		}
	}
	db.sortSenses()
	c := db.compact("wndb:" + filepath.Base(filepath.Clean(dir)))
	return c.db()
}

// builder is a DB while LoadDir reads it: lists that grow, and a map
// from each lemma to its number.
type builder struct {
	lemma  map[string]uint32 // lemma ("bring back") → index in senses
	names  []string          // per lemma
	senses [][]Synset        // per lemma
	pos    []POS             // per synset
	words  [][]uint32        // per synset: its lemmas
	rels   [][]link          // per synset
	exc    [numPOS]map[string][]string
}

// sortSenses orders each lemma's senses: nouns first, then verbs,
// adjectives, adverbs; within a part of speech WordNet's order is kept.
func (db *builder) sortSenses() {
	for _, ss := range db.senses {
		sort.SliceStable(ss, func(i, j int) bool { return db.pos[ss[i]] < db.pos[ss[j]] })
	}
}

// compact is what the builder read, in the flat form.
func (db *builder) compact(version string) *compact {
	c := &compact{Version: version, Names: db.names}
	c.SenseOff = append(c.SenseOff, 0)
	for _, ss := range db.senses {
		for _, s := range ss {
			c.Senses = append(c.Senses, uint32(s))
		}
		c.SenseOff = append(c.SenseOff, uint32(len(c.Senses)))
	}
	c.WordOff = append(c.WordOff, 0)
	c.LinkOff = append(c.LinkOff, 0)
	for s := range db.pos {
		c.POS = append(c.POS, byte(db.pos[s]))
		c.Words = append(c.Words, db.words[s]...)
		c.WordOff = append(c.WordOff, uint32(len(c.Words)))
		for _, l := range db.rels[s] {
			c.LinkRel = append(c.LinkRel, byte(l.rel))
			c.LinkTo = append(c.LinkTo, uint32(l.to))
		}
		c.LinkOff = append(c.LinkOff, uint32(len(c.LinkTo)))
	}
	c.addExceptions(db.exc)
	return c
}

// addLink records a relation and, for a hypernym, its inverse, so that
// hyponyms are complete even where a source lists only one direction.
func (db *builder) addLink(from Synset, rel Rel, to Synset) {
	has := func(s Synset, r Rel, t Synset) bool {
		for _, l := range db.rels[s] {
			if l.rel == r && l.to == t {
				return true
			}
		}
		return false
	}
	if !has(from, rel, to) {
		db.rels[from] = append(db.rels[from], link{rel, to})
	}
	inverse := map[Rel]Rel{Hypernym: Hyponym, Hyponym: Hypernym}
	if inv, ok := inverse[rel]; ok && !has(to, inv, from) {
		db.rels[to] = append(db.rels[to], link{inv, from})
	}
}

func (db *builder) intern(lemma string) uint32 {
	if id, ok := db.lemma[lemma]; ok {
		return id
	}
	id := uint32(len(db.names))
	db.lemma[lemma] = id
	db.names = append(db.names, lemma)
	return id
}

// normalise is a WNDB word as this package keys it: lower case, spaces
// for underscores, without an adjective's syntactic marker ("(p)").
func normalise(w string) string {
	if i := strings.IndexByte(w, '('); i > 0 {
		w = w[:i]
	}
	return strings.ToLower(strings.ReplaceAll(w, "_", " "))
}

func posOf(s string) POS {
	switch s {
	case "v":
		return Verb
	case "a", "s":
		return Adj
	case "r":
		return Adv
	}
	return Noun
}

func eachLine(path string, f func(string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == ' ' { // the license header lines start with spaces
			continue
		}
		if err := f(line); err != nil {
			return err
		}
	}
	return sc.Err()
}
