package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/net/client"
	"drover/net/wire"
)

// dedupStreams builds the dedup workload: conns streams of keys, total
// keys in all, in which every other key repeats a key seen earlier in the
// same stream (so half the decisions are duplicates, each one a lookup of
// a key the store holds). Streams are disjoint, so no connection ever asks
// for a key another connection holds.
func dedupStreams(total, conns int, seed uint64) [][]id.Key {
	r := rand.New(rand.NewPCG(seed, 21))
	streams := make([][]id.Key, conns)
	per := total / conns
	for c := range streams {
		s := make([]id.Key, 0, per)
		fresh := 0
		for i := range per {
			if i%2 == 1 {
				s = append(s, s[2*r.IntN(fresh)]) // a key this stream already sent
				continue
			}
			s = append(s, id.Key{Crawler: "bench", Processor: "fetch",
				URL: fmt.Sprintf("https://host-%d.example.com/section/%d/page-%d.html", c, r.IntN(1000), seed<<32|uint64(fresh))})
			fresh++
		}
		streams[c] = s
	}
	return streams
}

// member is a key as a Redis set member: the three parts, as drover keys it.
func member(k id.Key) string { return k.Crawler + "\x00" + k.Processor + "\x00" + k.URL }

// dedupResult is one side's figures for one round.
type dedupResult struct {
	took       time.Duration
	decisions  int
	duplicates int
	// server and client are the CPU time the server process and this
	// process (the load generator) used during the run: far less
	// sensitive to other load on the machine than decisions/s.
	server, client time.Duration
}

func (d dedupResult) rate() float64 { return float64(d.decisions) / d.took.Seconds() }

// serverNs and clientNs are the CPU nanoseconds per decision.
func (d dedupResult) serverNs() float64 {
	return float64(d.server.Nanoseconds()) / float64(d.decisions)
}
func (d dedupResult) clientNs() float64 {
	return float64(d.client.Nanoseconds()) / float64(d.decisions)
}

// redisDedup sends each stream over its own connection as pipelines of
// batch SADD commands (one member each, so each key gets its own answer),
// one pipeline in flight per connection.
func redisDedup(ctx context.Context, addr string, pid int, streams [][]id.Key, batch int) (dedupResult, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: len(streams), MinIdleConns: len(streams)})
	defer c.Close()
	if err := c.FlushAll(ctx).Err(); err != nil {
		return dedupResult{}, fmt.Errorf("redis FLUSHALL: %w", err)
	}
	members := make([][]string, len(streams)) // built before the clock starts, as drover's keys are
	for i, s := range streams {
		members[i] = make([]string, len(s))
		for j, k := range s {
			members[i][j] = member(k)
		}
	}
	return timeStreams(streams, pid, func(i int, dups *int) error {
		ms := members[i]
		cmds := make([]*redis.IntCmd, 0, batch)
		for lo := 0; lo < len(ms); lo += batch {
			hi := min(lo+batch, len(ms))
			cmds = cmds[:0]
			p := c.Pipeline()
			for _, m := range ms[lo:hi] {
				cmds = append(cmds, p.SAdd(ctx, "seen", m))
			}
			if _, err := p.Exec(ctx); err != nil {
				return fmt.Errorf("redis SADD pipeline: %w", err)
			}
			for _, cmd := range cmds {
				if cmd.Val() == 0 {
					*dups++
				}
			}
		}
		return nil
	})
}

// droverDedup sends each stream over its own client session as REQUEST
// batches of batch keys, one batch in flight per session. With queue, the
// keys each batch obtained are then QUEUEd (REQUEST + QUEUE: a duplicate
// is then answered no, as a crawl's frontier would be), in the same
// round trip's wake.
func droverDedup(ctx context.Context, peers string, pid int, streams [][]id.Key, batch int, queue bool) (dedupResult, error) {
	clients := make([]*client.Client, len(streams))
	for i := range clients {
		c, err := client.Dial(ctx, client.Options{Connect: peers, ID: fmt.Sprintf("bench-dedup-%d", i), Timeout: time.Minute})
		if err != nil {
			return dedupResult{}, err
		}
		defer c.Close()
		clients[i] = c
	}
	return timeStreams(streams, pid, func(i int, dups *int) error {
		s, c := streams[i], clients[i]
		var fresh []id.Key
		for lo := 0; lo < len(s); lo += batch {
			part := s[lo:min(lo+batch, len(s))]
			v, err := c.Request(ctx, part)
			if err != nil {
				return err
			}
			fresh = fresh[:0]
			for j, x := range v {
				switch {
				case x.Verdict == wire.VerdictOK && x.Reason == "":
					fresh = append(fresh, part[j])
				case x.Verdict == wire.VerdictOK || x.Verdict == wire.VerdictNo:
					*dups++ // already held by this session, or queued
				default:
					return fmt.Errorf("REQUEST %s: verdict %v %q, want ok or no", part[j].URL, x.Verdict, x.Reason)
				}
			}
			if queue && len(fresh) > 0 {
				if _, err := c.Queue(ctx, fresh); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// timeStreams runs run for each stream on a goroutine of its own, timed
// together, and measures the CPU time of server process pid and of this
// process over the run; run counts the duplicates its stream met in dups.
// The result sums them; the first stream's error (in stream order) is
// returned.
func timeStreams(streams [][]id.Key, pid int, run func(i int, dups *int) error) (dedupResult, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	dups := make([]int, len(streams))
	srv0, err := cpuTime(pid)
	if err != nil {
		return dedupResult{}, err
	}
	cli0 := selfCPU()
	began := time.Now()
	for i := range streams {
		wg.Go(func() { errs[i] = run(i, &dups[i]) })
	}
	wg.Wait()
	res := dedupResult{took: time.Since(began), client: selfCPU() - cli0}
	srv1, err := cpuTime(pid)
	if err != nil {
		return res, err
	}
	res.server = srv1 - srv0
	for i := range streams {
		if errs[i] != nil {
			return res, errs[i]
		}
		res.decisions += len(streams[i])
		res.duplicates += dups[i]
	}
	return res, nil
}
