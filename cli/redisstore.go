package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"drover/admin"
	"drover/config"
	"drover/coord"
	"drover/internal/redisurl"
	storeredis "drover/store/redis"
)

// Several coordinators on a Redis Cluster (store.url, or --store
// redis://...): the ledger and the broker's queue live on the cluster
// (drover/store/redis) instead of the embedded store, shared by every
// coordinator given the same URL.

// storeURL is the Redis Cluster serve should use, or "" for the embedded
// store: store.url, or a store.path that is a redis:// or rediss:// URL
// (--store redis://...). Both set, or a URL that does not parse, is a
// configuration error naming the key (exit 2); so is a store.path that is
// a URL of another scheme (--store http://..., not made a directory of
// that name). The password never shows in an error.
func storeURL(cfg *config.Config) (storeredis.Target, bool, error) {
	key, raw := "store.url", cfg.Store.URL
	if config.IsURL(cfg.Store.Path) {
		if raw != "" {
			return storeredis.Target{}, false, &exitError{code: 2, err: fmt.Errorf("store.path is a URL and store.url is set too: want one of them")}
		}
		key, raw = "store.path", cfg.Store.Path
	}
	if raw == "" {
		return storeredis.Target{}, false, nil
	}
	t, err := redisurl.Parse(raw)
	if err != nil {
		return t, false, &exitError{code: 2, err: fmt.Errorf("%s: %w", key, err)}
	}
	return t, true, nil
}

// redisPrefix namespaces drover's keys on the cluster.
const redisPrefix = "drover"

// openRedis connects to the cluster at t and joins its coordinators: the
// ledger (a peer heartbeating every heartbeat.interval) and the shared
// job queue, which holds the crawls for the cluster, go into cc.
func openRedis(ctx context.Context, cfg *config.Config, t storeredis.Target, cc *coord.Config, log *slog.Logger) (*storeredis.Ledger, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	storeredis.LogTo(log)
	l, err := storeredis.Open(ctx, t, storeredis.Config{
		Ledger:    cc.Ledger,
		Prefix:    redisPrefix,
		Heartbeat: max(cfg.Heartbeat.Interval, 100*time.Millisecond),
		// Coordinators' clocks may disagree: leases run on the server's.
		ServerClock:  true,
		WaitReplicas: cfg.Store.Redis.WaitReplicas,
		WaitTimeout:  cfg.Store.Redis.WaitTimeout,
		Log:          log,
	})
	if err != nil {
		return nil, fmt.Errorf("store.url %s: %w", t, err)
	}
	cc.Backend = l
	cc.Shared = l.Crawls() // the queue with the crawls held for the whole cluster
	log.Info("store on Redis Cluster", "url", t.String(), "coordinator", l.Coordinator())
	return l, nil
}

// leaveRedis is a clean stop on the cluster, once the reactor has
// stopped: the jobs this coordinator claimed and did not finish go back to
// the queue for the others, its sessions' keys are released, and it
// leaves the live coordinators.
func leaveRedis(l *storeredis.Ledger, log *slog.Logger) {
	now := l.Clock().Now()
	n, err := l.Jobs().ReturnLeased()
	if err != nil {
		log.Error("returning claimed jobs to the Redis queue", "err", err)
	}
	if err := l.Leave(now); err != nil {
		log.Error("leaving the Redis Cluster", "err", err)
	}
	log.Info("left the Redis Cluster", "coordinator", l.Coordinator(), "jobs returned", n)
}

// clusterView publishes this coordinator's summary to the cluster once per
// heartbeat and keeps the view of every coordinator for the admin totals
// (drover status, the console's header).
type clusterView struct {
	l      *storeredis.Ledger
	peers  string
	totals atomic.Pointer[admin.Totals] // the reactor's latest (OnTotals)
	view   atomic.Pointer[admin.Cluster]
}

// get is the latest view (nil before the first read); called by the reactor.
func (v *clusterView) get() *admin.Cluster { return v.view.Load() }

// run publishes and reads every interval, on the ledger's clock, until
// ctx ends.
func (v *clusterView) run(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := v.l.Clock().NewTimer(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			t.Reset(every)
		}
		err := v.refresh(ctx, every)
		if err != nil && !failing {
			log.Warn("cluster view", "err", err)
		}
		failing = err != nil
	}
}

func (v *clusterView) refresh(ctx context.Context, every time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, max(every, time.Second))
	defer cancel()
	now := v.l.Clock().Now()
	if t := v.totals.Load(); t != nil {
		err := v.l.PublishSummary(ctx, admin.ClusterCoordinator{
			Peers: v.peers, WorkersIdle: t.WorkersIdle, WorkersBusy: t.WorkersBusy,
			Queued: t.Queued + t.Backoff, Dispatched: t.Dispatched, Done: t.Done, Failed: t.Failed, Heartbeat: now,
		})
		if err != nil {
			return err
		}
	}
	cv, err := v.l.ClusterView(ctx, now)
	if err != nil {
		return err
	}
	v.view.Store(cv)
	return nil
}
