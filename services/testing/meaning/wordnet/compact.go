package wordnet

import (
	"compress/gzip"
	"encoding/gob"
	"fmt"
	"io"
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
	c := compact{Version: version, Names: db.names}
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
	for p := range numPOS {
		for _, form := range sortedKeys(db.exc[p]) {
			for _, b := range db.exc[p][form] {
				c.ExcPOS, c.ExcForm, c.ExcBase = append(c.ExcPOS, byte(p)), append(c.ExcForm, form), append(c.ExcBase, b)
			}
		}
	}
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
	n := len(c.Names)
	if len(c.SenseOff) != n+1 || len(c.WordOff) != len(c.POS)+1 || len(c.LinkOff) != len(c.POS)+1 || len(c.LinkRel) != len(c.LinkTo) {
		return nil, fmt.Errorf("wordnet: inconsistent compact file")
	}
	db := &DB{Version: c.Version, names: c.Names, lemma: make(map[string]uint32, n), senses: make([][]Synset, n)}
	all := make([]Synset, len(c.Senses))
	for i, s := range c.Senses {
		all[i] = Synset(s)
	}
	for i, name := range c.Names {
		db.lemma[name] = uint32(i)
		db.senses[i] = all[c.SenseOff[i]:c.SenseOff[i+1]:c.SenseOff[i+1]]
	}
	db.pos = make([]POS, len(c.POS))
	db.words = make([][]uint32, len(c.POS))
	db.rels = make([][]link, len(c.POS))
	links := make([]link, len(c.LinkTo))
	for i := range links {
		links[i] = link{Rel(c.LinkRel[i]), Synset(c.LinkTo[i])}
	}
	for s := range c.POS {
		db.pos[s] = POS(c.POS[s])
		db.words[s] = c.Words[c.WordOff[s]:c.WordOff[s+1]:c.WordOff[s+1]]
		db.rels[s] = links[c.LinkOff[s]:c.LinkOff[s+1]:c.LinkOff[s+1]]
	}
	for p := range numPOS {
		db.exc[p] = map[string][]string{}
	}
	for i, p := range c.ExcPOS {
		db.exc[p][c.ExcForm[i]] = append(db.exc[p][c.ExcForm[i]], c.ExcBase[i])
	}
	return db, nil
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
