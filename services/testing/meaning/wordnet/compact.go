package wordnet

import (
	"compress/gzip"
	"encoding/gob"
	"fmt"
	"hash/maphash"
	"io"
	"strings"
)

// compact is the shipped form of a DB: flat arrays, gob-encoded and
// gzipped (about a tenth of the WNDB files, and loaded in a fraction of
// the time it takes to parse them).
type compact struct {
	Version  string
	Names    []string // lemmas
	SenseOff []uint32 // lemma i's senses are Senses[SenseOff[i]:SenseOff[i+1]]
	Senses   []uint32
	POS      []byte // per synset
	WordOff  []uint32
	Words    []uint32
	LinkOff  []uint32
	LinkRel  []byte
	LinkTo   []uint32
	ExcPOS   []byte
	ExcForm  []string
	ExcBase  []string
}

// Encode writes db in the compact form.
func (db *DB) Encode(w io.Writer, version string) error {
	c := compact{Version: version, Names: make([]string, len(db.nameEnd)), POS: make([]byte, len(db.pos)),
		SenseOff: append([]uint32{0}, db.senseEnd...), Senses: make([]uint32, len(db.senses)),
		WordOff: append([]uint32{0}, db.wordEnd...), Words: db.words, LinkOff: append([]uint32{0}, db.linkEnd...),
		LinkRel: make([]byte, len(db.links)), LinkTo: make([]uint32, len(db.links))}
	for i := range c.Names {
		c.Names[i] = db.name(uint32(i))
	}
	for i, s := range db.senses {
		c.Senses[i] = uint32(s)
	}
	for s, p := range db.pos {
		c.POS[s] = byte(p)
	}
	for i, l := range db.links {
		c.LinkRel[i], c.LinkTo[i] = byte(l.rel), uint32(l.to)
	}
	c.addExceptions(db.exc)
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(zw).Encode(&c); err != nil {
		return err
	}
	return zw.Close()
}

func decode(r io.Reader) (*DB, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("wordnet: %w", err)
	}
	var c compact
	if err := gob.NewDecoder(zr).Decode(&c); err != nil {
		return nil, fmt.Errorf("wordnet: %w", err)
	}
	return c.db()
}

// db is the DB c describes, in its flat form.
func (c *compact) db() (*DB, error) {
	n, synsets := len(c.Names), len(c.POS)
	if len(c.SenseOff) != n+1 || len(c.WordOff) != synsets+1 || len(c.LinkOff) != synsets+1 || len(c.LinkRel) != len(c.LinkTo) ||
		c.SenseOff[0] != 0 || c.WordOff[0] != 0 || c.LinkOff[0] != 0 ||
		int(c.SenseOff[n]) != len(c.Senses) || int(c.WordOff[synsets]) != len(c.Words) || int(c.LinkOff[synsets]) != len(c.LinkTo) {
		return nil, fmt.Errorf("wordnet: inconsistent compact file")
	}
	db := &DB{Version: c.Version, nameEnd: make([]uint32, n), seed: maphash.MakeSeed(), ids: make(map[uint64]uint32, n),
		senseEnd: c.SenseOff[1:], senses: make([]Synset, len(c.Senses)), pos: make([]POS, synsets),
		wordEnd: c.WordOff[1:], words: c.Words, linkEnd: c.LinkOff[1:], links: make([]link, len(c.LinkTo))}
	size := 0
	for _, name := range c.Names {
		size += len(name)
	}
	var text strings.Builder
	text.Grow(size)
	for i, name := range c.Names {
		text.WriteString(name)
		db.nameEnd[i] = uint32(text.Len())
	}
	db.text = text.String()
	for i, name := range c.Names {
		h := maphash.String(db.seed, name)
		if _, taken := db.ids[h]; !taken {
			db.ids[h] = uint32(i)
			continue
		}
		if db.clashes == nil {
			db.clashes = map[string]uint32{}
		}
		if _, dup := db.clashes[name]; !dup && db.name(db.ids[h]) != name {
			db.clashes[name] = uint32(i)
		}
	}
	for i, s := range c.Senses {
		db.senses[i] = Synset(s)
	}
	for s, p := range c.POS {
		db.pos[s] = POS(p)
	}
	for i := range db.links {
		db.links[i] = link{Rel(c.LinkRel[i]), Synset(c.LinkTo[i])}
	}
	for p := range numPOS {
		db.exc[p] = map[string][]string{}
	}
	for i, p := range c.ExcPOS {
		if int(p) >= int(numPOS) {
			return nil, fmt.Errorf("wordnet: inconsistent compact file")
		}
		db.exc[p][c.ExcForm[i]] = append(db.exc[p][c.ExcForm[i]], c.ExcBase[i])
	}
	return db, nil
}

// addExceptions adds the exception lists, in a stable order.
func (c *compact) addExceptions(exc [numPOS]map[string][]string) {
	for p := range numPOS {
		for _, form := range sortedKeys(exc[p]) {
			for _, b := range exc[p][form] {
				c.ExcPOS, c.ExcForm, c.ExcBase = append(c.ExcPOS, byte(p)), append(c.ExcForm, form), append(c.ExcBase, b)
			}
		}
	}
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
