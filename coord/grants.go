package coord

import "drover/coord/id"

// grants remembers, for the last few sessions that sent a REQUEST, the
// keys that REQUEST granted (ok, and new to the session), as the message
// named them, with their fingerprints. A producer QUEUEs the keys it just
// obtained, in the order it asked for them: each is then found at the
// memo's next place by comparing the raw key, not normalised and hashed a
// second time. The fingerprint is a function of the raw key alone, so a
// memo never goes stale; a key it does not hold is worked out again.
//
// The memo holds the REQUEST's key strings (over the wire, slices of the
// message's one string allocation) until the session's next REQUEST, its
// end, or another session taking its place: at most maxGrantMemos
// messages' worth, of at most maxGrants keys each.
type grants struct {
	memo [maxGrantMemos]grantMemo
	next int // the slot a session without one takes next (round robin)
}

const (
	maxGrantMemos = 4
	maxGrants     = 4096
)

// grantMemo is one session's granted keys.
type grantMemo struct {
	s    id.Session // 0: a free slot
	keys []grant
	at   int // where the next key looked for is expected
}

// grant is one granted key: as the REQUEST named it, and its fingerprint.
type grant struct {
	raw id.Key
	fp  id.Fingerprint
}

// start empties session s's memo (taking a slot for it) for the keys of a
// new REQUEST, and returns it.
func (g *grants) start(s id.Session) *grantMemo {
	m := g.of(s)
	if m == nil {
		m = &g.memo[g.next]
		g.next = (g.next + 1) % maxGrantMemos
		m.s = s
	}
	clear(m.keys) // the last message's strings go
	m.keys, m.at = m.keys[:0], 0
	return m
}

// of returns session s's memo, or nil.
func (g *grants) of(s id.Session) *grantMemo {
	for i := range g.memo {
		if g.memo[i].s == s && s != 0 {
			return &g.memo[i]
		}
	}
	return nil
}

// drop forgets session s's memo (the session ended).
func (g *grants) drop(s id.Session) {
	if m := g.of(s); m != nil {
		clear(m.keys)
		*m = grantMemo{keys: m.keys[:0]}
	}
}

// add remembers that raw key k, fingerprint fp, was granted.
func (m *grantMemo) add(k id.Key, fp id.Fingerprint) {
	if len(m.keys) < maxGrants {
		m.keys = append(m.keys, grant{raw: k, fp: fp})
	}
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
		if g := &m.keys[i]; g.raw.URL == k.URL && g.raw.Crawler == k.Crawler && g.raw.Processor == k.Processor {
			m.at = i + 1
			return g.fp, true
		}
	}
	return id.Fingerprint{}, false
}
