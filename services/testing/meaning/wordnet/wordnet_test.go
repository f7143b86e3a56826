package wordnet

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
)

func TestShippedDatabase(t *testing.T) {
	db := MustDefault()
	if db.Lemmas() < 140000 || db.Synsets() < 110000 {
		t.Fatalf("shipped WordNet has %d lemmas and %d synsets; WordNet 3.0 has 147,306 and 117,659", db.Lemmas(), db.Synsets())
	}
	// receipt (n, sense 2) is "an acknowledgment that payment has been made".
	var found bool
	for _, s := range db.Senses("receipt") {
		db.Related(s, Hypernym, func(h Synset) { found = found || slices.Contains(db.Words(h), "acknowledgment") })
	}
	if !found {
		t.Error("receipt has no hypernym acknowledgment")
	}
	// refund (v) and return share a synset; hyponyms are complete.
	shared := false
	for _, s := range db.Senses("refund") {
		shared = shared || (db.POS(s) == Verb && slices.Contains(db.Words(s), "return"))
	}
	if !shared {
		t.Error("refund (v) does not share a synset with return")
	}
}

func TestLemmatize(t *testing.T) {
	db := MustDefault()
	for _, c := range []struct {
		word string
		pos  POS
		want string
	}{
		{"bought", Verb, "buy"}, {"refunds", Noun, "refund"}, {"churches", Noun, "church"},
		{"cheaper", Adj, "cheap"}, {"children", Noun, "child"}, {"booking", Verb, "book"},
		{"went", Verb, "go"}, {"days", Noun, "day"},
	} {
		if got := db.Lemmatize(c.word, c.pos); !slices.Contains(got, c.want) {
			t.Errorf("Lemmatize(%q, %v) = %v, want %q among them", c.word, c.pos, got, c.want)
		}
	}
	if got := db.Lemmatize("xyzzy", Noun); len(got) != 0 {
		t.Errorf("a non-word lemmatizes to %v", got)
	}
}

// writeWNDB writes a tiny WordNet in the WNDB format: refund and
// repayment, a kind of payment.
func writeWNDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("data.noun", "  1 license line\n"+
		"00000100 04 n 02 refund 0 repayment 0 001 @ 00000200 n 0000 | money returned\n"+
		"00000200 04 n 01 payment 0 000 | a sum paid\n")
	write("index.noun", "payment n 1 1 ~ 1 0 00000200\nrefund n 1 1 @ 1 0 00000100\nrepayment n 1 1 @ 1 0 00000100\n")
	write("noun.exc", "refunds_x refund\n")
	for _, p := range []string{"verb", "adj", "adv"} {
		write("data."+p, "")
		write("index."+p, "")
	}
	return dir
}

// TestCompactRoundTrip: a WNDB directory read by LoadDir and written in
// the compact form reads back the same.
func TestCompactRoundTrip(t *testing.T) {
	db, err := LoadDir(writeWNDB(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := db.Encode(&buf, "test"); err != nil {
		t.Fatal(err)
	}
	back, err := decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*DB{db, back} {
		ss := d.Senses("repayment")
		if len(ss) != 1 || !slices.Equal(d.Words(ss[0]), []string{"refund", "repayment"}) {
			t.Fatalf("repayment's senses: %v", ss)
		}
		var hyper, hypo []string
		d.Related(ss[0], Hypernym, func(s Synset) { hyper = append(hyper, d.Words(s)...) })
		d.Related(d.Senses("payment")[0], Hyponym, func(s Synset) { hypo = append(hypo, d.Words(s)...) })
		if !slices.Equal(hyper, []string{"payment"}) || !slices.Equal(hypo, []string{"refund", "repayment"}) {
			t.Fatalf("relations: hypernyms %v, hyponyms of payment %v", hyper, hypo)
		}
		if got := d.Lemmatize("refunds x", Noun); !slices.Contains(got, "refund") {
			t.Fatalf("exception list lost: %v", got)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := decode(bytes.NewReader(embedded)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLoadedSize(t *testing.T) {
	if testing.Short() {
		t.Skip("measures memory")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	db, err := decode(bytes.NewReader(embedded))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("loaded WordNet holds %.1f MiB of heap", float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
	runtime.KeepAlive(db)
}

// TestOperatorWordNet: VOICEAI_OFFLINE_WORDNET names a WNDB directory of
// the operator's, which Default then loads instead of the shipped one; a
// directory that is not one is an error. Default loads once per process,
// so each case runs in a child process of this test binary.
func TestOperatorWordNet(t *testing.T) {
	if os.Getenv("WORDNET_TEST_CHILD") == "1" {
		db, err := Default()
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error())
			return
		}
		if db.Has("repayment") && db.Lemmas() == 3 {
			os.Stdout.WriteString("operator's wordnet")
		}
		return
	}
	child := func(dir string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOperatorWordNet$")
		cmd.Env = append(os.Environ(), "WORDNET_TEST_CHILD=1", "VOICEAI_OFFLINE_WORDNET="+dir)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v: %s", err, out)
		}
		return string(out)
	}
	if out := child(writeWNDB(t)); !bytes.Contains([]byte(out), []byte("operator's wordnet")) {
		t.Errorf("with a WNDB directory: %q", out)
	}
	if out := child(t.TempDir()); !bytes.Contains([]byte(out), []byte("error: VOICEAI_OFFLINE_WORDNET")) {
		t.Errorf("with an empty directory: %q", out)
	}
}

// The loaded database is most of an all-in-one process's live heap: the
// collector, which marks everything that holds pointers on every cycle,
// must find next to nothing to scan in it.
func TestLoadedDatabaseGivesTheCollectorLittleToScan(t *testing.T) {
	scannable := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := scannable()
	db, err := decode(bytes.NewReader(embedded))
	if err != nil {
		t.Fatal(err)
	}
	added := scannable() - before
	runtime.KeepAlive(db)
	t.Logf("loaded WordNet adds %.1f MiB of heap to scan", float64(added)/(1<<20))
	if added > 1<<20 {
		t.Errorf("loaded WordNet adds %.1f MiB of heap to scan, want under 1 MiB", float64(added)/(1<<20))
	}
}
