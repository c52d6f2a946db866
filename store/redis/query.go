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
	"drover/coord/ledger"
)

// Lookup returns the record of fp, if this coordinator knows its host
// (see the package comment); LookupKey finds any key.
func (l *Ledger) Lookup(now time.Time, fp id.Fingerprint) (ledger.Record, bool) {
	host, ok := l.fpHost[fp]
	if !ok {
		return ledger.Record{}, false
	}
	return l.lookup(now, host, fp)
}

// LookupKey returns the record of key k (fingerprint fp) at time now.
func (l *Ledger) LookupKey(now time.Time, k id.Key, fp id.Fingerprint) (ledger.Record, bool) {
	return l.lookup(now, hostOf(&k), fp)
}

func (l *Ledger) lookup(now time.Time, host string, fp id.Fingerprint) (ledger.Record, bool) {
	ctx, cancel := l.ctx()
	defer cancel()
	rs, err := l.get(ctx, host, []id.Fingerprint{fp})
	if err != nil {
		l.err = err
		return ledger.Record{}, false
	}
	return l.record(now, fp, rs[0])
}

// stored is a record as the script's get reads it: its state ("r", "q",
// "d" or "" for none), then owner and lease start (requested), since
// (queued: f2 empty) or stamp and outcome (done), the key's parts, and
// the number of waiters.
type stored struct {
	st, f2, f3, c, p, u string
	waiters             int
}

// getCall is the script call reading fps on host.
func (l *Ledger) getCall(host string, fps []id.Fingerprint) call {
	args := append(make([]any, 0, 10+len(fps)), "get", "", "", "", "", "", "", "", "", "")
	for _, fp := range fps {
		args = append(args, rawFP(fp))
	}
	return call{host: host, keys: l.baseKeys(host, 0), args: args}
}

// parseStored reads the get call's output for n records.
func parseStored(v any, n int) ([]stored, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 7*n {
		return nil, fmt.Errorf("redis ledger: get answered %T of %d; want %d strings", v, len(arr), 7*n)
	}
	str := func(i int) string { s, _ := arr[i].(string); return s }
	out := make([]stored, n)
	for i := range out {
		b := 7 * i
		w, _ := strconv.Atoi(str(b + 6))
		out[i] = stored{str(b), str(b + 1), str(b + 2), str(b + 3), str(b + 4), str(b + 5), w}
	}
	return out, nil
}

// get reads the records of fps on host.
func (l *Ledger) get(ctx context.Context, host string, fps []id.Fingerprint) ([]stored, error) {
	vals, errs := l.runScripts(ctx, []call{l.getCall(host, fps)})
	if errs[0] != nil {
		return nil, fmt.Errorf("redis ledger: reading %d records on host %q: %w", len(fps), host, errs[0])
	}
	return parseStored(vals[0], len(fps))
}

func (l *Ledger) record(now time.Time, fp id.Fingerprint, m stored) (ledger.Record, bool) {
	r := ledger.Record{FP: fp}
	switch m.st {
	case "r":
		r.State, r.Owner, r.Waiters = ledger.Requested, l.session(m.f2), m.waiters
	case "q":
		r.State = ledger.Queued
	case "d":
		stamp, _ := strconv.ParseInt(m.f2, 10, 64)
		r.State, r.Since = ledger.Done, time.Unix(stamp, 0).UTC()
		ttl := l.cfg.Ledger.DoneTTL
		if m.f3 == "1" {
			r.Outcome, ttl = ledger.DoneFailed, l.cfg.Ledger.FailedTTL
		}
		if ttl != 0 && !now.Before(r.Since.Add(ttl)) {
			return ledger.Record{}, false
		}
		return r, true
	default:
		return ledger.Record{}, false
	}
	us, _ := strconv.ParseInt(m.f3, 10, 64)
	r.Since = time.UnixMicro(us).UTC()
	r.Key = id.Key{Crawler: m.c, Processor: m.p, URL: m.u}
	return r, true
}

// Waiters returns the sessions waiting on fp, first in line first; those
// of other coordinators have Session 0.
func (l *Ledger) Waiters(fp id.Fingerprint) []ledger.Waiter {
	host, ok := l.fpHost[fp]
	if !ok {
		return nil
	}
	ctx, cancel := l.ctx()
	defer cancel()
	ws, err := l.rdb.LRange(ctx, l.pre(host)+"w:"+rawFP(fp), 0, -1).Result()
	if err != nil {
		l.err = err
		return nil
	}
	var out []ledger.Waiter
	for _, w := range ws {
		f := strings.SplitN(w, "|", 3)
		if len(f) != 3 {
			continue
		}
		req, _ := strconv.ParseUint(f[1], 10, 64)
		us, _ := strconv.ParseInt(f[2], 10, 64)
		out = append(out, ledger.Waiter{Session: l.session(f[0]), ReqID: req, Since: time.UnixMicro(us).UTC()})
	}
	return out
}

// Counts sums the counters of the hosts this coordinator has touched.
func (l *Ledger) Counts() ledger.Counts { return l.sum(l.hostList) }

func (l *Ledger) sum(hosts []string) ledger.Counts {
	ctx, cancel := l.ctx()
	defer cancel()
	pipe := l.rdb.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(hosts))
	for i, h := range hosts {
		cmds[i] = pipe.HMGet(ctx, l.pre(h)+"n", "r", "q", "d", "w")
	}
	if len(cmds) == 0 {
		return ledger.Counts{}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		l.err = err
	}
	var c ledger.Counts
	for _, cmd := range cmds {
		v := cmd.Val()
		n := func(i int) int {
			if i >= len(v) {
				return 0
			}
			s, _ := v[i].(string)
			x, _ := strconv.Atoi(s)
			return x
		}
		c.Requested += n(0)
		c.Queued += n(1)
		c.Done += n(2)
		c.Waiters += n(3)
	}
	return c
}

// Requested lists requested keys host by host, each host's oldest lease
// first.
func (l *Ledger) Requested(offset, limit int) []ledger.Record {
	return l.window("lease", offset, limit)
}

// Queued lists queued keys host by host, each host's in queue order.
func (l *Ledger) Queued(offset, limit int) []ledger.Record { return l.window("q", offset, limit) }

func (l *Ledger) window(set string, offset, limit int) []ledger.Record {
	offset = max(offset, 0)
	if limit <= 0 {
		return nil
	}
	ctx, cancel := l.ctx()
	defer cancel()
	var out []ledger.Record
	now := l.cfg.Clock.Now()
	// The hosts' counts first, in one round trip: most hosts hold no key
	// of set, and each read below is a round trip or two.
	field := "r"
	if set == "q" {
		field = "q"
	}
	pipe := l.rdb.Pipeline()
	counts := make([]*goredis.SliceCmd, len(l.hostList))
	for i, h := range l.hostList {
		counts[i] = pipe.HMGet(ctx, l.pre(h)+"n", field)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		l.err = err
		return out
	}
	for i, h := range l.hostList {
		if v := counts[i].Val(); len(v) == 0 || v[0] == nil || v[0] == "0" {
			continue
		}
		keys, err := l.orderKeys(ctx, h, set)
		if err != nil {
			l.err = err
			return out
		}
		pipe := l.rdb.Pipeline()
		cards := make([]*goredis.IntCmd, len(keys))
		for i, k := range keys {
			cards[i] = pipe.ZCard(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			l.err = err
			return out
		}
		for i, k := range keys {
			n := cards[i].Val()
			if int64(offset) >= n {
				offset -= int(n)
				continue
			}
			fps, err := l.rdb.ZRange(ctx, k, int64(offset), int64(offset+limit-len(out)-1)).Result()
			if err != nil {
				l.err = err
				return out
			}
			offset = 0
			for _, s := range fps {
				fp, err := parseRawFP(s)
				if err != nil {
					continue
				}
				if r, ok := l.lookup(now, h, fp); ok {
					l.fpHost[fp] = h
					out = append(out, r)
				}
			}
			if len(out) >= limit {
				return out
			}
		}
	}
	return out
}

// leaseBucket is how many sequence numbers each of a host's lease zsets
// covers (ledger.lua's LB).
const leaseBucket = 128

// orderKeys names the sorted sets holding host's keys of set ("lease",
// "q") in order: the queue is one; the leases are in buckets of sequence
// numbers, from the lowest that may hold one to the one of the host's last
// number.
func (l *Ledger) orderKeys(ctx context.Context, host, set string) ([]string, error) {
	p := l.pre(host)
	if set != "lease" {
		return []string{p + set}, nil
	}
	v, err := l.rdb.HMGet(ctx, p+"n", "lh", "seq").Result()
	if err != nil {
		return nil, fmt.Errorf("redis ledger: reading the lease order of host %q: %w", host, err)
	}
	num := func(x any) int64 {
		s, _ := x.(string)
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	var keys []string
	for b := num(v[0]); b <= num(v[1])/leaseBucket; b++ {
		keys = append(keys, p+"lease:"+strconv.FormatInt(b, 10))
	}
	return keys, nil
}
