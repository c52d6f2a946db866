package ledger

import (
	"drover/coord/id"
	"drover/coord/names"
	"drover/coord/offheap"
)

// Keys of live records are kept without a string header or a heap object
// per key (issue 21): the (crawler, processor) pair is interned (package
// names): a record holds a uint32 naming it, and the pair is forgotten when
// no record uses it any more; the URL's bytes go into a slot of the size
// classes of offheap.Strings (its origin kept once for the URLs that share
// it): a record holds the slot and the encoded length (offheap.Ref).

const urlLong = offheap.Long // rec.ulen of a URL kept as a Go string

// keyStore holds the keys of live records.
type keyStore struct {
	pairs names.Pairs

	urls offheap.Strings
}

func (ks *keyStore) init(mem *offheap.Mem) { ks.urls.Init(mem) }

// put stores key k for record r (whose key fields are empty).
func (ks *keyStore) put(r *rec, k *id.Key) {
	r.names = ks.pairs.Intern(k.Crawler, k.Processor)
	u := ks.urls.Put(k.URL)
	r.url, r.ulen = u.Slot, u.Len
}

// key returns record r's key, in new strings (the names are shared).
func (ks *keyStore) key(r *rec) id.Key {
	p := ks.pairs.Get(r.names)
	return id.Key{Crawler: p.Crawler, Processor: p.Processor, URL: ks.url(r)}
}

// url returns record r's URL in a new string.
func (ks *keyStore) url(r *rec) string {
	return ks.urls.String(offheap.Ref{Slot: r.url, Len: r.ulen})
}

// free releases record r's key.
func (ks *keyStore) free(r *rec) {
	ks.pairs.Release(r.names)
	ks.urls.Free(offheap.Ref{Slot: r.url, Len: r.ulen})
	r.names, r.url, r.ulen = 0, 0, 0
}
