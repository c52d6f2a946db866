package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"drover/coord"
	"drover/coord/broker"
)

// Hosts' back-offs held for every coordinator (coord.SharedBackoff). A
// worker's 429 or 503 makes its coordinator's broker back the host off
// (broker.Broker.throttle: Retry-After capped, else exponential with
// jitter from the host's level; the broker is the one implementation of
// the rules). The coordinator hands each back-off a throttle started or
// extended to the queue (BackOff), which writes it into the host's
// record PREFIX:{host}:pol (queue.lua's backoff: the end no sooner, the
// level no lower, as durations on the server's clock) and bumps
// PREFIX:backoffs. Then, across the cluster:
//
//   - a claim takes none of the host's jobs until the end, and answers
//     the back-off (claimHead);
//   - each coordinator, at most every backoffPoll, reads PREFIX:backoffs;
//     when it moved, it reads the back-off of every host it holds jobs of
//     (queue.lua's peek), so the jobs it claimed before wait too;
//
// and the coordinator hands what it learned to its broker (Backoffs, then
// broker.Broker.HoldHost), which holds the host's queued jobs until the
// end and continues its level from the cluster's.

// backoffPoll is how often a coordinator reads whether a back-off moved.
const backoffPoll = time.Second

// peekLen is the number of strings of a back-off answer: µs to its end,
// its level, µs to its forgiveness, the coordinator that moved its end.
const peekLen = 4

var _ coord.SharedBackoff = (*Queue)(nil)

func (l *Ledger) backoffsKey() string { return l.cfg.Prefix + ":backoffs" }

// BackOff hands over back-offs this coordinator's throttles started or
// extended; those the store does not take are sent again by the next
// Tick.
func (q *Queue) BackOff(now time.Time, bos []broker.HostBackoff) {
	q.boOut = append(q.boOut, bos...)
	q.flushBackoffs(now)
}

// Backoffs appends to dst the back-offs other coordinators put on hosts,
// learned by this coordinator's claims and polls since the last call.
func (q *Queue) Backoffs(dst []broker.HostBackoff) []broker.HostBackoff {
	dst = append(dst, q.learned...)
	clear(q.learned)
	q.learned = q.learned[:0]
	return dst
}

// micros is d in whole µs, at least 0, as the script takes it.
func micros(d time.Duration) int64 { return max(d.Microseconds(), 0) }

// flushBackoffs writes the back-offs not yet written, one script per host
// in one pipeline, then moves PREFIX:backoffs so that the others look.
func (q *Queue) flushBackoffs(now time.Time) {
	if len(q.boOut) == 0 {
		return
	}
	l := q.l
	ctx, cancel := l.ctx()
	defer cancel()
	calls := make([]call, len(q.boOut))
	for i, bo := range q.boOut {
		calls[i] = call{host: bo.Host, keys: l.queueKeys(bo.Host, l.coord), args: []any{"backoff",
			micros(bo.Until.Sub(now)), bo.Level, micros(bo.Forgiven.Sub(now)), l.coord}}
	}
	_, cerrs := l.runScript(ctx, queueScript, calls)
	var errs []error
	kept := q.boOut[:0]
	for i, err := range cerrs {
		if err != nil {
			kept = append(kept, q.boOut[i])
			errs = append(errs, fmt.Errorf("host %q: %w", calls[i].host, err))
		}
	}
	q.boOut = kept
	if len(kept) < len(calls) {
		if err := l.rdb.Incr(ctx, l.backoffsKey()).Err(); err != nil {
			errs = append(errs, fmt.Errorf("announcing: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		l.err = fmt.Errorf("redis queue: sharing hosts' back-offs (%d kept to send again): %w", len(q.boOut), err)
	}
}

// learn takes in a host's back-off as the script answered it (peekLen
// strings), read at now: one in force that another coordinator moved is
// kept for Backoffs.
func (q *Queue) learn(now time.Time, host string, v []string) {
	rem, _ := strconv.ParseInt(v[0], 10, 64)
	if rem <= 0 || v[3] == q.l.coord {
		return
	}
	level, _ := strconv.Atoi(v[1])
	forgive, _ := strconv.ParseInt(v[2], 10, 64)
	q.learned = append(q.learned, broker.HostBackoff{Host: host, Level: level,
		Until:    now.Add(time.Duration(rem) * time.Microsecond),
		Forgiven: now.Add(time.Duration(forgive) * time.Microsecond)})
}

// pollBackoffs, at most every backoffPoll, reads whether a back-off moved
// on the cluster and if so the back-offs of the hosts this coordinator
// holds jobs of (Tick).
func (q *Queue) pollBackoffs(now time.Time) {
	if len(q.held) == 0 || now.Before(q.nextPoll) {
		return // holding no jobs, it has nothing to learn a claim does not tell
	}
	q.nextPoll = now.Add(backoffPoll)
	l := q.l
	ctx, cancel := l.ctx()
	defer cancel()
	epoch, err := l.rdb.Get(ctx, l.backoffsKey()).Int64()
	if err != nil || epoch == q.epoch {
		return // none yet (redis.Nil), or none moved; an error: the next poll
	}
	if err := q.peek(ctx, now); err != nil {
		l.err = err
		return
	}
	q.epoch = epoch
}

// peek reads the back-offs of the hosts this coordinator holds jobs of.
func (q *Queue) peek(ctx context.Context, now time.Time) error {
	l := q.l
	seen := make(map[string]bool)
	var calls []call
	for _, h := range q.held {
		if !seen[h] {
			seen[h] = true
			calls = append(calls, call{host: h, keys: l.queueKeys(h, l.coord), args: []any{"peek"}})
		}
	}
	vals, cerrs := l.runScript(ctx, queueScript, calls)
	var errs []error
	for i, c := range calls {
		v, err := stringsAnswer(vals[i], cerrs[i])
		if err == nil && len(v) != peekLen {
			err = fmt.Errorf("the script answered %d strings; want %d", len(v), peekLen)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("redis queue: reading host %q's back-off: %w", c.host, err))
			continue
		}
		q.learn(now, c.host, v)
	}
	return errors.Join(errs...)
}
