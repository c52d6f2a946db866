package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// The results' retention index: what TrimResults remembers of the results
// it has seen, so that each trim reads only the new ones. It keeps no entry
// per result (24 bytes each were 48 MB for two million results, growing
// with every job done, bounded by no setting): consecutive results are
// summarised in chunks of resultChunkSize (per crawler: how many, their
// bytes, their earliest and latest finish), a few hundred bytes per chunk.
// A trim decides what it can from the summaries (a chunk all past its age,
// all within it, the oldest chunks while a size group stays over its
// limit) and reads from the store only the chunks where a limit cuts
// through, whose results it then decides one by one: the outcome is
// exactly Retention.Drop's over every result.

// resultChunkSize is how many consecutive results one chunk summarises.
const resultChunkSize = 4096

// resultIndex is TrimResults' memory (Store.results).
type resultIndex struct {
	mu      sync.Mutex
	scanned uint64 // the last cursor read
	chunks  []resultChunk
	count   int   // results kept
	bytes   int64 // their stored values' sizes together
	names   []string
	ids     map[string]uint32 // crawler names' numbers in names
	size    int               // results per chunk (resultChunkSize; tests set fewer)
}

// resultChunk summarises consecutive results kept.
type resultChunk struct {
	first, last uint64 // the cursors of its first and last result
	firstAt     int64  // when its first result finished (stamp)
	n           int
	parts       []resultPart // per crawler
}

// resultPart is what a chunk holds of one crawler's results.
type resultPart struct {
	crawler      uint32 // index in resultIndex.names
	n            int
	bytes        int64
	minAt, maxAt int64 // stamps
}

// resultEntry is one result, as read back for a trim's decisions.
type resultEntry struct {
	seq     uint64
	at      int64
	size    uint32
	crawler uint32
}

// add appends e (cursors only grow) to the last chunk, or to a new one.
func (x *resultIndex) add(e resultEntry) {
	if len(x.chunks) == 0 || x.chunks[len(x.chunks)-1].n >= x.size {
		x.chunks = append(x.chunks, resultChunk{first: e.seq, firstAt: e.at})
	}
	c := &x.chunks[len(x.chunks)-1]
	c.add(e)
	x.count++
	x.bytes += int64(e.size)
}

// add counts e in c, which it follows.
func (c *resultChunk) add(e resultEntry) {
	c.last = e.seq
	c.n++
	for i := range c.parts {
		if p := &c.parts[i]; p.crawler == e.crawler {
			p.n++
			p.bytes += int64(e.size)
			p.minAt, p.maxAt = min(p.minAt, e.at), max(p.maxAt, e.at)
			return
		}
	}
	c.parts = append(c.parts, resultPart{crawler: e.crawler, n: 1, bytes: int64(e.size), minAt: e.at, maxAt: e.at})
}

// merge appends the summary of d, which follows c.
func (c *resultChunk) merge(d *resultChunk) {
	c.last = d.last
	c.n += d.n
next:
	for _, q := range d.parts {
		for i := range c.parts {
			if p := &c.parts[i]; p.crawler == q.crawler {
				p.n += q.n
				p.bytes += q.bytes
				p.minAt, p.maxAt = min(p.minAt, q.minAt), max(p.maxAt, q.maxAt)
				continue next
			}
		}
		c.parts = append(c.parts, q)
	}
}

// crawlerID is the number of the crawler named b, given one if new.
func (x *resultIndex) crawlerID(b []byte) uint32 {
	if c, ok := x.ids[string(b)]; ok {
		return c
	}
	if x.ids == nil {
		x.ids = map[string]uint32{}
	}
	c := uint32(len(x.names))
	name := string(b)
	x.ids[name] = c
	x.names = append(x.names, name)
	return c
}

// resultHead decodes what the index keeps of the result stored under k.
func (s *Store) resultHead(x *resultIndex, k, v []byte) (resultEntry, error) {
	if len(k) != 9 {
		return resultEntry{}, fmt.Errorf("store %s: %w: result key %x of %d bytes, want 9", s.where(), ErrCorrupt, k, len(k))
	}
	d := decoder{b: v}
	d.byte()
	at := d.varint()
	d.uvarint() // job
	d.int()     // attempt
	crawler := d.bytes()
	if d.err != nil {
		return resultEntry{}, fmt.Errorf("store %s: %w: result record %x: %w", s.where(), ErrCorrupt, k, d.err)
	}
	return resultEntry{seq: binary.BigEndian.Uint64(k[1:]), at: at, size: uint32(min(len(v), math.MaxUint32)), crawler: x.crawlerID(crawler)}, nil
}

// indexNew adds the results written since the last trim to the index.
func (s *Store) indexNew(x *resultIndex) error {
	return s.scan(resultKey(x.scanned+1), []byte{pfxResult + 1}, "trim results", func(k, v []byte) (bool, error) {
		e, err := s.resultHead(x, k, v)
		if err != nil {
			return false, err
		}
		x.add(e)
		x.scanned = e.seq
		return true, nil
	})
}

// readChunk reads back the results c summarises, in cursor order.
func (s *Store) readChunk(x *resultIndex, c *resultChunk) ([]resultEntry, error) {
	es := make([]resultEntry, 0, c.n)
	err := s.scan(resultKey(c.first), resultKey(c.last+1), "trim results", func(k, v []byte) (bool, error) {
		e, err := s.resultHead(x, k, v)
		if err != nil {
			return false, err
		}
		es = append(es, e)
		return true, nil
	})
	if err == nil && len(es) != c.n {
		err = fmt.Errorf("store %s: %w: results %d to %d: %d read back, want the %d indexed", s.where(), ErrCorrupt, c.first, c.last, len(es), c.n)
	}
	return es, err
}

// chunkPlan is a trim's decision for one chunk: all of it goes, or (read
// back from the store) the results marked in drop.
type chunkPlan struct {
	all     bool
	entries []resultEntry
	drop    []bool
}

// sizeGroup is a size limit's group during a trim: its limit and what is
// kept of it so far.
type sizeGroup struct{ total, limit int64 }

// planTrim decides what policy p deletes at now, chunk by chunk, reading
// back the chunks where a limit cuts through. It returns one plan per
// chunk and how many results go.
func (s *Store) planTrim(x *resultIndex, now time.Time, p *Retention) ([]chunkPlan, int, error) {
	type crawlerLimits struct {
		age   bool
		cut   time.Time // results finished at or before it are past their age
		group *sizeGroup
	}
	groups := map[string]*sizeGroup{}
	lims := make([]crawlerLimits, len(x.names))
	for i, name := range x.names {
		l, g, _ := p.limits(name)
		sg := groups[g]
		if sg == nil {
			sg = &sizeGroup{limit: l.MaxBytes}
			groups[g] = sg
		}
		lims[i] = crawlerLimits{age: l.MaxAge > 0, cut: now.Add(-l.MaxAge), group: sg}
	}
	aged := func(crawler uint32, at int64) bool {
		l := &lims[crawler]
		return l.age && !unstamp(at).After(l.cut)
	}
	plans := make([]chunkPlan, len(x.chunks))
	// agedAll[i][j]: every result of part j of chunk i is past its age.
	agedAll := make([][]bool, len(x.chunks))
	expand := func(i int) error {
		pl := &plans[i]
		if pl.entries != nil {
			return nil
		}
		es, err := s.readChunk(x, &x.chunks[i])
		if err != nil {
			return err
		}
		pl.entries, pl.drop = es, make([]bool, len(es))
		for k, e := range es {
			pl.drop[k] = aged(e.crawler, e.at)
		}
		return nil
	}
	// Age: decided by the parts' earliest and latest finish, or read back.
	for i := range x.chunks {
		c := &x.chunks[i]
		agedAll[i] = make([]bool, len(c.parts))
		for j, pt := range c.parts {
			switch {
			case !aged(pt.crawler, pt.minAt):
			case aged(pt.crawler, pt.maxAt):
				agedAll[i][j] = true
			default:
				if err := expand(i); err != nil {
					return nil, 0, err
				}
			}
		}
	}
	// Each size group's total, past the age limits.
	for i := range x.chunks {
		if pl := &plans[i]; pl.entries != nil {
			for k, e := range pl.entries {
				if !pl.drop[k] {
					lims[e.crawler].group.total += int64(e.size)
				}
			}
			continue
		}
		for j, pt := range x.chunks[i].parts {
			if !agedAll[i][j] {
				lims[pt.crawler].group.total += pt.bytes
			}
		}
	}
	// Size: oldest first, while a group takes more than its limit. A chunk
	// whose groups all go whole or all stay is decided from its summary;
	// one where a group's limit falls inside it is read back.
	deleted := 0
	inChunk := map[*sizeGroup]int64{}
	for i := range x.chunks {
		c, pl := &x.chunks[i], &plans[i]
		if pl.entries == nil {
			clear(inChunk)
			for j, pt := range c.parts {
				if !agedAll[i][j] {
					inChunk[lims[pt.crawler].group] += pt.bytes
				}
			}
			whole := true
			for g, b := range inChunk {
				if g.limit > 0 && g.total > g.limit && g.total-b < g.limit {
					whole = false // the limit falls inside this chunk
				}
			}
			if !whole {
				if err := expand(i); err != nil {
					return nil, 0, err
				}
			}
		}
		if pl.entries != nil {
			for k, e := range pl.entries {
				if g := lims[e.crawler].group; !pl.drop[k] && g.limit > 0 && g.total > g.limit {
					pl.drop[k] = true
					g.total -= int64(e.size)
				}
				if pl.drop[k] {
					deleted++
				}
			}
			continue
		}
		all, none := true, true
		gone := make([]bool, len(c.parts))
		for j, pt := range c.parts {
			g := lims[pt.crawler].group
			gone[j] = agedAll[i][j] || g.limit > 0 && g.total > g.limit
			all, none = all && gone[j], none && !gone[j]
		}
		for j, pt := range c.parts {
			if g := lims[pt.crawler].group; gone[j] && !agedAll[i][j] {
				g.total -= pt.bytes
			}
		}
		switch {
		case none:
		case all:
			pl.all = true
			deleted += c.n
		default: // some crawlers' results go, not others': which, by cursor
			if err := expand(i); err != nil {
				return nil, 0, err
			}
			for k, e := range pl.entries {
				j := slices.IndexFunc(c.parts, func(pt resultPart) bool { return pt.crawler == e.crawler })
				pl.drop[k] = j >= 0 && gone[j]
				if pl.drop[k] {
					deleted++
				}
			}
		}
	}
	return plans, deleted, nil
}

// applyPlan rebuilds the index without what the plans delete, its chunks
// merged where two together fit in one.
func (x *resultIndex) applyPlan(plans []chunkPlan) {
	kept := x.chunks[:0]
	x.count, x.bytes = 0, 0
	push := func(c resultChunk) {
		if n := len(kept); n > 0 && kept[n-1].n+c.n <= x.size {
			kept[n-1].merge(&c)
		} else {
			kept = append(kept, c)
		}
	}
	for i, c := range x.chunks {
		pl := &plans[i]
		switch {
		case pl.all:
			continue
		case pl.entries != nil && slices.Contains(pl.drop, true):
			var rest *resultChunk
			for k, e := range pl.entries {
				if pl.drop[k] {
					continue
				}
				if rest == nil {
					rest = &resultChunk{first: e.seq, firstAt: e.at}
				}
				rest.add(e)
			}
			if rest == nil {
				continue
			}
			c = *rest
		}
		x.count += c.n
		for _, pt := range c.parts {
			x.bytes += pt.bytes
		}
		push(c)
	}
	clear(x.chunks[len(kept):])
	x.chunks = kept
}
