package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"

	"drover/coord/id"
)

// Results (issue 23): every finished job's output, kept in the store under
// its result cursor, a sequence number that only grows:
//
//	0x05 seq[8, big-endian]   result records (ResultRecord)
//	0x00 "results"            the last cursor ever assigned (8 bytes)
//
// A result is written in the same batch as its job's done or failed state,
// so it is durable exactly when the job is. Retention (TrimResults) deletes
// the oldest results by age and total size; the cursor is never reused.
const pfxResult byte = 0x05

// internalResults names the internal value holding the last cursor.
const internalResults = "results"

// resultVersion is the first byte of every result value.
const resultVersion = 1

// ResultRecord is one finished job's result.
type ResultRecord struct {
	Cursor  uint64    // the result's sequence number; never 0
	Job     uint64    // the broker's job id
	Key     id.Key    // the work key
	Outcome string    // "ok", "failed", "budget" or "cancelled" (not run: past its crawl's budget, or its crawl cancelled)
	Error   string    // why it failed (empty for ok)
	Attempt int       // the attempt that finished it
	Worker  string    // the worker that ran it (may be empty)
	At      time.Time // when it finished
	Output  []byte    // the worker's output (ok only)
}

func resultKey(seq uint64) []byte {
	var k [9]byte
	k[0] = pfxResult
	binary.BigEndian.PutUint64(k[1:], seq)
	return k[:]
}

func encodeResult(b []byte, r *ResultRecord) []byte {
	b = append(b, resultVersion)
	b = binary.AppendVarint(b, stamp(r.At))
	b = binary.AppendUvarint(b, r.Job)
	b = binary.AppendVarint(b, int64(r.Attempt))
	b = appendString(b, r.Key.Crawler)
	b = appendString(b, r.Key.Processor)
	b = appendString(b, r.Key.URL)
	b = appendString(b, r.Outcome)
	b = appendString(b, r.Error)
	b = appendString(b, r.Worker)
	return appendBytes(b, r.Output)
}

func decodeResult(v []byte, r *ResultRecord) error {
	d := decoder{b: v}
	if ver := d.byte(); d.err == nil && ver != resultVersion {
		d.fail(fmt.Errorf("result version %d: want %d", ver, resultVersion))
	}
	r.At = d.time()
	r.Job = d.uvarint()
	r.Attempt = d.int()
	r.Key.Crawler = d.string()
	r.Key.Processor = d.string()
	r.Key.URL = d.string()
	r.Outcome = d.string()
	r.Error = d.string()
	r.Worker = d.string()
	r.Output = nil
	if o := d.bytes(); len(o) > 0 {
		r.Output = append([]byte(nil), o...)
	}
	return d.end()
}

// PutResult writes r under its cursor and records the cursor as the last
// one assigned. The cursor must not be 0 and the texts must be UTF-8.
func (b *Batch) PutResult(r *ResultRecord) error {
	var err error
	switch {
	case r.Cursor == 0:
		err = errors.New("store: result record: cursor 0, want the result's sequence number (from 1)")
	case r.At.IsZero():
		err = fmt.Errorf("store: result record %d: At is zero, want when the job finished", r.Cursor)
	case !utf8.ValidString(r.Outcome) || !utf8.ValidString(r.Error) || !utf8.ValidString(r.Worker):
		err = fmt.Errorf("store: result record %d: outcome, error and worker must be UTF-8", r.Cursor)
	}
	if err := b.check(err); err != nil {
		return err
	}
	b.buf = encodeResult(b.buf[:0], r)
	if err := b.set(resultKey(r.Cursor), b.buf); err != nil {
		return err
	}
	return b.set(internalKey(internalResults), be64(r.Cursor))
}

// LastResultCursor is the last result cursor ever written (0: none): the
// next result takes the one after it.
func (s *Store) LastResultCursor() (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	v, _, err := s.getUint64(internalKey(internalResults))
	return v, err
}

// ReadResults calls fn with the results whose cursors are in (after, upTo],
// in cursor order, until fn returns false. It reads a consistent snapshot.
func (s *Store) ReadResults(after, upTo uint64, fn func(*ResultRecord) bool) error {
	if after >= upTo {
		return nil
	}
	var r ResultRecord
	return s.scan(resultKey(after+1), resultUpper(upTo), "read results", func(k, v []byte) (bool, error) {
		if len(k) != 9 {
			return false, fmt.Errorf("store %s: %w: result key %x of %d bytes, want 9", s.where(), ErrCorrupt, k, len(k))
		}
		r = ResultRecord{Cursor: binary.BigEndian.Uint64(k[1:])}
		if derr := decodeResult(v, &r); derr != nil {
			return false, fmt.Errorf("store %s: %w: result record %x: %w", s.where(), ErrCorrupt, k, derr)
		}
		return fn(&r), nil
	})
}

// resultUpper is the exclusive upper bound of cursors up to upTo.
func resultUpper(upTo uint64) []byte {
	if upTo == ^uint64(0) {
		return []byte{pfxResult + 1}
	}
	return resultKey(upTo + 1)
}

// ResultStats describe the results kept.
type ResultStats struct {
	Count       int
	Bytes       int64     // their stored values' sizes together
	First, Last uint64    // the oldest and newest cursors kept (0: none)
	Oldest      time.Time // when the oldest kept one finished
}

// TrimResults deletes the results the policy p no longer keeps (Retention:
// by age, then the oldest while the rest take more than the size limit,
// sizes being the stored values'). It returns how many it deleted and what
// is kept. It reads the results written since its last call, and back
// only the stretches where a limit cuts through (resultindex.go); the
// deletion is written on the writer goroutine, between batches, and is not
// fsync'd on its own (a deletion lost in a crash is redone next time).
// Calls must not overlap.
func (s *Store) TrimResults(now time.Time, p *Retention) (deleted int, kept ResultStats, err error) {
	x := &s.results
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.size == 0 {
		x.size = resultChunkSize
	}
	if err := s.indexNew(x); err != nil {
		return 0, kept, err
	}
	plans, deleted, err := s.planTrim(x, now, p)
	if err != nil {
		return 0, kept, err
	}
	if deleted > 0 {
		var werr error
		if err := s.do(func(w *writer) {
			b := s.db.NewBatch()
			defer b.Close()
			lead := 0 // the leading chunks that go whole: one range from the start
			for lead < len(plans) && plans[lead].all {
				lead++
			}
			if lead > 0 {
				_ = b.DeleteRange([]byte{pfxResult}, resultKey(x.chunks[lead-1].last+1), nil)
			}
			for i := lead; i < len(plans); i++ {
				pl := &plans[i]
				if pl.all {
					_ = b.DeleteRange(resultKey(x.chunks[i].first), resultKey(x.chunks[i].last+1), nil)
					continue
				}
				for k, d := range pl.drop {
					if d {
						_ = b.Delete(resultKey(pl.entries[k].seq), nil)
					}
				}
			}
			if err := s.pebbleApply(b, pebble.NoSync); err != nil {
				w.fail(err)
				werr = s.sticky()
				return
			}
			if !s.opts.Memory {
				w.dirty = true
			}
		}); err != nil {
			werr = err
		}
		if werr != nil {
			return 0, kept, werr
		}
		x.applyPlan(plans)
	}
	if cs := x.chunks; len(cs) > 0 {
		kept = ResultStats{Count: x.count, Bytes: x.bytes, First: cs[0].first, Last: cs[len(cs)-1].last, Oldest: unstamp(cs[0].firstAt)}
	}
	return deleted, kept, nil
}

// FirstResultCursor is the oldest result cursor kept (0: none).
func (s *Store) FirstResultCursor() (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{pfxResult}, UpperBound: []byte{pfxResult + 1}})
	if err != nil {
		return 0, fmt.Errorf("store %s: first result: %w", s.where(), corrupt(err))
	}
	var first uint64
	if it.First() && len(it.Key()) == 9 {
		first = binary.BigEndian.Uint64(it.Key()[1:])
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("store %s: first result: %w", s.where(), corrupt(err))
	}
	return first, nil
}
