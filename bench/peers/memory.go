package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/net/client"
	"drover/net/wire"
)

// memState is what the memory benchmark leaves n keys in.
type memState string

const (
	stateRequested memState = "requested"
	stateQueued    memState = "queued"
	stateDone      memState = "done"
	// stateRestarted: queued, then the coordinator restarted on its
	// store (droverRestarted).
	stateRestarted memState = "queued-restarted"
)

// memResult is bytes per key: RSS growth, and for Redis used_memory growth.
type memResult struct {
	rss  float64 // RSS growth per key
	used float64 // Redis: used_memory growth per key; drover: Go heap in use growth per key
}

const memChunk = 100_000 // keys per client call (the client splits and pipelines it)

func memKey(i int) id.Key {
	return id.Key{Crawler: "bench", Processor: "fetch", URL: fmt.Sprintf("https://host-%d.example.com/section/%d/page-%d.html", i%1000, i%997, i)}
}

// droverMemory starts a fresh `drover serve --store memory`, puts n keys
// in state st through one producer session (requested: REQUEST; queued:
// SUBMIT with an empty payload; done: REQUEST then DONE ok, chunk by
// chunk), and returns the serve process's RSS growth per key, measured
// once RSS has settled, with the session still open.
func droverMemory(ctx context.Context, bin string, n int, st memState, smapsDir string) (memResult, error) {
	s, err := startDrover(bin, "memory")
	if err != nil {
		return memResult{}, err
	}
	defer s.stop()
	// A call's timeout well above a loaded machine's pauses: this measures
	// memory, not latency (the slowest call is reported as progress).
	c, err := client.Dial(ctx, client.Options{Connect: s.peers, ID: "bench-memory", Timeout: 2 * time.Minute})
	if err != nil {
		return memResult{}, err
	}
	defer c.Close()
	base, err := settledRSS(s.cmd.Process.Pid)
	if err != nil {
		return memResult{}, err
	}
	heap0, err := s.heapInuse()
	if err != nil {
		return memResult{}, err
	}
	s.breakdown(fmt.Sprintf("memory %d %s: before", n, st), base)
	if err := saveSmaps(smapsDir, s.cmd.Process.Pid, fmt.Sprintf("%d-%s-before", n, st)); err != nil {
		return memResult{}, err
	}
	if err := fillDrover(ctx, c, n, st); err != nil {
		return memResult{}, err
	}
	after, err := settledRSS(s.cmd.Process.Pid)
	if err != nil {
		return memResult{}, err
	}
	heap1, err := s.heapInuse()
	if err != nil {
		return memResult{}, err
	}
	if err := saveSmaps(smapsDir, s.cmd.Process.Pid, fmt.Sprintf("%d-%s-after", n, st)); err != nil {
		return memResult{}, err
	}
	s.breakdown(fmt.Sprintf("memory %d %s", n, st), after)
	return memResult{rss: float64(after-base) / float64(n), used: float64(heap1-heap0) / float64(n)}, nil
}

// droverRestarted submits n queued jobs (empty payload) into a durable
// `drover serve` that keeps every queued job in memory
// (--store-resident-jobs 0), stops it, starts it again on its store, and
// returns the restarted process's RSS (and Go heap in use) over that of a
// fresh serve on an empty store, per job, once RSS has settled. The store's
// own caches (Pebble's block cache, filled by the restore's reads) count
// too.
func droverRestarted(ctx context.Context, bin string, n int) (memResult, error) {
	dir, err := os.MkdirTemp("", "peers-restart-")
	if err != nil {
		return memResult{}, err
	}
	defer os.RemoveAll(dir)
	all := []string{"--store-resident-jobs", "0"}
	s0, err := startDrover(bin, filepath.Join(dir, "empty"), all...)
	if err != nil {
		return memResult{}, err
	}
	base, err := settledRSS(s0.cmd.Process.Pid)
	heap0, herr := s0.heapInuse()
	s0.stop()
	if err = cmp.Or(err, herr); err != nil {
		return memResult{}, err
	}
	store := filepath.Join(dir, "store")
	s1, err := startDrover(bin, store, all...)
	if err != nil {
		return memResult{}, err
	}
	c, err := client.Dial(ctx, client.Options{Connect: s1.peers, ID: "bench-memory", Timeout: 2 * time.Minute})
	if err == nil {
		err = fillDrover(ctx, c, n, stateQueued)
		c.Close()
	}
	if err == nil {
		// The same process before the restart, for comparison (its store
		// wrote every job: its memtables are full, its cache not).
		var before int64
		if before, err = settledRSS(s1.cmd.Process.Pid); err == nil {
			progress("memory %d %s: before the restart %.0f B/key RSS", n, stateRestarted, float64(before-base)/float64(n))
		}
	}
	s1.stop()
	if err != nil {
		return memResult{}, err
	}
	start := time.Now()
	s2, err := startDroverWait(bin, store, 20*time.Minute, all...)
	if err != nil {
		return memResult{}, err
	}
	defer s2.stop()
	progress("memory %d %s: serving again %v after the start", n, stateRestarted, time.Since(start).Round(time.Millisecond))
	after, err := settledRSS(s2.cmd.Process.Pid)
	if err != nil {
		return memResult{}, err
	}
	heap1, err := s2.heapInuse()
	if err != nil {
		return memResult{}, err
	}
	s2.breakdown(fmt.Sprintf("memory %d %s", n, stateRestarted), after)
	return memResult{rss: float64(after-base) / float64(n), used: float64(heap1-heap0) / float64(n)}, nil
}

// breakdown reports where the server's RSS (after) goes: the Go heap in
// use, its free spans not yet given back to the OS, the Go runtime's other
// memory (stacks, its own metadata), and what is outside the Go runtime
// (tables outside the heap, the C allocator's and libzmq's memory, the
// store's caches). A diagnostic: it changes no figure.
func (s *droverServer) breakdown(what string, after int64) {
	v, err := s.gauges("go_memstats_sys_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes", "go_memstats_heap_inuse_bytes")
	if err != nil {
		progress("%s: no breakdown: %v", what, err)
		return
	}
	sys, idle, released, inuse := v[0], v[1], v[2], v[3]
	progress("%s: RSS %.1f MiB: Go heap in use %.1f, free not released %.1f, the Go runtime's other %.1f, outside the Go runtime %.1f MiB",
		what, mb(after), mb(inuse), mb(idle-released), mb(sys-inuse-idle), mb(after-(sys-released)))
}

// mb is b in MiB.
func mb(b int64) float64 { return float64(b) / (1 << 20) }

// saveSmaps copies /proc/PID/smaps to dir/serve-NAME.smaps when dir is set
// (-mem-smaps): the server's mappings one by one, to tell its tables, heaps
// and buffers apart.
func saveSmaps(dir string, pid int, name string) error {
	if dir == "" {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return fmt.Errorf("smaps of serve: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "serve-"+name+".smaps"), b, 0o644)
}

// fillDrover puts n keys in state st through c, in calls of memChunk keys
// (requested: REQUEST; queued: SUBMIT with an empty payload; done: REQUEST
// then DONE ok, chunk by chunk), and reports the slowest call.
func fillDrover(ctx context.Context, c *client.Client, n int, st memState) error {
	keys := make([]id.Key, 0, memChunk)
	var slowest time.Duration
	defer func() {
		progress("memory %d %s: slowest call of %d keys %v", n, st, memChunk, slowest.Round(time.Millisecond))
	}()
	for lo := 0; lo < n; lo += memChunk {
		start := time.Now()
		keys = keys[:0]
		for i := lo; i < min(lo+memChunk, n); i++ {
			keys = append(keys, memKey(i))
		}
		switch st {
		case stateRequested, stateDone:
			v, err := c.Request(ctx, keys)
			if err != nil {
				return err
			}
			for i, x := range v {
				if x.Verdict != wire.VerdictOK {
					return fmt.Errorf("REQUEST %s: %v %s, want ok", keys[i].URL, x.Verdict, x.Reason)
				}
			}
			if st == stateDone {
				items := make([]wire.DoneItem, len(keys))
				for i, k := range keys {
					items[i] = wire.DoneItem{Key: k, Outcome: wire.DoneOK}
				}
				if _, err := c.Done(ctx, items); err != nil {
					return err
				}
			}
		case stateQueued:
			items := make([]wire.SubmitItem, len(keys))
			for i, k := range keys {
				items[i] = wire.SubmitItem{Key: k}
			}
			v, err := c.Submit(ctx, items)
			if err != nil {
				return err
			}
			for i, x := range v {
				if x.Status != wire.SubmitAccepted {
					return fmt.Errorf("SUBMIT %s: %+v, want accepted", keys[i].URL, x)
				}
			}
		}
		slowest = max(slowest, time.Since(start))
	}
	return nil
}

// redisMemory starts a fresh redis-server and holds n keys there: for
// requested and done (Redis has one state: a member of a set), SADD
// members as the dedup benchmark stores them; for queued, n asynq tasks
// with an empty payload (a task hash and a list entry each). It returns
// the growth of used_memory and of used_memory_rss per key.
func redisMemoryPerKey(ctx context.Context, bin string, n int, st memState) (memResult, error) {
	r, err := startRedis(bin)
	if err != nil {
		return memResult{}, err
	}
	defer r.stop()
	c := redis.NewClient(&redis.Options{Addr: r.addr})
	defer c.Close()
	used0, _, err := redisMemory(ctx, c)
	if err != nil {
		return memResult{}, err
	}
	rss0, err := rssOf(r.cmd.Process.Pid)
	if err != nil {
		return memResult{}, err
	}
	switch st {
	case stateRequested, stateDone:
		members := make([]any, 0, 1000)
		p := c.Pipeline()
		for i := range n {
			members = append(members, member(memKey(i)))
			if len(members) == cap(members) || i == n-1 {
				p.SAdd(ctx, "seen", members...)
				members = make([]any, 0, 1000)
			}
			if p.Len() == 100 || i == n-1 {
				if _, err := p.Exec(ctx); err != nil {
					return memResult{}, fmt.Errorf("redis SADD: %w", err)
				}
			}
		}
		if got, err := c.SCard(ctx, "seen").Result(); err != nil || got != int64(n) {
			return memResult{}, fmt.Errorf("redis SCARD %d (%v), want %d", got, err, n)
		}
	case stateQueued:
		ac := asynq.NewClient(asynq.RedisClientOpt{Addr: r.addr})
		defer ac.Close()
		var next atomic.Int64
		var first atomic.Value
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					if _, err := ac.EnqueueContext(ctx, asynq.NewTask("fetch", nil)); err != nil {
						first.CompareAndSwap(nil, fmt.Errorf("asynq enqueue: %w", err))
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := first.Load().(error); err != nil {
			return memResult{}, err
		}
	}
	used1, _, err := redisMemory(ctx, c)
	if err != nil {
		return memResult{}, err
	}
	rss1, err := settledRSS(r.cmd.Process.Pid)
	if err != nil {
		return memResult{}, err
	}
	return memResult{rss: float64(rss1-rss0) / float64(n), used: float64(used1-used0) / float64(n)}, nil
}
