package redis

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/coord/ledger"
)

// Several coordinators on one cluster. With Config.Heartbeat set, a
// ledger:
//
//   - keeps PREFIX:coord:ID:alive alive (TTL three heartbeats) and is listed
//     in PREFIX:coordinators:live;
//   - listens on PREFIX:answers:ID for the answers other coordinators'
//     scripts produce for its waiting sessions (a key released there is
//     handed to a waiter here); the notification is only for speed: every
//     heartbeat it also reads the keys its sessions wait on, and answers
//     those that were handed to them, queued or done;
//   - sweeps dead peers: when a listed coordinator's alive key has expired,
//     the live coordinator that rendezvous hashing picks for it releases
//     every session the dead one had, host by host (PREFIX:coord:ID:hosts
//     lists where), so its keys pass to their waiters or are removed. A
//     double sweep is harmless: releasing a released session does nothing.

func (l *Ledger) liveSet() string          { return l.cfg.Prefix + ":coordinators:live" }
func (l *Ledger) aliveKey(c string) string { return l.cfg.Prefix + ":coord:" + c + ":alive" }
func (l *Ledger) hostsKey(c string) string { return l.cfg.Prefix + ":coord:" + c + ":hosts" }

// join starts the heartbeat and the inbox (Config.Heartbeat > 0).
func (l *Ledger) join(ctx context.Context) error {
	b, err := newInbox(ctx, l.rdb, l.cfg.Prefix+":answers:"+l.coord, l.parseAnswer)
	if err != nil {
		return fmt.Errorf("redis ledger: subscribing to answers: %w", err)
	}
	l.inbox = b
	if err := l.beat(ctx); err != nil {
		return err
	}
	if err := l.rdb.SAdd(ctx, l.liveSet(), l.coord).Err(); err != nil {
		return fmt.Errorf("redis ledger: joining the live coordinators: %w", err)
	}
	// The workers kept drained, before any says HELLO here (drained.go);
	// read again with every summary.
	if err := l.readDrained(ctx, l.cfg.Clock.Now()); err != nil {
		l.logWarn("reading the workers the cluster keeps drained", "err", err)
	}
	// The alive key is renewed from a goroutine of its own (the client is
	// safe for concurrent use), so a coordinator busy for longer than
	// three heartbeats is not taken for dead.
	l.stopBeat, l.beatDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.beatDone)
		t := l.cfg.Clock.NewTimer(l.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-l.stopBeat:
				return
			case <-t.C():
				ctx, cancel := l.ctx()
				_ = l.beat(ctx) // a failure shows in Maintain's own beat
				cancel()
				t.Reset(l.cfg.Heartbeat)
			}
		}
	}()
	return nil
}

// halt stops the heartbeat and the answers, as the process dying would.
func (l *Ledger) halt() {
	if l.stopBeat != nil {
		close(l.stopBeat)
		<-l.beatDone
		l.stopBeat = nil
	}
	if l.inbox != nil {
		l.inbox.close()
	}
}

func (l *Ledger) beat(ctx context.Context) error {
	if err := l.rdb.Set(ctx, l.aliveKey(l.coord), "1", 3*l.cfg.Heartbeat).Err(); err != nil {
		return fmt.Errorf("redis ledger: heartbeat: %w", err)
	}
	return nil
}

// Maintain is the heartbeat: it renews this coordinator's alive key,
// answers waits whose notification did not come, and sweeps dead peers.
// Tick calls it once per Config.Heartbeat; call it directly to force one.
func (l *Ledger) Maintain(now time.Time) {
	if l.inbox == nil {
		return
	}
	ctx, cancel := l.ctx()
	defer cancel()
	if err := l.beat(ctx); err != nil {
		l.err = err
		return
	}
	l.nextBeat = now.Add(l.cfg.Heartbeat)
	// Taken for dead and swept (a pause longer than three heartbeats):
	// its sessions' keys went to others, and the owner checks refuse
	// what they still think they hold. It joins again.
	if added, err := l.rdb.SAdd(ctx, l.liveSet(), l.coord).Result(); err == nil && added == 1 {
		l.Rejoined++
		l.logWarn("this coordinator was taken for dead (no heartbeat for three intervals) and swept by another: its claimed jobs went back to the queue and may run twice; it joins again",
			"coordinator", l.coord, "heartbeat", l.cfg.Heartbeat)
		l.rejoin(ctx)
	}
	l.pollWaits(ctx, now)
	l.sweepDead(ctx, now)
}

// rejoin mends what the sweep of this coordinator undid: its record of
// the hosts it has state on is gone, and its leases of the shared queue
// went back to the queues. The hosts it remembers are registered again
// (it may have taken leases there since the sweep, and will again: the
// next sweep must find them), or, should that fail, forgotten, so the
// next use of each registers it; the jobs it held are no longer its.
func (l *Ledger) rejoin(ctx context.Context) {
	if l.queue != nil {
		clear(l.queue.held)
	}
	var err error
	for part := range slices.Chunk(l.hostList, 1000) {
		hosts := make([]any, len(part))
		for i, h := range part {
			hosts[i] = h
		}
		if err = l.rdb.SAdd(ctx, l.hostsKey(l.coord), hosts...).Err(); err != nil {
			break
		}
	}
	if err != nil {
		l.err = fmt.Errorf("redis ledger: registering again, after this coordinator was swept, the %d hosts it has state on: %w", len(l.hostList), err)
		clear(l.hosts)
		l.hostList = l.hostList[:0]
	}
}

// pollWaits reads the keys local sessions wait on and answers those no
// longer held by someone else.
func (l *Ledger) pollWaits(ctx context.Context, now time.Time) {
	type w struct {
		k waitKey
		e waitEntry
	}
	byHost := make(map[string][]w)
	var hosts []string
	n := 0
	for k, e := range l.inbox.waits {
		if n == 4096 {
			break
		}
		n++
		if _, ok := byHost[e.host]; !ok {
			hosts = append(hosts, e.host)
		}
		byHost[e.host] = append(byHost[e.host], w{k, e})
	}
	if n == 0 {
		return
	}
	calls := make([]call, len(hosts))
	for i, h := range hosts {
		fps := make([]id.Fingerprint, len(byHost[h]))
		for j, x := range byHost[h] {
			fps[j] = x.k.fp
		}
		calls[i] = l.getCall(h, fps)
	}
	vals, errs := l.runScripts(ctx, calls)
	for i, h := range hosts {
		ws := byHost[h]
		if errs[i] != nil {
			l.err = fmt.Errorf("redis ledger: reading waited-on keys on host %q: %w", h, errs[i])
			continue
		}
		rs, err := parseStored(vals[i], len(ws))
		if err != nil {
			l.err = err
			continue
		}
		for j, x := range ws {
			r := rs[j]
			a := ledger.Answer{Session: x.e.s, ReqID: x.e.req, FP: x.k.fp}
			switch r.st {
			case "r":
				if r.f2 != x.k.owner {
					continue // still held by another
				}
				a.Verdict, a.Reason = ledger.OK, ledger.ReasonHandover
			case "q":
				a.Verdict, a.Reason = ledger.No, ledger.ReasonQueued
			case "d":
				a.Verdict, a.Reason = ledger.No, ledger.ReasonDone
				if r.f3 == "1" {
					a.Reason = ledger.ReasonFailed
				}
			default:
				continue
			}
			l.inbox.settle(x.k.owner, x.k.fp)
			if a.Verdict == ledger.OK {
				l.held(a.Session, x.e.host, a.FP)
			}
			l.answers = append(l.answers, a)
		}
	}
}

// sweepDead releases the sessions of dead coordinators this one is
// responsible for.
func (l *Ledger) sweepDead(ctx context.Context, now time.Time) {
	ids, err := l.rdb.SMembers(ctx, l.liveSet()).Result()
	if err != nil {
		l.err = err
		return
	}
	pipe := l.rdb.Pipeline()
	alive := make([]*goredis.IntCmd, len(ids))
	for i, c := range ids {
		alive[i] = pipe.Exists(ctx, l.aliveKey(c))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		l.err = err
		return
	}
	var live, dead []string
	for i, c := range ids {
		if alive[i].Val() == 1 {
			live = append(live, c)
		} else {
			dead = append(dead, c)
		}
	}
	for _, d := range dead {
		if sweeper(d, live) == l.coord {
			l.sweepCoordinator(ctx, now, d)
		}
	}
}

// sweeper is the live coordinator that sweeps dead one d: the highest
// rendezvous hash of (d, live).
func sweeper(d string, live []string) string {
	best, bestH := "", uint64(0)
	for _, c := range live {
		h := fnv.New64a()
		h.Write([]byte(d + "/" + c))
		if v := h.Sum64(); best == "" || v > bestH {
			best, bestH = c, v
		}
	}
	return best
}

// sweepCoordinator releases every session of coordinator d, host by host.
func (l *Ledger) sweepCoordinator(ctx context.Context, now time.Time, d string) {
	hosts, err := l.rdb.SMembers(ctx, l.hostsKey(d)).Result()
	if err != nil {
		l.err = err
		return
	}
	calls := make([]call, 0, len(hosts))
	for _, h := range hosts {
		keys := append(l.baseKeys(h, 1), l.pre(h)+"co:"+d)
		calls = append(calls, call{host: h, keys: keys, args: l.args("release-all", now, 0)})
	}
	// A few hosts per round trip: each script may hand over many keys,
	// and every round trip has the store timeout.
	for len(calls) > 0 {
		n := min(len(calls), 4)
		if _, _, err := l.exec(calls[:n]); err != nil {
			return // tried again at the next heartbeat (release-all is idempotent)
		}
		calls = calls[n:]
	}
	ctx, cancel := l.ctx()
	defer cancel()
	// Its jobs of the shared queue (queue.go) go back to their queues.
	n, err := l.returnJobs(ctx, d, hosts)
	if l.queue != nil {
		l.queue.Returned += uint64(n)
	}
	if err != nil {
		l.err = err
		return // tried again at the next heartbeat (unlease is idempotent)
	}
	// The actions posted to it and not carried out are forwarded to
	// where their workers went, or answered as not done
	// (controlsettle.go).
	acts, fwd, err := l.settleControls(ctx, d, "died")
	if fwd > 0 {
		l.logWarn("actions posted to a coordinator taken for dead forwarded to the live coordinators their workers are on now", "dead", d, "posts", fwd)
	}
	if acts > 0 {
		l.logWarn("actions posted to a coordinator taken for dead answered as not done by it", "dead", d, "actions", acts)
	}
	if err != nil {
		l.err = err
		return // tried again at the next heartbeat
	}
	pipe := l.rdb.Pipeline()
	pipe.Del(ctx, l.hostsKey(d))
	pipe.SRem(ctx, l.liveSet(), d)
	if _, err := pipe.Exec(ctx); err != nil {
		l.err = fmt.Errorf("redis ledger: forgetting swept coordinator %s: %w", d, err)
		return
	}
	l.Swept++
	l.logWarn("coordinator taken for dead (no heartbeat for three intervals) and swept: its claimed jobs went back to the queue",
		"dead", d, "jobs", n, "hosts", len(hosts))
}

// logWarn logs msg at warning level when the ledger was given a logger.
func (l *Ledger) logWarn(msg string, args ...any) {
	if l.cfg.Log != nil {
		l.cfg.Log.Warn(msg, args...)
	}
}

// Leave stops the heartbeat as a clean shutdown would: releases every
// local session, removes this coordinator from the live set and closes
// the ledger.
func (l *Ledger) Leave(now time.Time) error {
	for s := range l.sessions {
		l.Release(now, s)
	}
	ctx, cancel := l.ctx()
	defer cancel()
	l.rdb.Del(ctx, l.aliveKey(l.coord), l.hostsKey(l.coord))
	l.rdb.SRem(ctx, l.liveSet(), l.coord)
	// The actions posted to it and not carried out are forwarded to
	// where their workers went, or answered as not done
	// (controlsettle.go): now that it has left, nobody reads its lists.
	acts, fwd, err := l.settleControls(ctx, l.coord, "stopped")
	if err != nil {
		l.logWarn("settling the actions posted to this coordinator and not carried out", "err", err)
	}
	if fwd > 0 {
		l.logWarn("actions posted to this coordinator and not carried out forwarded to the live coordinators their workers are on now", "posts", fwd)
	}
	if acts > 0 {
		l.logWarn("actions posted to this coordinator and not carried out answered as not done", "actions", acts)
	}
	return l.Close()
}
