package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Drains that outlive a coordinator. A drain is the operator's word on a
// worker (its id, which the worker's key holds), not on one session: an
// operator who drained worker W expects W to stay drained when its
// coordinator dies and it connects to another. The coordinator an
// operator asks keeps the drain in the hash PREFIX:drained (field: the
// worker id; value: when and by which coordinator) before carrying it
// out (MarkDrained), an undrain removes it (UnmarkDrained), and so does
// the coordinator that lets the worker go once drained (its jobs ended,
// DISCONNECT 200). Every coordinator reads the hash once a heartbeat
// (with its summary: PublishSummary) and drains a worker it lists as
// the worker says HELLO, before giving it a job (Drained, no I/O). Only
// operators' actions set or remove a drain: nothing a worker says does,
// beyond the id its key holds. A drain is forgotten after drainKeep (a
// worker drained and never seen again), and the hash keeps at most
// maxDrained.

func (l *Ledger) drainedKey() string { return l.cfg.Prefix + ":drained" }

// drainKeep is how long a drain is kept for a worker not let go.
const drainKeep = 24 * time.Hour

// maxDrained bounds the drains the cluster keeps.
const maxDrained = 10000

// drainMark is a drain kept in the cluster.
type drainMark struct {
	At time.Time `json:"at"`
	By string    `json:"by"` // the coordinator the operator asked
}

// markDrained sets the drains of the workers ARGV[3..] to ARGV[2] in
// KEYS[1], but no new one past ARGV[1] drains; it returns the workers
// refused.
var markDrained = goredis.NewScript(`
local n = redis.call('HLEN', KEYS[1])
local refused = {}
for i = 3, #ARGV do
  if n >= tonumber(ARGV[1]) and redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then
    refused[#refused + 1] = ARGV[i]
  else
    n = n + redis.call('HSET', KEYS[1], ARGV[i], ARGV[2])
  end
end
return refused
`)

// MarkDrained keeps workers drained in the cluster: any coordinator they
// say HELLO to drains them. It returns the workers refused (the cluster
// keeps maxDrained already). Safe from any goroutine.
func (v *JobView) MarkDrained(workers []string) (refused []string, err error) {
	l := v.l
	if len(workers) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(drainMark{At: l.cfg.Clock.Now(), By: l.coord})
	if err != nil {
		return nil, fmt.Errorf("redis drains: encoding: %w", err)
	}
	args := []any{maxDrained, b}
	for _, w := range workers {
		args = append(args, w)
	}
	ctx, cancel := l.ctx()
	defer cancel()
	refused, err = markDrained.Run(ctx, l.rdb, []string{l.drainedKey()}, args...).StringSlice()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis drains: keeping %d workers drained: %w", len(workers), err)
	}
	v.noteDrained(workers, refused, true)
	return refused, nil
}

// UnmarkDrained forgets the drains of workers and reports which had one.
// Safe from any goroutine.
func (v *JobView) UnmarkDrained(workers []string) (had []bool, err error) {
	l := v.l
	if len(workers) == 0 {
		return nil, nil
	}
	ctx, cancel := l.ctx()
	defer cancel()
	pipe := l.rdb.Pipeline()
	cmds := make([]*goredis.IntCmd, len(workers))
	for i, w := range workers {
		cmds[i] = pipe.HDel(ctx, l.drainedKey(), w)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redis drains: forgetting the drains of %d workers: %w", len(workers), err)
	}
	had = make([]bool, len(workers))
	for i, c := range cmds {
		had[i] = c.Val() == 1
	}
	v.noteDrained(workers, nil, false)
	return had, nil
}

// Drained reports whether worker w is kept drained, as the cluster was
// read at the last heartbeat and this coordinator marked and unmarked
// since. Safe from any goroutine; no I/O.
func (v *JobView) Drained(w string) bool {
	m := v.l.drained.Load()
	return m != nil && (*m)[w]
}

// noteDrained updates the copy Drained reads after this coordinator
// marked (on) or unmarked workers, skipping those refused.
func (v *JobView) noteDrained(workers, refused []string, on bool) {
	l := v.l
	l.drainedMu.Lock()
	defer l.drainedMu.Unlock()
	l.drainedGen++
	m := make(map[string]bool)
	if old := l.drained.Load(); old != nil {
		for w := range *old {
			m[w] = true
		}
	}
	skip := make(map[string]bool, len(refused))
	for _, w := range refused {
		skip[w] = true
	}
	for _, w := range workers {
		switch {
		case skip[w]:
		case on:
			m[w] = true
		default:
			delete(m, w)
		}
	}
	l.drained.Store(&m)
}

// readDrained reads the drains the cluster keeps into the copy Drained
// reads, forgetting those older than drainKeep (now is the ledger's
// clock); once a heartbeat, with the summary, and when the ledger joins
// the cluster. A copy read while this coordinator marked or unmarked
// workers is dropped (it may miss the change): the next read is kept.
func (l *Ledger) readDrained(ctx context.Context, now time.Time) error {
	l.drainedMu.Lock()
	gen := l.drainedGen
	l.drainedMu.Unlock()
	all, err := l.rdb.HGetAll(ctx, l.drainedKey()).Result()
	if err != nil {
		return fmt.Errorf("redis drains: reading: %w", err)
	}
	m := make(map[string]bool, len(all))
	var old []string
	for w, js := range all {
		var d drainMark
		if json.Unmarshal([]byte(js), &d) == nil && now.Sub(d.At) > drainKeep {
			old = append(old, w)
			continue
		}
		m[w] = true
	}
	if len(old) > 0 {
		if err := l.rdb.HDel(ctx, l.drainedKey(), old...).Err(); err != nil {
			return fmt.Errorf("redis drains: forgetting %d older than %v: %w", len(old), drainKeep, err)
		}
	}
	l.drainedMu.Lock()
	defer l.drainedMu.Unlock()
	if l.drainedGen == gen { // else marked here meanwhile: read again next time
		l.drained.Store(&m)
	}
	return nil
}
