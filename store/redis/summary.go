package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
)

// The cluster view (drover status, the console's header): each
// coordinator publishes a summary of itself once per heartbeat into the
// hash PREFIX:summaries (field: its id; value: admin.ClusterCoordinator
// as JSON), and reads everyone's back with the shared queue's length and
// the cluster's jobs done and failed: the sums of the per-slot counts the
// queue's scripts keep with the lists they count (stats.go), so they
// keep a dead coordinator's jobs and never drift. Both calls are safe
// from any goroutine: they use only the client and the configuration.

func (l *Ledger) summariesKey() string { return l.cfg.Prefix + ":summaries" }

// forgetSummary is how long the summary of a coordinator whose heartbeat
// expired stays in the view.
const forgetSummary = time.Minute

// summary is what a coordinator publishes: itself, and the hosts its
// claims found holding polite jobs back (politehosts.go).
type summary struct {
	admin.ClusterCoordinator
	Polite []admin.HostRow `json:"polite_hosts,omitempty"`
	// Held lists the hosts it holds claimed jobs of, as its reactor last
	// noted them (jobview.go); nil from a coordinator that does not say.
	Held *[]string `json:"held_hosts,omitempty"`
	// Retries are its first retries rows and RetriesTotal how many it
	// has (jobretries.go).
	Retries      []admin.JobRow `json:"retries,omitempty"`
	RetriesTotal int            `json:"retries_total,omitempty"`
	// Workers lists the ids of the workers it has sessions with, sorted
	// (workers.go); nil from a coordinator that does not say.
	Workers *[]string `json:"workers,omitempty"`
}

// PublishSummary writes this coordinator's summary, with the hosts its
// claims last found holding polite jobs back; its ID is set here. It
// then reads the drains the cluster keeps (drained.go).
func (l *Ledger) PublishSummary(ctx context.Context, c admin.ClusterCoordinator) error {
	c.ID = l.coord
	s := summary{ClusterCoordinator: c}
	if l.queue != nil {
		s.Polite = l.queue.PoliteHosts(c.Heartbeat)
	}
	if v := l.jobView.Load(); v != nil {
		s.Held = v.held.Load()
		s.Retries, s.RetriesTotal = v.noted()
		s.Workers = v.workersNoted()
		if err := v.publishJobs(ctx); err != nil {
			return fmt.Errorf("redis cluster view: %w", err)
		}
	}
	b, err := json.Marshal(&s)
	if err != nil {
		return fmt.Errorf("redis cluster view: encoding the summary: %w", err)
	}
	if err := l.rdb.HSet(ctx, l.summariesKey(), l.coord, b).Err(); err != nil {
		return fmt.Errorf("redis cluster view: publishing the summary: %w", err)
	}
	return l.readDrained(ctx, l.cfg.Clock.Now()) // drained.go
}

// ClusterView reads every coordinator's summary (dropping those whose
// heartbeat expired over a minute ago), the shared queue's length, the
// cluster's jobs done and failed, and the hosts the live coordinators'
// claims found holding polite jobs back.
func (l *Ledger) ClusterView(ctx context.Context, now time.Time) (*admin.Cluster, error) {
	all, err := l.rdb.HGetAll(ctx, l.summariesKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("redis cluster view: reading summaries: %w", err)
	}
	totals, err := l.readTotals(ctx)
	if err != nil {
		return nil, fmt.Errorf("redis cluster view: %w", err)
	}
	pipe := l.rdb.Pipeline()
	alive := make(map[string]*goredis.IntCmd, len(all))
	for id := range all {
		alive[id] = pipe.Exists(ctx, l.aliveKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis cluster view: reading heartbeats: %w", err)
	}
	v := &admin.Cluster{Coordinators: make([]admin.ClusterCoordinator, 0, len(all))}
	v.Queued = totals.Queued
	v.Done, v.Failed = int(totals.Done), int(totals.Failed)
	var live []summary
	for id, js := range all {
		var s summary
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			continue // not ours to show; a live coordinator rewrites its own
		}
		c := s.ClusterCoordinator
		c.ID = id
		c.Alive = alive[id].Val() == 1
		if !c.Alive && now.Sub(c.Heartbeat) > forgetSummary {
			l.rdb.HDel(ctx, l.summariesKey(), id)
			continue
		}
		if c.Alive {
			v.Claimed += int64(c.Queued + c.Dispatched)
			live = append(live, s)
		}
		v.Coordinators = append(v.Coordinators, c)
	}
	v.PoliteHosts = mergePolite(live)
	slices.SortFunc(v.Coordinators, func(a, b admin.ClusterCoordinator) int {
		x, _ := strconv.Atoi(a.ID)
		y, _ := strconv.Atoi(b.ID)
		return cmp.Compare(x, y)
	})
	return v, nil
}
