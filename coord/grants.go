package coord

import (
	"math"

	"drover/coord/id"
)

// grants remembers, for the last few sessions that sent a REQUEST, the
// keys that REQUEST granted (ok, and new to the session), as the message
// named them, with their fingerprints. A producer QUEUEs the keys it just
// obtained, in the order it asked for them: each is then found at the
// memo's next place by comparing the raw key, not normalised and hashed a
// second time. The fingerprint is a function of the raw key alone, so a
// memo never goes stale; a key it does not hold is worked out again.
//
// A memo keeps copies of the keys' bytes in a buffer of its own, reused
// from one REQUEST to the next (over the wire a key's strings are slices
// of its message's one string: holding them would keep the whole message
// alive): at most maxGrantMemos memos of at most maxGrants keys and
// maxGrantBytes bytes each.
type grants struct {
	memo [maxGrantMemos]grantMemo
	next int // the slot a session takes next when none is free (round robin)
}

const (
	maxGrantMemos = 4
	maxGrants     = 4096
	maxGrantBytes = 1 << 20
)

// grantMemo is one session's granted keys.
type grantMemo struct {
	s    id.Session // 0: a free slot
	keys []grant
	raw  []byte // the keys' crawler, processor and URL, one after another
	at   int    // where the next key looked for is expected
}

// grant is one granted key: where its raw strings are in grantMemo.raw,
// and its fingerprint.
type grant struct {
	off          uint32
	crawler, pro uint16 // lengths of the crawler and processor names
	url          uint32 // length of the URL
	fp           id.Fingerprint
}

// start empties session s's memo (taking a slot for it: a free one if
// there is one) for the keys of a new REQUEST, and returns it.
func (g *grants) start(s id.Session) *grantMemo {
	m := g.of(s)
	if m == nil {
		m = g.of(0)
	}
	if m == nil {
		m = &g.memo[g.next]
		g.next = (g.next + 1) % maxGrantMemos
	}
	m.s = s
	m.keys, m.raw, m.at = m.keys[:0], m.raw[:0], 0
	return m
}

// of returns session s's memo (s 0: a free slot), or nil.
func (g *grants) of(s id.Session) *grantMemo {
	for i := range g.memo {
		if g.memo[i].s == s {
			return &g.memo[i]
		}
	}
	return nil
}

// drop forgets session s's memo (the session ended).
func (g *grants) drop(s id.Session) {
	if m := g.of(s); m != nil && s != 0 {
		m.s = 0
		m.keys, m.raw, m.at = m.keys[:0], m.raw[:0], 0
	}
}

// add remembers that raw key k, fingerprint fp, was granted.
func (m *grantMemo) add(k id.Key, fp id.Fingerprint) {
	n := len(k.Crawler) + len(k.Processor) + len(k.URL)
	if len(m.keys) == maxGrants || len(m.raw)+n > maxGrantBytes ||
		len(k.Crawler) > math.MaxUint16 || len(k.Processor) > math.MaxUint16 {
		return
	}
	m.keys = append(m.keys, grant{off: uint32(len(m.raw)), crawler: uint16(len(k.Crawler)),
		pro: uint16(len(k.Processor)), url: uint32(len(k.URL)), fp: fp})
	m.raw = append(append(append(m.raw, k.Crawler...), k.Processor...), k.URL...)
}

// find returns the fingerprint of raw key k if the memo holds it, looking
// from the expected place on, a little ahead (a producer may queue only
// some of the keys it obtained).
func (m *grantMemo) find(k *id.Key) (id.Fingerprint, bool) {
	if m == nil {
		return id.Fingerprint{}, false
	}
	end := min(len(m.keys), m.at+lookAhead)
	for i := m.at; i < end; i++ {
		g := &m.keys[i]
		if int(g.url) != len(k.URL) || int(g.crawler) != len(k.Crawler) || int(g.pro) != len(k.Processor) {
			continue
		}
		b := m.raw[g.off:]
		c, p, u := b[:g.crawler], b[g.crawler:][:g.pro], b[int(g.crawler)+int(g.pro):][:g.url]
		if string(u) == k.URL && string(c) == k.Crawler && string(p) == k.Processor {
			m.at = i + 1
			return g.fp, true
		}
	}
	return id.Fingerprint{}, false
}
