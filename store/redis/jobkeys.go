package redis

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
	"drover/coord/id"
)

// The keys of the cluster for the admin views (see jobview.go): the keys
// requested on hosts this coordinator never touched (the walk's last
// part), the waiters of any key, and where the job of a key is.

// ownerName renders a ledger owner (COORD.SESSION) for the views.
func ownerName(owner string) string {
	c, s, ok := strings.Cut(owner, ".")
	if !ok {
		return owner
	}
	return "s" + s + " on coordinator " + c
}

// requested lists the keys requested on hosts (those this coordinator
// touched, as its set of hosts in Redis says, are left out: its own view
// lists them), each host's in lease order, from pos.Index of the first.
func (k *walker) requested(pos walkPos, hosts []string) (walkPos, bool, error) {
	l := k.v.l
	pipe := l.rdb.Pipeline()
	counts := make([]*goredis.SliceCmd, len(hosts))
	var mine *goredis.BoolSliceCmd
	if len(hosts) > 0 {
		args := make([]any, len(hosts))
		for i, h := range hosts {
			args[i] = h
		}
		mine = pipe.SMIsMember(k.ctx, l.hostsKey(l.coord), args...)
	}
	for i, h := range hosts {
		counts[i] = pipe.HMGet(k.ctx, l.pre(h)+"n", "r", "lh", "seq")
	}
	if _, err := pipe.Exec(k.ctx); err != nil && !isNil(err) {
		return pos, false, fmt.Errorf("reading the hosts' counters: %w", err)
	}
	touched := make([]bool, len(hosts))
	if mine != nil {
		copy(touched, mine.Val())
	}
	for i, h := range hosts {
		if touched[i] {
			continue
		}
		v := counts[i].Val()
		num := func(j int) int64 {
			if j >= len(v) {
				return 0
			}
			s, _ := v[j].(string)
			n, _ := strconv.ParseInt(s, 10, 64)
			return n
		}
		if num(0) <= 0 {
			continue
		}
		fps, err := k.leased(h, num(1), num(2))
		if err != nil {
			return pos, false, err
		}
		from := int64(0)
		if i == 0 {
			from = min(pos.Index, int64(len(fps)))
		}
		for len(fps) > int(from) {
			if k.full() {
				return walkPos{Host: h, Index: from}, true, nil
			}
			part := fps[from:min(len(fps), int(from)+walkChunk)]
			rs, err := l.get(k.ctx, h, part)
			if err != nil {
				return pos, false, err
			}
			for j, m := range rs {
				if m.st != "r" {
					continue
				}
				us, _ := strconv.ParseInt(m.f3, 10, 64)
				since := time.UnixMicro(us).UTC()
				r := admin.JobRow{Key: part[j].String(), Crawler: m.c, Processor: m.p, URL: m.u, State: "requested",
					Owner: ownerName(m.f2), Waiters: m.waiters, Created: since, Updated: since}
				if k.take(&r) {
					return walkPos{Host: h, Index: from + int64(j) + 1}, true, nil
				}
			}
			from += int64(len(part))
		}
	}
	return pos, false, nil
}

// leased reads host's requested keys in lease order: its lease buckets
// from lo to the one of sequence number seq.
func (k *walker) leased(host string, lo, seq int64) ([]id.Fingerprint, error) {
	l := k.v.l
	pipe := l.rdb.Pipeline()
	var cmds []*goredis.StringSliceCmd
	for b := lo; b <= seq/leaseBucket; b++ {
		cmds = append(cmds, pipe.ZRange(k.ctx, l.pre(host)+"lease:"+strconv.FormatInt(b, 10), 0, -1))
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(k.ctx); err != nil && !isNil(err) {
		return nil, fmt.Errorf("reading host %q's leases: %w", host, err)
	}
	var out []id.Fingerprint
	for _, c := range cmds {
		for _, s := range c.Val() {
			if fp, err := parseRawFP(s); err == nil {
				out = append(out, fp)
			}
		}
	}
	return out, nil
}

func isNil(err error) bool { return errors.Is(err, goredis.Nil) }

// Host is the host of key fp, if a walk listed it or this coordinator's
// ledger knows it. Call it on the reactor's goroutine (it reads the
// ledger).
func (v *JobView) Host(fp id.Fingerprint) (string, bool) {
	v.mu.Lock()
	h, ok := v.hostOf[fp]
	v.mu.Unlock()
	if ok {
		return h, true
	}
	h, ok = v.l.fpHost[fp]
	return h, ok
}

// Waiters lists the sessions waiting on key fp of host (as Host gives
// it), first in line first, from Redis.
func (v *JobView) Waiters(fp id.Fingerprint, host string) (rows []admin.WaiterRow, err error) {
	ctx, cancel := v.l.ctx()
	defer cancel()
	ws, err := v.l.rdb.LRange(ctx, v.l.pre(host)+"w:"+rawFP(fp), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis job view: reading the waiters of key %s: %w", fp, err)
	}
	for _, w := range ws {
		f := strings.SplitN(w, "|", 3)
		if len(f) != 3 {
			continue
		}
		us, _ := strconv.ParseInt(f[2], 10, 64)
		rows = append(rows, admin.WaiterRow{Position: len(rows) + 1, Session: ownerName(f[0]), Since: time.UnixMicro(us).UTC()})
	}
	return rows, nil
}

// Locate finds the job of key fp of host h (as Host gives it) in the
// cluster: leased to a coordinator (row state claimed, Coordinator set;
// this coordinator's own leases included) or waiting in the shared queue
// (state queued; each of the host's queues is searched up to walkExamined
// entries). ok is false when no job of it was found.
func (v *JobView) Locate(fp id.Fingerprint, h string) (row admin.JobRow, ok bool, err error) {
	l := v.l
	ctx, cancel := l.ctx()
	defer cancel()
	k := &walker{v: v, ctx: ctx}
	ids, err := l.rdb.SMembers(ctx, l.liveSet()).Result()
	if err != nil {
		return row, false, fmt.Errorf("redis job view: reading the coordinators: %w", err)
	}
	slices.Sort(ids)
	pipe := l.rdb.Pipeline()
	cmds := make([][2]*goredis.StringCmd, len(ids))
	for i, c := range ids {
		cmds[i] = [2]*goredis.StringCmd{pipe.HGet(ctx, l.pre(h)+"jl:"+c, fp.String()), pipe.HGet(ctx, l.pre(h)+"pl:"+c, fp.String())}
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return row, false, fmt.Errorf("redis job view: reading the leases of key %s: %w", fp, err)
	}
	for i, c := range ids {
		for _, cmd := range cmds[i] {
			if e, err := cmd.Result(); err == nil {
				reason := k.claimedReason(c)
				r, ok := entryRow(e, "claimed", c, reason+": queued, running or backing off there")
				if held, err := k.heldJobs(c, []string{fp.String()}); err == nil && ok {
					if h, found := held[fp.String()]; found {
						h.detail(&r, reason)
					}
				}
				return r, ok, nil
			}
		}
	}
	prefix := fp.String() + " "
	for li, list := range []string{"jq", "pq"} {
		for from := int64(0); from < walkExamined; from += walkChunk {
			es, err := l.rdb.LRange(ctx, l.pre(h)+list, from, from+walkChunk-1).Result()
			if err != nil {
				return row, false, fmt.Errorf("redis job view: reading host %q's queue: %w", h, err)
			}
			for _, e := range es {
				if strings.HasPrefix(e, prefix) {
					r, ok := entryRow(e, "queued", "", "in the cluster's queue, for any coordinator to claim")
					if waits, err := k.hostWaits([]string{h}); err == nil { // jobwait.go
						k.queuedWait(&r, h, li == 1, waits[h])
					}
					return r, ok, nil
				}
			}
			if len(es) < walkChunk {
				break
			}
		}
	}
	return row, false, nil
}
