package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// noReplicaFor is how long a master whose replicas did not acknowledge a
// WAIT is refused at once, without waiting: a coordinator calls the ledger
// from its one loop, which must not stall for WaitTimeout on every call
// while a shard has no replica. After it, a ROLE (no wait) checks the
// master has enough replicas connected before the next WAIT.
const noReplicaFor = time.Second

// waitReplicas checks that the writes of the calls that ran (ran[i]) reached
// Config.WaitReplicas replicas of their shards. On each master written to it
// sends, on one connection, a write of its own and then WAIT: a master's
// replication stream is one sequence, so once a replica holds that write
// it holds every script run on the master before it, whichever connection
// ran them. The masters are asked in parallel. It returns, per call, nil or
// why its writes are not confirmed.
func (l *Ledger) waitReplicas(ctx context.Context, calls []call, ran []bool) []error {
	errs := make([]error, len(calls))
	type group struct {
		node *goredis.Client
		key  string // a key of the node's, for the write of its own
		idx  []int
	}
	byNode := make(map[*goredis.Client]*group)
	var groups []*group
	for i, c := range calls {
		if !ran[i] {
			continue
		}
		node, err := l.masterFor(ctx, c.keys[0])
		if err != nil {
			errs[i] = err
			continue
		}
		g := byNode[node]
		if g == nil {
			g = &group{node: node, key: c.keys[0]}
			byNode[node] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	res := make([]error, len(groups))
	probe := make([]bool, len(groups))
	now := l.cfg.Clock.Now()
	var wg sync.WaitGroup
	for j, g := range groups {
		if until, ok := l.noReplica[g.node]; ok {
			if now.Before(until) {
				res[j] = fmt.Errorf("no replica acknowledged a WAIT within %v in the last %v; want a replica in sync", l.cfg.WaitTimeout, noReplicaFor)
				continue
			}
			probe[j] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[j] = l.waitOn(ctx, g.node, g.key, probe[j])
		}()
	}
	wg.Wait()
	for j, g := range groups {
		switch {
		case res[j] == nil:
			delete(l.noReplica, g.node)
		case probe[j] || l.noReplica[g.node].IsZero():
			if l.noReplica == nil {
				l.noReplica = make(map[*goredis.Client]time.Time)
			}
			l.noReplica[g.node] = l.cfg.Clock.Now().Add(noReplicaFor)
		}
	}
	for j, g := range groups {
		if res[j] == nil {
			continue
		}
		for _, i := range g.idx {
			errs[i] = fmt.Errorf("redis ledger: %s on host %q: %w", calls[i].args[0], calls[i].host, res[j])
		}
	}
	return errs
}

// masterFor is the client of the master holding key.
func (l *Ledger) masterFor(ctx context.Context, key string) (*goredis.Client, error) {
	switch c := l.rdb.(type) {
	case *goredis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("redis ledger: finding the master of %q: %w", key, err)
		}
		return node, nil
	case *goredis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("redis ledger: a %T client; want a cluster or a single-node client", l.rdb)
}

// waitOn writes nothing new to key's counters hash (HINCRBY by 0 is still
// replicated) and waits for the replicas to acknowledge it; with probe,
// first asks the master (ROLE) whether enough replicas are connected, and
// refuses at once if not.
func (l *Ledger) waitOn(ctx context.Context, node *goredis.Client, key string, probe bool) error {
	if probe {
		v, err := node.Do(ctx, "role").Slice()
		if err != nil {
			return fmt.Errorf("asking the master its replicas (ROLE): %w", err)
		}
		if len(v) < 3 {
			return fmt.Errorf("ROLE answered %v; want a master's role, offset and replicas", v)
		}
		if reps, _ := v[2].([]any); len(reps) < l.cfg.WaitReplicas {
			return fmt.Errorf("%d replicas connected of %d wanted (ROLE); want a replica in sync", len(reps), l.cfg.WaitReplicas)
		}
	}
	pipe := node.Pipeline()
	pipe.HIncrBy(ctx, key, "seq", 0)
	w := pipe.Do(ctx, "wait", l.cfg.WaitReplicas, l.cfg.WaitTimeout.Milliseconds())
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("waiting for %d replicas (WAIT): %w", l.cfg.WaitReplicas, err)
	}
	n, err := w.Int64()
	if err != nil {
		return fmt.Errorf("waiting for %d replicas (WAIT): %w", l.cfg.WaitReplicas, err)
	}
	if n < int64(l.cfg.WaitReplicas) {
		return fmt.Errorf("%d replicas of %d wanted acknowledged the writes within %v (WAIT); want a replica in sync", n, l.cfg.WaitReplicas, l.cfg.WaitTimeout)
	}
	return nil
}
