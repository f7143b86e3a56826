// Command wordnetgen writes the compact WordNet the meaning package
// ships, from a WordNet database in the standard WNDB format.
//
// The shipped file is made from Princeton WordNet 3.0 as Debian packages
// it (wordnet-base; the same files are in Princeton's WordNet-3.0.tar.gz):
//
//	apt-get download wordnet-base && dpkg -x wordnet-base_*.deb wn
//	go run ./services/testing/meaning/wordnet/cmd/wordnetgen \
//	  -dict wn/usr/share/wordnet -version "WordNet 3.0" \
//	  -out services/testing/meaning/wordnet/data/wordnet-3.0.bin.gz
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/voiceai-platform/voiceai/services/testing/meaning/wordnet"
)

func main() {
	dict := flag.String("dict", "", "the WNDB directory (data.noun, index.noun, noun.exc, ...)")
	out := flag.String("out", "", "the compact file to write")
	version := flag.String("version", "WordNet", "the version to record")
	flag.Parse()
	if *dict == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	db, err := wordnet.LoadDir(*dict)
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Encode(f, *version); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d lemmas, %d synsets\n", *out, db.Lemmas(), db.Synsets())
}
