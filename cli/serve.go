package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"drover/admin"
	"drover/config"
	"drover/net/server"
	"drover/obs"
	"drover/store"
	storeredis "drover/store/redis"
)

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the coordinator and broker headless (workers, producers and consoles connect to it)",
		Long: `serve runs the work coordinator and job broker without a console. Workers and
producers connect to the peers socket (--bind), consoles and the CLI to the admin
socket (--admin), and the events socket (--events) publishes every state change.
Everything binds to loopback unless told otherwise. SIGINT or SIGTERM stops
dispatching, tells every worker, and exits 0.

Queued and done keys and every job live in an embedded store, by default in
$XDG_STATE_HOME/drover/store (~/.local/state/drover/store), or in --store DIR
(store.path, DROVER_STORE_PATH): a restart,
even after kill -9, loses nothing that was acknowledged under --store-sync
(always: each acknowledgement waits for an fsync; batch: for the fsync every
store.sync_interval; none: the OS decides). Jobs running at a crash wait for
their workers to reconnect and reclaim them, then go back to the queue.
Only the newest --store-done-cache done keys (store.done_cache) stay in memory;
older ones are looked up in the store when asked for, and a restart does not
read them back.
Likewise only the oldest --store-resident-jobs queued jobs (store.resident_jobs)
are held in memory: the others stay in the store and are paged in, in queue
order, before the ones in memory run out; a restart reads back the counts every
write records and the oldest queued jobs only, so it answers status with the
exact totals in seconds whatever the size of the queue.
With --store memory serve keeps everything in memory instead (lost on exit).
A store that is locked by another process, corrupt or
unreadable is an error with a non-zero exit, never a fresh start.

With --store redis://HOST:PORT[,HOST:PORT...] (store.url, DROVER_STORE_URL;
rediss:// for TLS, redis://USER:PASSWORD@... to log in) the ledger and the job
queue live on a Redis Cluster (Redis 7.0 or later, or Valkey) instead, shared by
every serve given the same cluster: a URL submitted to any of them is accepted
once, a job runs on whichever coordinator's workers claim it first, and the jobs
of a coordinator that dies go back to the queue for the others (delivery is at
least once: a job that was running there may run again). Crawls and their page
budgets, results and the console's events view are the cluster's too; the job
lists show every coordinator's jobs (a requeue of another's job is carried out
by it); the events socket stays each coordinator's own. The password is never logged
or shown.

Every finished job's result (output, outcome, error, attempt, worker, finish
time) is kept in the store with the job, in the same write as its done state,
until results.max_age or results.max_bytes deletes the oldest; drover results
reads them by cursor. --results DIR also writes them, as the JSON lines drover
results prints, to DIR/results-00000001.jsonl, results-00000002.jsonl, ... (a
new file every --results-file-bytes), resuming after the last line written.

With --key (its CURVE secret key, from drover keygen) and --authorized-keys (the
client keys it admits, one per line: ROLE PUBLIC-KEY [comment], roles worker,
producer, operator, viewer), every listener encrypts and authenticates with
CURVE, and each command is checked against the role of its sender's key. The
file is re-read when it changes and on SIGHUP; a removed key's sessions end.
Listening on anything but loopback without --key is refused (exit 2) unless
--insecure is given. --metrics-token makes /metrics require a bearer token.`,
		Example: `  drover serve
  drover serve --store /var/lib/drover/store --store-sync always
  drover serve --store redis://10.0.0.7:7000,10.0.0.8:7000   # one of several coordinators
  drover serve --results /var/lib/drover/results --results-file-bytes 256MiB
  drover serve --bind tcp://0.0.0.0:5570 --key /etc/drover/server.key --authorized-keys /etc/drover/authorized_keys
  drover serve --bind tcp://10.0.0.5:5570 --insecure   # a network you trust entirely
  drover console --connect tcp://127.0.0.1:5571   # in another terminal`,
		Args: cobra.NoArgs,
		RunE: withConfig(runServe),
	}
	addServerFlags(cmd)
	addStoreFlags(cmd)
	addServerSecurityFlags(cmd)
	fs := cmd.Flags()
	must(config.AddFlag(fs, "results.dir", "results", ""))
	must(config.AddFlags(fs, "results.file_bytes", "results.max_age", "results.max_bytes"))
	must(config.AddFlag(fs, "ssh.listen", "ssh", ""))
	must(config.AddFlag(fs, "ssh.authorized_keys", "ssh-authorized-keys", ""))
	must(config.AddFlag(fs, "ssh.host_key", "ssh-host-key", ""))
	must(config.AddFlags(fs, "crawl.per_host", "crawl.min_delay"))
	return cmd
}

// addStoreFlags registers the store flags of a command that runs a
// coordinator with serve's store.
func addStoreFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	must(config.AddFlag(fs, "store.path", "store", ""))
	f := fs.Lookup("store")
	f.DefValue = "$XDG_STATE_HOME/drover/store"
	f.Usage = "directory of the embedded store, memory: keep everything in RAM, lost on exit, or redis://HOST:PORT[,HOST:PORT...]: a Redis Cluster shared with other coordinators (as --store-url) [" + config.EnvName("store.path") + "]"
	must(config.AddFlag(fs, "store.url", "store-url", ""))
	must(config.AddFlags(fs, "store.redis.wait_replicas", "store.redis.wait_timeout"))
	must(config.AddFlag(fs, "store.sync", "store-sync", ""))
	must(config.AddFlag(fs, "store.sync_interval", "store-sync-interval", ""))
	must(config.AddFlag(fs, "store.done_cache", "store-done-cache", ""))
	must(config.AddFlag(fs, "store.resident_jobs", "store-resident-jobs", ""))
}

// storePath is the store directory serve uses: store.path, or
// $XDG_STATE_HOME/drover/store when it is empty; "" (in memory) for
// "memory".
func storePath(cfg *config.Config) (string, error) {
	switch p := cfg.Store.Path; p {
	case "memory":
		return "", nil
	case "":
		return statePath("store.path", "store")
	default:
		return p, nil
	}
}

// openStore opens the store serve was told to use; nil for memory.
func openStore(cfg *config.Config, log *slog.Logger) (*store.Store, error) {
	path, err := storePath(cfg)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	if path == "" {
		log.Info("no store: everything is kept in memory and lost on exit")
		return nil, nil
	}
	cache, memTable := storeSizes(cfg.Store.ResidentJobs, cfg.Store.DoneCache) // memlimit.go
	return openStoreAt(cfg, path, cache, memTable, log)
}

// openStoreAt opens the store at path with the sync policy of the config
// (store.sync, store.sync_interval), a block cache of cache bytes and
// memtables of memTable bytes (0: the store's defaults).
func openStoreAt(cfg *config.Config, path string, cache, memTable int64, log *slog.Logger) (*store.Store, error) {
	sync, err := store.ParseSync(cfg.Store.Sync)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("store.sync: %w", err)}
	}
	st, err := store.Open(store.Options{Path: path, Sync: sync, SyncInterval: cfg.Store.SyncInterval, CacheBytes: cache, MemTableBytes: memTable, Log: log})
	if err != nil {
		return nil, err
	}
	log.Info("store open", "path", st.Path(), "sync", sync, "epoch", st.Epoch())
	return st, nil
}

// metaOrigin names the store's meta record holding the random origin of
// its events (the notifier's idempotency ids).
const metaOrigin = "drover.origin"

// storeOrigin is the store's event origin, made (and written durably) on
// first use: an id that lives as long as the store's event sequence.
func storeOrigin(st *store.Store) (string, error) {
	v, ok, err := st.GetMeta(metaOrigin)
	if err != nil {
		return "", fmt.Errorf("read the store's %s: %w", metaOrigin, err)
	}
	if !ok || v == 0 {
		v = rand.Uint64() | 1
		b := st.NewBatch()
		b.PutMeta(metaOrigin, v)
		if err := st.Commit(b); err != nil {
			return "", fmt.Errorf("write the store's %s: %w", metaOrigin, err)
		}
	}
	return fmt.Sprintf("%016x", v), nil
}

// addServerFlags registers the listen-address flags of a command that runs
// a coordinator.
func addServerFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	must(config.AddFlag(fs, "peers.listen", "bind", ""))
	must(config.AddFlag(fs, "admin.listen", "admin", ""))
	must(config.AddFlag(fs, "events.listen", "events", ""))
	must(config.AddFlag(fs, "metrics.listen", "metrics", ""))
	must(config.AddFlags(fs, "peers.gather", "heartbeat.interval", "heartbeat.liveness", "broker.max_request_failures",
		"broker.retry_start", "broker.retry_cap", "broker.retry_jitter"))
}

func must(err error) {
	if err != nil {
		panic(err) // a programming error in flag wiring, caught by the CLI tests
	}
}

// coordinator is a coordinator as serve runs it: the reactor on its store,
// with metrics (and their HTTP endpoint) and the notifier. serve runs it
// headless, drover with no command under the console, drover crawl with its
// local workers (coordSpec).
type coordinator struct {
	srv      *server.Server
	st       *store.Store
	redis    *storeredis.Ledger // store.url: the ledger and queue on a Redis Cluster (redisstore.go)
	redisAt  string             // its URL, without the password
	notifier *obs.Notifier
	log      *slog.Logger
	wg       sync.WaitGroup
	// metricsAt receives the metrics endpoint's address once it listens
	// (the port the OS chose for :0), or "" when it could not listen.
	metricsAt chan string
}

// coordSpec is what a command changes of the coordinator serve starts. The
// zero coordSpec is serve's (and the console's); whatever it leaves alone
// (the store's sync policy, the notifier, the metrics and their endpoint)
// comes from the config alike for every command.
type coordSpec struct {
	// crawl marks drover crawl's coordinator: it takes no keys (its
	// listeners stay on loopback unless --insecure), its store is state
	// (none when empty) instead of store.path or store.url, with every job
	// in memory, and it serves metrics only when metrics.listen is given
	// (a crawl may run beside a serve on the default address).
	crawl bool
	state string
	// options, when set, adds the command's own to the server's options
	// (the crawl's sink, its one crawl, its page budget) and to the
	// coordinator's metrics before the server is made.
	options func(o *server.Options, m *obs.Metrics) error
}

// startCoordinator opens the store and creates the server, and serves
// metrics until ctx ends. Close it when the server has stopped.
func startCoordinator(ctx context.Context, cfg *config.Config, log *slog.Logger, spec coordSpec) (*coordinator, error) {
	if err := checkExposure(cfg, !spec.crawl); err != nil {
		return nil, err
	}
	serveMetrics := cfg.Metrics.Listen != "" && !(spec.crawl && cfg.Source("metrics.listen").Kind == config.FromDefault)
	var token string
	if serveMetrics || !spec.crawl {
		var err error
		if token, err = metricsToken(cfg); err != nil {
			return nil, err
		}
	}
	if serveMetrics && token == "" && metricsExposed(cfg.Metrics.Listen) {
		log.Warn("metrics listen beyond this machine without a token: set metrics.token (--metrics-token) to require one", "addr", cfg.Metrics.Listen)
	}
	c := &coordinator{log: log}
	metrics := obs.NewMetrics()
	var sec *server.Auth
	var target storeredis.Target
	var onRedis bool
	var err error
	if !spec.crawl {
		if sec, err = serverSecurity(cfg, log, metrics); err != nil {
			return nil, err
		}
		if target, onRedis, err = storeURL(cfg); err != nil {
			return nil, err
		}
	}
	switch {
	case spec.crawl && spec.state != "":
		if c.st, err = openStoreAt(cfg, spec.state, 0, 0, log); err != nil {
			return nil, fmt.Errorf("--state: %w", err)
		}
	case !spec.crawl && !onRedis:
		if c.st, err = openStore(cfg, log); err != nil {
			return nil, err
		}
		if c.st != nil {
			setMemoryLimit(log, cfg.Store.ResidentJobs, cfg.Store.DoneCache) // memlimit.go
		}
	}
	if cfg.Notifier.URL != "" {
		no := obs.NotifierOptionsFrom(cfg.Notifier)
		no.Logger = log
		if c.st != nil {
			// Event seqs are unique for the store's life: so is ORIGIN-SEQ.
			// Reports the queue cannot hold spill beside the store.
			if no.Origin, err = storeOrigin(c.st); err != nil {
				c.close()
				return nil, err
			}
			no.SpillPath = c.st.Path() + "-notifier.jsonl"
		}
		if c.notifier, err = obs.NewNotifier(no); err != nil {
			c.close()
			return nil, &exitError{code: 2, err: err}
		}
		if err := metrics.RegisterNotifier(c.notifier); err != nil {
			c.close()
			return nil, err
		}
	}
	cc := coordConfig(cfg)
	if c.st != nil {
		// Done keys beyond the cache stay in the store (none without one).
		cc.Ledger.DoneCache = cfg.Store.DoneCache
	}
	if onRedis {
		if c.redis, err = openRedis(ctx, cfg, target, &cc, log); err != nil {
			c.close()
			return nil, err
		}
		c.redisAt = target.String()
	}
	opts := server.Options{
		Peers: cfg.Peers.Listen, Gather: cfg.Peers.Gather, Admin: cfg.Admin.Listen, Events: cfg.Events.Listen,
		Coord: cc, Log: log, Server: "drover " + version,
		OnTotals: metrics.Update, Store: c.st,
		Results: &server.ResultsOptions{MaxAge: cfg.Results.MaxAge, MaxBytes: cfg.Results.MaxBytes},
		Auth:    sec,
	}
	if !spec.crawl {
		opts.ResidentJobs = residentJobs(c.st, cfg.Store.ResidentJobs)
	}
	for _, name := range cfg.CrawlNames() {
		d := cfg.Crawls[name]
		opts.Crawls = append(opts.Crawls, admin.Crawl{Name: name, Scope: d.Scope, MaxDepth: d.MaxDepth, MaxPages: d.MaxPages,
			ResultsMaxAge: int64(d.ResultsMaxAge / time.Second), ResultsMaxBytes: d.ResultsMaxBytes})
	}
	if c.st == nil && (opts.Results.MaxBytes == 0 || opts.Results.MaxBytes > server.DefaultMemoryResultBytes) {
		opts.Results.MaxBytes = server.DefaultMemoryResultBytes
	}
	if n := c.notifier; n != nil {
		opts.OnEvent = func(ev admin.Event) {
			switch ev.Kind {
			case admin.EventJobDone, admin.EventJobFailed, admin.EventJobRetry, admin.EventJobThrottled, admin.EventJobOrphanResult, admin.EventWorkerLost, admin.EventWorkerEvicted:
				n.Notify(ev)
			}
		}
	}
	var cv *clusterView
	if c.redis != nil {
		cv = &clusterView{l: c.redis}
		jv := c.redis.JobView()
		opts.OnTotals = func(t admin.Totals) {
			metrics.Update(t)
			cv.totals.Store(&t)
			jv.NoteHeld() // the hosts it holds jobs of, for its summary
		}
		opts.Cluster = cv.get
		opts.ClusterCrawls = cc.Shared.(*storeredis.CrawlQueue)
		opts.ClusterResults = c.redis.Results()
		opts.ClusterEvents = c.redis.Events()
		opts.ClusterJobs = jv
	}
	if spec.options != nil {
		if err := spec.options(&opts, metrics); err != nil {
			c.close()
			return nil, err
		}
	}
	if c.srv, err = server.New(opts); err != nil {
		c.close()
		return nil, err
	}
	if cv != nil {
		cv.peers = c.srv.PeersEndpoint()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			cv.run(ctx, max(cfg.Heartbeat.Interval, 100*time.Millisecond), log)
		}()
	}
	if sec != nil {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			watchKeys(ctx, sec, log)
		}()
	}
	must(metrics.RegisterReactor(func() obs.ReactorStats { // fails only if registered twice
		r := c.srv.ReactorStats()
		return obs.ReactorStats{Steps: r.Steps, Messages: r.Messages, Gathered: r.Gathered}
	}))
	if serveMetrics {
		c.metricsAt = make(chan string, 1)
		var once sync.Once
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer once.Do(func() { c.metricsAt <- "" })
			h := obs.Handler(metrics, func() error {
				if !c.srv.Ready() {
					return errors.New("the reactor is not serving")
				}
				return nil
			})
			h = obs.RequireToken(h, "/metrics", token)
			if err := obs.Serve(ctx, cfg.Metrics.Listen, h, func(a net.Addr) {
				log.Info("metrics listening", "addr", a.String())
				once.Do(func() { c.metricsAt <- a.String() })
			}); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
	}
	return c, nil
}

// close waits for the metrics endpoint (its ctx must have ended) and closes
// the notifier and the store.
func (c *coordinator) close() {
	c.wg.Wait()
	if c.redis != nil {
		leaveRedis(c.redis, c.log)
	}
	if c.notifier != nil {
		c.notifier.Close(context.Background())
	}
	if c.st != nil {
		if err := c.st.Close(); err != nil {
			c.log.Error("store close", "err", err)
		}
	}
}

func runServe(cmd *cobra.Command, cfg *config.Config) error {
	ctx, log, done, err := runContext(cmd, cfg, false)
	if err != nil {
		return err
	}
	defer done()
	ctx, cancel := context.WithCancel(ctx)
	c, err := startCoordinator(ctx, cfg, log, coordSpec{})
	if err != nil {
		cancel()
		return fmt.Errorf("serve: %w", err)
	}
	defer c.close()
	defer cancel() // before close: the metrics endpoint ends with ctx
	if c.st != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "drover store %s (sync %s): restored %s\n", c.st.Path(), c.st.SyncPolicy(), c.srv.Restored())
	}
	if c.redis != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "drover store %s: coordinator %s of the cluster\n", c.redisAt, c.redis.Coordinator())
	}
	if cfg.SSH.Listen != "" {
		waitSSH, addr, err := startSSHConsole(ctx, cfg, c.srv, log)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer waitSSH() // after cancel: the SSH server ends with ctx
		defer cancel()
		fmt.Fprintf(cmd.OutOrStdout(), "drover console over ssh on %s\n", addr)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "drover serving: peers %s, admin %s, events %s\n", c.srv.PeersEndpoint(), c.srv.AdminEndpoint(), c.srv.EventsEndpoint())
	// One line per listener with the address it is bound to: a port of 0
	// (or *) is chosen by the OS, and scripts and tests read it here.
	for _, l := range []struct{ name, at string }{{"peers", c.srv.PeersEndpoint()}, {"admin", c.srv.AdminEndpoint()}, {"events", c.srv.EventsEndpoint()}} {
		if l.at != "" {
			fmt.Fprintf(out, "%s listening on %s\n", l.name, l.at)
		}
	}
	if c.metricsAt != nil {
		if at := <-c.metricsAt; at != "" {
			fmt.Fprintf(out, "metrics listening on http://%s\n", at)
		}
	}
	if dir := cfg.Results.Dir; dir != "" {
		files := make(chan error, 1)
		go func() { files <- writeResultFiles(ctx, c.srv.InprocAdmin(), dir, cfg.Results.FileBytes, log) }()
		defer func() {
			cancel()
			if err := <-files; err != nil {
				log.Error("results files", "err", err)
			}
		}()
	}
	go returnIdleMemory(ctx) // idlemem.go
	return c.srv.Run(ctx)
}

// residentJobs is store.resident_jobs for a coordinator with store st: with
// no store (memory) every job is in memory.
func residentJobs(st *store.Store, n int) int {
	if st == nil {
		return 0
	}
	return n
}
