package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/store"
)

// Finished jobs' results kept for the whole cluster (ACTION-free: QUERY
// view results, drover results): every coordinator appends the results
// of the jobs its workers finish to one stream, PREFIX:results, so a
// result is readable on every coordinator, whichever ran its job. A
// result's cursor is its stream id, ms-seq, as one number:
// ms << cursorSeqBits | seq (stream ids only grow, and so do cursors).
// The fields are plain, readable with redis-cli XRANGE: j job id, c
// crawler, p processor, u URL, o outcome, e error, a attempt, w worker,
// t finish time (Unix ns), b output (bytes). The retention policy's
// coordinator-wide limits trim the stream (results.max_age by id, oldest
// first; results.max_bytes by the stream's MEMORY USAGE); a crawl's own
// limits are not applied here.

// cursorSeqBits is the room a cursor gives a stream id's sequence number
// within one millisecond.
const cursorSeqBits = 20

// Results is the cluster's results stream. Its calls are safe from any
// goroutine (they use only the client and the configuration).
type Results struct{ l *Ledger }

// Results returns the results stream on l's cluster.
func (l *Ledger) Results() *Results { return &Results{l: l} }

func (r *Results) key() string { return r.l.cfg.Prefix + ":results" }

// cursorOf is the cursor of stream id s.
func cursorOf(s string) (uint64, error) {
	ms, seq, ok := strings.Cut(s, "-")
	m, err1 := strconv.ParseUint(ms, 10, 64)
	n, err2 := strconv.ParseUint(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil || n >= 1<<cursorSeqBits || m >= 1<<(64-cursorSeqBits) {
		return 0, fmt.Errorf("redis results: stream id %q: want MS-SEQ with SEQ below %d", s, 1<<cursorSeqBits)
	}
	return m<<cursorSeqBits | n, nil
}

// idOf is the stream id of cursor c.
func idOf(c uint64) string {
	return strconv.FormatUint(c>>cursorSeqBits, 10) + "-" + strconv.FormatUint(c&(1<<cursorSeqBits-1), 10)
}

// Add appends results in one round trip and sets their cursors. On an
// error the results whose cursor is still 0 were not added.
func (r *Results) Add(recs []store.ResultRecord) error {
	if len(recs) == 0 {
		return nil
	}
	cmds, _ := r.l.addEntries(r.key(), 0, len(recs), func(i int) ([]any, error) { return resultFields(&recs[i]), nil })
	var errs []error
	for i, c := range cmds {
		recs[i].Cursor = 0
		idv, err := c.Result()
		if err == nil {
			recs[i].Cursor, err = cursorOf(idv)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("redis results: adding the result of %s: %w", recs[i].Key.URL, err))
		}
	}
	return errors.Join(errs...)
}

func resultFields(rec *store.ResultRecord) []any {
	v := []any{"j", rec.Job, "u", rec.Key.URL, "o", rec.Outcome, "t", rec.At.UnixNano(), "a", rec.Attempt}
	for _, f := range [...]struct{ k, v string }{{"c", rec.Key.Crawler}, {"p", rec.Key.Processor}, {"e", rec.Error}, {"w", rec.Worker}} {
		if f.v != "" {
			v = append(v, f.k, f.v)
		}
	}
	if len(rec.Output) > 0 {
		v = append(v, "b", rec.Output)
	}
	return v
}

// decodeResult reads a stream entry back.
func decodeResult(m goredis.XMessage) (store.ResultRecord, error) {
	var rec store.ResultRecord
	c, err := cursorOf(m.ID)
	if err != nil {
		return rec, err
	}
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	n := func(k string) (int64, error) { return strconv.ParseInt(s(k), 10, 64) }
	job, err1 := n("j")
	at, err2 := n("t")
	att, err3 := n("a")
	if err := errors.Join(err1, err2, err3); err != nil || s("u") == "" || s("o") == "" {
		return rec, fmt.Errorf("redis results: entry %s: want j, u, o, t and a fields (%v)", m.ID, err)
	}
	rec = store.ResultRecord{Cursor: c, Job: uint64(job), Key: id.Key{Crawler: s("c"), Processor: s("p"), URL: s("u")},
		Outcome: s("o"), Error: s("e"), Attempt: int(att), Worker: s("w"), At: time.Unix(0, at)}
	if b := s("b"); b != "" {
		rec.Output = []byte(b)
	}
	return rec, nil
}

// Bounds are the cursors of the first and the last results kept (0, 0:
// none).
func (r *Results) Bounds() (first, last uint64, err error) {
	ctx, cancel := r.l.ctx()
	defer cancel()
	pipe := r.l.rdb.Pipeline()
	lo := pipe.XRangeN(ctx, r.key(), "-", "+", 1)
	hi := pipe.XRevRangeN(ctx, r.key(), "+", "-", 1)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, fmt.Errorf("redis results: reading the stream's ends: %w", err)
	}
	if len(lo.Val()) == 0 || len(hi.Val()) == 0 {
		return 0, 0, nil
	}
	if first, err = cursorOf(lo.Val()[0].ID); err == nil {
		last, err = cursorOf(hi.Val()[0].ID)
	}
	return first, last, err
}

// readChunk is how many entries one XRANGE of Read asks for.
const readChunk = 256

// Read hands fn the results after cursor after up to upTo, in cursor
// order, until fn returns false.
func (r *Results) Read(after, upTo uint64, fn func(*store.ResultRecord) bool) error {
	ctx := context.Background()
	for after < upTo {
		c, cancel := context.WithTimeout(ctx, r.l.cfg.Timeout)
		ms, err := r.l.rdb.XRangeN(c, r.key(), "("+idOf(after), idOf(upTo), readChunk).Result()
		cancel()
		if err != nil {
			return fmt.Errorf("redis results: reading after cursor %d: %w", after, err)
		}
		for _, m := range ms {
			rec, err := decodeResult(m)
			if err != nil {
				return err
			}
			if !fn(&rec) {
				return nil
			}
			after = rec.Cursor
		}
		if len(ms) < readChunk {
			return nil
		}
	}
	return nil
}

// Trim applies the policy's coordinator-wide limits to the stream and
// returns how many results it deleted: results older than MaxAge, then
// the oldest while the stream takes more than MaxBytes.
func (r *Results) Trim(now time.Time, p *store.Retention) (int, error) {
	ctx, cancel := r.l.ctx()
	defer cancel()
	deleted := 0
	if a := p.Default.MaxAge; a > 0 {
		n, err := r.l.rdb.XTrimMinID(ctx, r.key(), strconv.FormatInt(now.Add(-a).UnixMilli(), 10)).Result()
		if err != nil {
			return 0, fmt.Errorf("redis results: trimming results older than %v: %w", a, err)
		}
		deleted += int(n)
	}
	if b := p.Default.MaxBytes; b > 0 {
		used, err := r.l.rdb.MemoryUsage(ctx, r.key(), 16).Result()
		if errors.Is(err, goredis.Nil) || err == nil && used <= b {
			return deleted, nil
		}
		if err != nil {
			return deleted, fmt.Errorf("redis results: reading the stream's size: %w", err)
		}
		n, err := r.l.rdb.XLen(ctx, r.key()).Result()
		if err != nil {
			return deleted, fmt.Errorf("redis results: reading the stream's length: %w", err)
		}
		keep := n * b / used
		m, err := r.l.rdb.XTrimMaxLen(ctx, r.key(), keep).Result()
		if err != nil {
			return deleted, fmt.Errorf("redis results: trimming to %d results (%d bytes): %w", keep, b, err)
		}
		deleted += int(m)
	}
	return deleted, nil
}
