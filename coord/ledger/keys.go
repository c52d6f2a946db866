package ledger

import (
	"encoding/binary"
	"strings"

	"drover/coord/id"
	"drover/coord/names"
)

// Keys of live records are kept without a string header or a heap object
// per key (issue 21):
//
//   - the (crawler, processor) pair is interned (package names): a record
//     holds a uint32 naming it, and the pair is forgotten when no record
//     uses it any more;
//   - the URL's bytes go into a slab of fixed-size slots, one slab per size
//     class (8, 16, ... 256 bytes), so a record holds a slot number and the
//     length. Freed slots are reused by the next URL of the same class.
//     URLs longer than the largest class (rare) are kept as strings.
//
// Every slab is a few large pointer-free chunks: the garbage collector has
// nothing to scan in them, and growing never copies.

const (
	urlClassStep = 8   // slot sizes are multiples of this
	urlClassMax  = 256 // the largest slot; longer URLs are strings
	urlClasses   = urlClassMax / urlClassStep
	urlLong      = 0xFFFF // rec.ulen of a URL kept in keyStore.long
	urlLent      = 0xFFFE // rec.ulen of a URL lent out (lend.go); rec.url is its length
	urlChunkBits = 10     // slots per chunk: 1024
)

// keyStore holds the keys of live records.
type keyStore struct {
	pairs names.Pairs

	urls  [urlClasses]byteSlab
	long  []string // URLs longer than urlClassMax; index 0 unused
	freeL []uint32

	lender func(id.Fingerprint) (string, bool) // holder of lent URLs (lend.go)
}

func (ks *keyStore) init(mem *rawMem) {
	ks.long = make([]string, 1)
	for c := range ks.urls {
		ks.urls[c].size = (c + 1) * urlClassStep
		ks.urls[c].mem = mem
	}
}

// put stores key k for record r (whose key fields are empty).
func (ks *keyStore) put(r *rec, k *id.Key) {
	r.names = ks.pairs.Intern(k.Crawler, k.Processor)
	switch n := len(k.URL); {
	case n == 0:
		r.url, r.ulen = 0, 0
	case n <= urlClassMax:
		s := &ks.urls[(n-1)/urlClassStep]
		i := s.alloc()
		copy(s.at(i), k.URL)
		r.url, r.ulen = i, uint16(n)
	default:
		var i uint32
		if f := len(ks.freeL); f > 0 {
			i = ks.freeL[f-1]
			ks.freeL = ks.freeL[:f-1]
		} else {
			ks.long = append(ks.long, "")
			i = uint32(len(ks.long) - 1)
		}
		ks.long[i] = strings.Clone(k.URL)
		r.url, r.ulen = i, urlLong
	}
}

// key returns record r's key, in new strings (the names are shared).
func (ks *keyStore) key(r *rec) id.Key {
	p := ks.pairs.Get(r.names)
	return id.Key{Crawler: p.Crawler, Processor: p.Processor, URL: ks.url(r)}
}

// url returns record r's URL in a new string.
func (ks *keyStore) url(r *rec) string {
	switch r.ulen {
	case 0:
		return ""
	case urlLong:
		return ks.long[r.url]
	case urlLent:
		u, _ := ks.lender(r.fp)
		return u
	}
	return string(ks.urls[(int(r.ulen)-1)/urlClassStep].at(r.url)[:r.ulen])
}

// free releases record r's key.
func (ks *keyStore) free(r *rec) {
	ks.pairs.Release(r.names)
	switch r.ulen {
	case 0, urlLent:
	case urlLong:
		ks.long[r.url] = ""
		ks.freeL = append(ks.freeL, r.url)
	default:
		ks.urls[(int(r.ulen)-1)/urlClassStep].release(r.url)
	}
	r.names, r.url, r.ulen = 0, 0, 0
}

// byteSlab is fixed-size byte slots addressed by a uint32, in chunks of
// 1024 slots; slot 0 is never handed out, so 0 means none. A free slot's
// first four bytes link the free list.
type byteSlab struct {
	size   int
	mem    *rawMem
	chunks [][]byte
	n      uint32 // slots handed out, 0 included
	free   uint32
}

func (s *byteSlab) at(i uint32) []byte {
	c := s.chunks[i>>urlChunkBits]
	off := int(i&(1<<urlChunkBits-1)) * s.size
	return c[off : off+s.size : off+s.size]
}

func (s *byteSlab) alloc() uint32 {
	if i := s.free; i != 0 {
		s.free = binary.LittleEndian.Uint32(s.at(i))
		return i
	}
	if s.n == 0 {
		s.n = 1 // reserve slot 0
	}
	if int(s.n>>urlChunkBits) == len(s.chunks) {
		s.chunks = append(s.chunks, s.mem.alloc(s.size<<urlChunkBits))
	}
	s.n++
	return s.n - 1
}

func (s *byteSlab) release(i uint32) {
	binary.LittleEndian.PutUint32(s.at(i), s.free)
	s.free = i
}
