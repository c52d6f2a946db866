// Command peers measures drover side by side with the tools a user would
// otherwise reach for, in one run on one machine, alternating the sides
// round by round, and prints medians and ratios as Markdown tables:
//
//   - dedup: decisions/s of `drover serve --store memory` (REQUEST, and
//     REQUEST + QUEUE) against Redis SADD, 1M keys of which half are
//     duplicates, batches of 1000, 4 connections with one batch in flight
//     each (pipelined on Redis);
//   - queue: no-op jobs/s through drover's broker against asynq on the
//     same Redis, the same number of workers and concurrency;
//   - crawl: pages/s of `drover crawl` against a colly collector on a
//     generated local site (5k and 30k pages), same parallelism, no delay,
//     each started cold;
//   - memory: bytes per key held as requested, queued and done, at 1M and
//     10M keys: RSS growth of the drover serve process, used_memory and
//     RSS growth of redis-server;
//   - frontier: no-op jobs/s drained from a durable `drover serve` that
//     keeps only --store-resident-jobs of them in memory, against one that
//     keeps them all (issue 21's queued jobs beyond RAM).
//
// Everything drover does goes through its CLI (serve, crawl) and its
// public Go client and worker packages. The command starts its own
// redis-server (no persistence) on a free loopback port and its drover
// processes on OS-chosen ports, and stops them all before it exits.
//
//	go run ./bench/peers                      # the full run (tens of minutes)
//	go run ./bench/peers -short               # a smaller run, to try it
//	make bench-peers                          # installs redis-server, builds, runs
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"drover/coord/id"
)

type config struct {
	drover, redis string
	base          string // dedup and crawl: a second drover binary run alongside (-base)
	rounds        int
	only          map[string]bool
	dedupKeys     int
	batch, conns  int
	jobs          int
	workers       int
	slots         int
	pages         []int
	par           int
	memKeys       []int
	memStates     []memState
	asynqMemMax   int
	memSmaps      string // a directory for the server's smaps before and after each figure
	frontierJobs  int
	resident      int
}

func main() {
	var cfg config
	var only, pages, memKeys, memStates string
	cpuProfile := flag.String("cpuprofile", "", "write this process's CPU profile (the load generator's) to this file")
	short := flag.Bool("short", false, "a smaller run: 200k dedup keys, 20k jobs, 5k pages, memory at 200k keys, 60k frontier jobs with 20k resident, 3 rounds")
	flag.StringVar(&cfg.drover, "drover", "", "the drover binary (default: built from this module into a temporary directory)")
	flag.StringVar(&cfg.base, "base", "", "dedup and crawl: another drover binary (e.g. an older build) whose sides run alternating with the others', with rows and ratios of their own")
	flag.StringVar(&cfg.redis, "redis-server", "redis-server", "the redis-server binary")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds of each comparison (the sides alternate; medians are reported)")
	flag.StringVar(&only, "only", "dedup,queue,crawl,memory,frontier", "comparisons to run, comma-separated")
	flag.IntVar(&cfg.dedupKeys, "dedup-keys", 1_000_000, "dedup: keys sent per round (half are duplicates)")
	flag.IntVar(&cfg.batch, "batch", 1000, "dedup: keys per batch (Redis: SADD commands per pipeline)")
	flag.IntVar(&cfg.conns, "conns", 4, "dedup: connections, one batch in flight each")
	flag.IntVar(&cfg.jobs, "jobs", 100_000, "queue: no-op jobs per round")
	flag.IntVar(&cfg.workers, "workers", 4, "queue: worker processes (drover workers, asynq servers)")
	flag.IntVar(&cfg.slots, "slots", 16, "queue: concurrency of each worker (drover slots, asynq Concurrency)")
	flag.StringVar(&pages, "pages", "5000,30000", "crawl: site sizes, comma-separated")
	flag.IntVar(&cfg.par, "par", 8, "crawl: parallel fetches (drover: workers of one slot and --per-host; colly: Parallelism)")
	flag.StringVar(&memKeys, "mem-keys", "1000000,10000000", "memory: key counts, comma-separated")
	flag.StringVar(&memStates, "mem-states", "requested,queued,done", "memory: key states measured, comma-separated (also queued-restarted: queued jobs in a durable serve, restarted on its store)")
	flag.IntVar(&cfg.asynqMemMax, "asynq-mem-max", 1_000_000, "memory: largest count of asynq tasks enqueued for Redis's queued figure (asynq enqueues one task per round trip)")
	flag.StringVar(&cfg.memSmaps, "mem-smaps", "", "memory: save serve's /proc/PID/smaps before and after each figure in this directory")
	flag.IntVar(&cfg.frontierJobs, "frontier-jobs", 300_000, "frontier: no-op jobs submitted to a durable serve before the workers start")
	flag.IntVar(&cfg.resident, "resident", 100_000, "frontier: --store-resident-jobs of the paged side (the other keeps every job in memory)")
	flag.Parse()
	if *short {
		cfg.dedupKeys, cfg.jobs, pages, memKeys = 200_000, 20_000, "5000", "200000"
		cfg.frontierJobs, cfg.resident = 60_000, 20_000
	}
	var err error
	if cfg.pages, err = ints("pages", pages); err == nil {
		cfg.memKeys, err = ints("mem-keys", memKeys)
	}
	if err != nil || cfg.rounds < 1 || cfg.conns < 1 || cfg.batch < 1 {
		fmt.Fprintf(os.Stderr, "peers: bad flags: %v (rounds, conns, batch must be >= 1)\n", err)
		os.Exit(2)
	}
	for _, st := range strings.Split(memStates, ",") {
		switch st := memState(strings.TrimSpace(st)); st {
		case stateRequested, stateQueued, stateDone, stateRestarted:
			cfg.memStates = append(cfg.memStates, st)
		default:
			fmt.Fprintf(os.Stderr, "peers: -mem-states %q: want requested, queued, done or queued-restarted\n", st)
			os.Exit(2)
		}
	}
	cfg.only = map[string]bool{}
	for _, o := range strings.Split(only, ",") {
		switch o = strings.TrimSpace(o); o {
		case "dedup", "queue", "crawl", "memory", "frontier":
			cfg.only[o] = true
		default:
			fmt.Fprintf(os.Stderr, "peers: -only %q: want dedup, queue, crawl, memory or frontier\n", o)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stopProfile, err := startProfile(*cpuProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers: -cpuprofile:", err)
		os.Exit(2)
	}
	err = run(ctx, cfg)
	if perr := stopProfile(); perr != nil && err == nil {
		err = fmt.Errorf("-cpuprofile: %w", perr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// startProfile starts profiling this process's CPU into the file at path
// (none when path is empty); stop ends it and closes the file.
func startProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func ints(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s %q: want positive integers, comma-separated", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, cfg config) error {
	if cfg.drover == "" {
		dir, err := os.MkdirTemp("", "drover-peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.drover = filepath.Join(dir, "drover")
		progress("building drover into %s", cfg.drover)
		if out, err := exec.Command("go", "build", "-o", cfg.drover, "drover").CombinedOutput(); err != nil {
			return fmt.Errorf("go build drover: %w\n%s", err, out)
		}
	}
	if _, err := exec.LookPath(cfg.redis); err != nil {
		return fmt.Errorf("redis-server not found (%w): run scripts/deps.sh bench, or pass -redis-server", err)
	}
	verOut, _ := exec.Command(cfg.drover, "version").Output()
	ver, _, _ := strings.Cut(string(verOut), "\n")
	rver, _ := exec.Command(cfg.redis, "--version").Output()
	host, _ := os.Hostname()
	fmt.Printf("# drover side by side with its peers\n\n")
	fmt.Printf("- %s, %s\n- %s\n- %s- host %s, %d CPUs (%s)\n- load average at start: %s\n\n",
		time.Now().UTC().Format(time.RFC3339), goVersion(), ver, rver, host, numCPU(), cpuModel(), loadavg())
	var err error
	if cfg.only["dedup"] && err == nil {
		err = benchDedup(ctx, cfg)
	}
	if cfg.only["queue"] && err == nil {
		err = benchQueue(ctx, cfg)
	}
	if cfg.only["crawl"] && err == nil {
		err = benchCrawl(ctx, cfg)
	}
	if cfg.only["memory"] && err == nil {
		err = benchMemory(ctx, cfg)
	}
	if cfg.only["frontier"] && err == nil {
		err = benchFrontier(ctx, cfg)
	}
	fmt.Printf("Load average at the end: %s\n", loadavg())
	return err
}

// cpuSeries collects a side's CPU nanoseconds per decision, per round.
type cpuSeries struct{ server, client series }

func (c *cpuSeries) add(d dedupResult) {
	c.server = append(c.server, d.serverNs())
	c.client = append(c.client, d.clientNs())
}

// series collects one figure's value per round.
type series []float64

func (s series) median() float64 {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func (s series) String() string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = human(v)
	}
	return strings.Join(parts, ", ")
}

func human(v float64) string {
	switch {
	case v >= 10_000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func progress(f string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(f, args...))
}

// dedupSide is one drover binary's figures in the dedup comparison.
type dedupSide struct {
	name             string // "" or " (base)"
	bin              string
	reqS, queueS     series
	reqCPU, queueCPU cpuSeries
}

// run measures REQUEST, then REQUEST + QUEUE, each on a fresh serve.
func (d *dedupSide) run(ctx context.Context, cfg config, round int, streams [][]id.Key) error {
	for _, queue := range []bool{false, true} {
		s, err := startDrover(d.bin, "memory")
		if err != nil {
			return err
		}
		r, err := droverDedup(ctx, s.peers, s.cmd.Process.Pid, streams, cfg.batch, queue)
		s.stop()
		if err != nil {
			return err
		}
		name := "REQUEST"
		if queue {
			name = "REQUEST+QUEUE"
			d.queueS = append(d.queueS, r.rate())
			d.queueCPU.add(r)
		} else {
			d.reqS = append(d.reqS, r.rate())
			d.reqCPU.add(r)
		}
		progress("dedup round %d: drover%s %s %s decisions/s (%d duplicates; CPU per decision: server %.0f ns, client %.0f ns)",
			round+1, d.name, name, human(r.rate()), r.duplicates, r.serverNs(), r.clientNs())
	}
	return nil
}

func benchDedup(ctx context.Context, cfg config) error {
	r, err := startRedis(cfg.redis)
	if err != nil {
		return err
	}
	defer r.stop()
	var redisS series
	var redisCPU cpuSeries
	drovers := []*dedupSide{{bin: cfg.drover}}
	if cfg.base != "" {
		drovers = append(drovers, &dedupSide{name: " (base)", bin: cfg.base})
	}
	if err := alternate(cfg.rounds, func(round int) []func() error {
		streams := dedupStreams(cfg.dedupKeys, cfg.conns, uint64(round+1))
		sides := []func() error{
			func() error {
				d, err := redisDedup(ctx, r.addr, r.cmd.Process.Pid, streams, cfg.batch)
				progress("dedup round %d: redis SADD %s decisions/s (%d duplicates; CPU per decision: server %.0f ns, client %.0f ns)",
					round+1, human(d.rate()), d.duplicates, d.serverNs(), d.clientNs())
				redisS = append(redisS, d.rate())
				redisCPU.add(d)
				return err
			},
		}
		for _, d := range drovers {
			sides = append(sides, func() error { return d.run(ctx, cfg, round, streams) })
		}
		return sides
	}); err != nil {
		return err
	}
	fmt.Printf("## Dedup decisions/s\n\n%d keys per round (half duplicates), batches of %d, %d connections with one batch in flight each; %d rounds, sides alternating. Load average now: %s.\n\n",
		cfg.dedupKeys, cfg.batch, cfg.conns, cfg.rounds, loadavg())
	fmt.Printf("| side | rounds | median | drover / Redis |\n|---|---|---|---|\n")
	fmt.Printf("| Redis `SADD`, pipelined | %s | %s | — |\n", redisS, human(redisS.median()))
	for _, d := range drovers {
		fmt.Printf("| drover%s `REQUEST` | %s | %s | %.2f× |\n", d.name, d.reqS, human(d.reqS.median()), d.reqS.median()/redisS.median())
		fmt.Printf("| drover%s `REQUEST` + `QUEUE` | %s | %s | %.2f× |\n", d.name, d.queueS, human(d.queueS.median()), d.queueS.median()/redisS.median())
	}
	fmt.Printf("\nCPU time per decision (user + system; the server process from /proc/PID/stat, the load generator from getrusage), medians of the rounds; less sensitive to other load than decisions/s:\n\n")
	fmt.Printf("| side | server ns/decision (rounds) | server median | client ns/decision (rounds) | client median | server CPU: drover / Redis |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| Redis `SADD`, pipelined | %s | %.0f | %s | %.0f | — |\n", redisCPU.server, redisCPU.server.median(), redisCPU.client, redisCPU.client.median())
	for _, d := range drovers {
		for _, row := range []struct {
			name string
			c    cpuSeries
		}{{"`REQUEST`", d.reqCPU}, {"`REQUEST` + `QUEUE`", d.queueCPU}} {
			fmt.Printf("| drover%s %s | %s | %.0f | %s | %.0f | %.2f× |\n", d.name, row.name, row.c.server, row.c.server.median(),
				row.c.client, row.c.client.median(), row.c.server.median()/redisCPU.server.median())
		}
	}
	fmt.Println()
	return nil
}

func benchQueue(ctx context.Context, cfg config) error {
	r, err := startRedis(cfg.redis)
	if err != nil {
		return err
	}
	defer r.stop()
	var dEnq, dDrain, aEnq, aDrain series
	if err := alternate(cfg.rounds, func(round int) []func() error {
		sides := []func() error{
			func() error {
				s, err := startDrover(cfg.drover, "memory")
				if err != nil {
					return err
				}
				defer s.stop()
				q, err := droverQueue(ctx, s, round, cfg.jobs, cfg.workers, cfg.slots)
				if err != nil {
					return err
				}
				dEnq, dDrain = append(dEnq, q.enqueueRate()), append(dDrain, q.drainRate())
				progress("queue round %d: drover submit %s jobs/s, drain %s jobs/s", round+1, human(q.enqueueRate()), human(q.drainRate()))
				return nil
			},
			func() error {
				q, err := asynqQueue(ctx, r.addr, round, cfg.jobs, cfg.workers, cfg.slots)
				if err != nil {
					return err
				}
				aEnq, aDrain = append(aEnq, q.enqueueRate()), append(aDrain, q.drainRate())
				progress("queue round %d: asynq enqueue %s jobs/s, drain %s jobs/s", round+1, human(q.enqueueRate()), human(q.drainRate()))
				return nil
			},
		}
		return sides
	}); err != nil {
		return err
	}
	fmt.Printf("## Queue jobs/s\n\n%d no-op jobs per round; %d workers × %d concurrency; %d rounds, sides alternating. Load average now: %s.\n\n",
		cfg.jobs, cfg.workers, cfg.slots, cfg.rounds, loadavg())
	fmt.Printf("| figure | drover rounds | asynq rounds | drover median | asynq median | drover / asynq |\n|---|---|---|---|---|---|\n")
	fmt.Printf("| enqueue (no worker running) | %s | %s | %s | %s | %.2f× |\n", dEnq, aEnq, human(dEnq.median()), human(aEnq.median()), dEnq.median()/aEnq.median())
	fmt.Printf("| drain (workers start → last job done) | %s | %s | %s | %s | %.2f× |\n\n", dDrain, aDrain, human(dDrain.median()), human(aDrain.median()), dDrain.median()/aDrain.median())
	return nil
}

// alternate runs each round's sides, in order in even rounds and reversed
// in odd ones, so that no side always runs first (warm caches, a machine
// drifting); it stops at the first error.
func alternate(rounds int, sides func(round int) []func() error) error {
	for round := range rounds {
		s := sides(round)
		if round%2 == 1 {
			slices.Reverse(s)
		}
		for _, side := range s {
			if err := side(); err != nil {
				return err
			}
		}
	}
	return nil
}

func benchMemory(ctx context.Context, cfg config) error {
	fmt.Printf("## Memory per key\n\nEach figure in a fresh process: growth after the keys are in, once RSS has settled, divided by the keys. drover: `serve --store memory`, RSS. Redis: a set member (SADD) for requested and done (Redis has no other state), an asynq task with an empty payload for queued; used_memory and RSS.\n\n")
	fmt.Printf("| keys | state | drover RSS B/key | drover Go heap in use B/key | Redis used_memory B/key | Redis RSS B/key | drover / Redis RSS | load average |\n|---|---|---|---|---|---|---|---|\n")
	for _, n := range cfg.memKeys {
		for _, st := range cfg.memStates {
			var d memResult
			var err error
			if st == stateRestarted {
				d, err = droverRestarted(ctx, cfg.drover, n)
			} else {
				d, err = droverMemory(ctx, cfg.drover, n, st, cfg.memSmaps)
			}
			if err != nil {
				return err
			}
			progress("memory %d %s: drover %.0f B/key RSS, %.0f B/key Go heap in use", n, st, d.rss, d.used)
			rs, ratio := "— | —", "—"
			if st != stateRestarted && (st != stateQueued || n <= cfg.asynqMemMax) {
				r, err := redisMemoryPerKey(ctx, cfg.redis, n, st)
				if err != nil {
					return err
				}
				progress("memory %d %s: redis %.0f B/key used_memory, %.0f B/key RSS", n, st, r.used, r.rss)
				rs, ratio = fmt.Sprintf("%.0f | %.0f", r.used, r.rss), fmt.Sprintf("%.2f×", d.rss/r.rss)
			}
			fmt.Printf("| %d | %s | %.0f | %.0f | %s | %s | %s |\n", n, st, d.rss, d.used, rs, ratio, loadavg())
		}
	}
	fmt.Println()
	return nil
}
