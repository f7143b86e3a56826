package adapters

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// keptPages keeps the pages of attempts reads found, encoded, up to a
// byte budget, the most recently read first. A page never changes (its id
// is its attempts' hash), and a reader paging back through a log asks
// for one stored page for several of its own: up to maxPageAttempts
// attempts a page, read 50 or 100 at a time.
type keptPages struct {
	mu     sync.Mutex
	pages  *lru.Cache[string, []byte]
	bytes  int // of the pages kept
	budget int
}

// pagesKept bounds the pages a process keeps by their count, and
// pageBytesKept by their size (a page is at most maxPageBytes).
const (
	pagesKept     = 256
	pageBytesKept = 8 << 20
)

func newKeptPages(budget int) *keptPages {
	k := &keptPages{budget: budget}
	// Evictions are made under k.mu (add), so bytes stays the sum of
	// what is kept.
	k.pages, _ = lru.NewWithEvict(pagesKept, func(_ string, b []byte) { k.bytes -= len(b) }) // errs only on a size below 1
	return k
}

func (k *keptPages) get(id string) ([]byte, bool) { return k.pages.Get(id) }

// add keeps page id's encoded attempts, letting the least recently read
// go while over the budget; a page larger than the budget is not kept.
func (k *keptPages) add(id string, b []byte) {
	if len(b) > k.budget {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pages.Contains(id) {
		return
	}
	k.pages.Add(id, b)
	k.bytes += len(b)
	for k.bytes > k.budget {
		k.pages.RemoveOldest()
	}
}
