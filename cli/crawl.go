package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pebbe/zmq4"
	"github.com/spf13/cobra"

	"drover/admin"
	"drover/config"
	"drover/coord"
	"drover/crawl"
	"drover/crawl/job"
	"drover/net/client"
	"drover/net/server"
	"drover/net/wire"
	"drover/net/worker"
	"drover/net/zsock"
	"drover/obs"
	"drover/tui"
)

// crawlOptions are the flags of drover crawl (and the demo's fixed choices).
type crawlOptions struct {
	workers  int
	slots    int
	maxPages int
	maxDepth int
	scope    string
	minDelay time.Duration
	// requisites, ignoreRobots and sitemaps are crawl.Config's.
	requisites, ignoreRobots, sitemaps bool
	warc                               string // --warc FILE.warc.gz
	warcMaxSize                        string
	warcFirst                          string // the first WARC file written
	format                             string // --format: jsonl, csv or "" (by --out's extension)
	out                                string
	state                              string // store directory: the crawl resumes from it
	noTUI                              bool
	// localCaps applies crawl.per_host and crawl.min_delay, when set, as
	// this process's own cap (drover worker); drover crawl leaves them to
	// its coordinator.
	localCaps bool
	// ephemeral binds the sockets to free loopback ports (the demo).
	ephemeral bool
	// resolve pins host:port names to addresses (the demo's site).
	resolve map[string]string
	// beforeSeed runs just before the seed is submitted, with the
	// in-process peers endpoint (the demo's rival crawler).
	beforeSeed func(ctx context.Context, peers string)
	// check runs after the crawl with the results (the demo compares them
	// with its site); a non-nil error fails the command.
	check func(records map[string]crawl.Record, dups []string, w io.Writer) error
	title string
}

// fetcherFor is what the crawl handlers fetch with: the shared Fetcher.
// BenchmarkCrawlCoordination replaces it to measure everything but the
// fetch.
var fetcherFor = func(f *crawl.Fetcher) job.Fetcher { return f }

func newCrawlCmd() *cobra.Command {
	var o crawlOptions
	cmd := &cobra.Command{
		Use:   "crawl URL",
		Short: "Crawl a site from a seed URL: coordinator, local workers and console in one process",
		Long: `crawl runs the coordinator, N local workers and (on a terminal) the console in one
process, starting from URL. Every page is fetched once: links go back to the
coordinator with each result and are deduplicated there. Remote workers may join
with "drover worker --connect" on the peers endpoint it prints. It ends when the
frontier is empty and nothing is in flight, and prints a summary. Results are
written as JSON lines to --out.

Its listeners stay on loopback: --bind, --admin or --events on another address
is refused (exit 2) unless --insecure, since crawl takes no keys (for remote
workers over CURVE, run drover serve --key and define the crawl there).`,
		Example: `  drover crawl https://example.com/ --workers 4 --max-pages 500 --out pages.jsonl
  drover crawl https://example.com/docs/ --scope prefix --max-depth 3 --no-tui`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			seed, err := crawl.Normalize(args[0])
			if err != nil {
				return usageError("crawl: seed URL %q: %v", args[0], err)
			}
			return runCrawl(cmd, cfg, seed, o)
		},
	}
	addCrawlFlags(cmd, &o)
	addServerFlags(cmd)
	crawlMetricsFlag(cmd)
	return cmd
}

func addCrawlFlags(cmd *cobra.Command, o *crawlOptions) {
	fs := cmd.Flags()
	fs.IntVar(&o.workers, "workers", 4, "local workers to run")
	fs.IntVar(&o.slots, "slots", 2, "concurrent fetches per local worker")
	fs.IntVar(&o.maxPages, "max-pages", 0, "stop submitting new pages after this many (0: no limit)")
	fs.IntVar(&o.maxDepth, "max-depth", crawl.DefaultMaxDepth, "links followed from the seed (0: no limit)")
	fs.StringVar(&o.scope, "scope", "host", "which links to follow: host (same host), domain (host and subdomains) or prefix (under the seed's directory)")
	fs.StringVar(&o.out, "out", "", "write one record per fetched page to this file (JSON lines, or CSV: --format)")
	fs.StringVar(&o.format, "format", "", "--out's format: jsonl or csv (default: csv for a file ending in .csv, else jsonl)")
	fs.BoolVar(&o.requisites, "requisites", false, "also fetch page requisites (images, scripts, style sheets, CSS url() references), as wget -p; style sheets are then parsed for more")
	fs.BoolVar(&o.ignoreRobots, "ignore-robots", false, "ignore robots.txt, rel=nofollow and <meta name=robots>/X-Robots-Tag nofollow (only for sites you may crawl so)")
	fs.BoolVar(&o.sitemaps, "sitemaps", true, "read the seed origin's sitemaps (robots.txt Sitemap: lines, /sitemap.xml) as a source of links")
	fs.StringVar(&o.warc, "warc", "", "also write every fetch as WARC 1.1 request and response records to FILE.warc.gz: files FILE-00001.warc.gz, FILE-00002.warc.gz, ... (numbered on after those present, so a resumed crawl adds files)")
	fs.StringVar(&o.warcMaxSize, "warc-max-size", "1GiB", "start the next WARC file once one reaches this size (e.g. 100MiB, 1GiB)")
	fs.StringVar(&o.state, "state", "", "keep the crawl's state (frontier, done pages) in this directory: the same command run again resumes where a stopped or killed crawl left off")
	fs.BoolVar(&o.noTUI, "no-tui", false, "print progress lines and a summary instead of the console")
	must(config.AddFlag(fs, "crawl.per_host", "per-host", ""))
	must(config.AddFlags(fs, "crawl.user_agent", "crawl.timeout", "crawl.min_delay"))
	must(config.AddFlag(fs, "crawl.allow_private", "allow-private", ""))
	must(config.AddFlag(fs, "security.insecure", "insecure", ""))
}

// crawlConfig builds the fetcher's configuration from the config keys and
// the command's flags.
func crawlConfig(cfg *config.Config, o crawlOptions) (crawl.Config, error) {
	c := crawl.DefaultConfig(version)
	if cfg.Source("crawl.user_agent").Kind != config.FromDefault {
		c.UserAgent = cfg.Crawl.UserAgent // else drover/VERSION (+URL)
	}
	c.Timeout = cfg.Crawl.Timeout
	c.ConnectTimeout = cfg.Crawl.ConnectTimeout
	c.MaxBodyBytes = cfg.Crawl.MaxBody
	// The coordinator holds the per-host limits for the whole fleet
	// (politeness); a worker process only caps itself where told to.
	c.PerHost, c.MinDelay = 0, 0
	if o.localCaps {
		c.PerHost, c.MinDelay = localCaps(cfg)
	}
	c.Parallel = o.workers * o.slots // the local workers share one fetcher
	c.MaxDepth = o.maxDepth
	c.MaxPages = o.maxPages
	c.Resolve = o.resolve
	c.AllowPrivate = cfg.Crawl.AllowPrivate
	c.Requisites, c.IgnoreRobots, c.Sitemaps = o.requisites, o.ignoreRobots, o.sitemaps
	scope, err := crawl.ParseScope(o.scope)
	if err != nil {
		return c, usageError("crawl: --scope %q: %v", o.scope, err)
	}
	c.Scope = scope
	if err := c.Validate(); err != nil {
		return c, usageError("crawl: %v", err)
	}
	return c, nil
}

// crawlCoord makes cc the crawl's coordinator configuration: the fleet's
// politeness with the demo's own default delay, and the page budget.
func crawlCoord(cc *coord.Config, cfg *config.Config, o crawlOptions) {
	cc.Broker.Politeness = politeness(cfg, o.minDelay)
	cc.Broker.Politeness.ShareRobots = false // the local workers share one fetcher, and its robots.txt cache
	cc.MaxJobs = o.maxPages
}

func runCrawl(cmd *cobra.Command, cfg *config.Config, seed string, o crawlOptions) error {
	if o.workers < 1 || o.slots < 1 || o.maxPages < 0 || o.maxDepth < 0 {
		return usageError("crawl: --workers %d, --slots %d, --max-pages %d, --max-depth %d: want workers and slots >= 1, limits >= 0", o.workers, o.slots, o.maxPages, o.maxDepth)
	}
	ccfg, err := crawlConfig(cfg, o)
	if err != nil {
		return err
	}
	switch strings.ToLower(o.format) {
	case "", "jsonl", "json", "csv":
	default:
		return usageError("crawl: --format %q: want jsonl or csv", o.format)
	}
	useTUI := !o.noTUI && isTerminal(cmd.OutOrStdout()) && isTerminal(cmd.InOrStdin())
	if cfg.Source("log.level").Kind == config.FromDefault {
		cfg.Log.Level = "warn" // progress lines say what matters; -v style detail on request
	}
	ctx, log, done, err := runContext(cmd, cfg, useTUI)
	if err != nil {
		return err
	}
	defer done()
	out := cmd.OutOrStdout()

	var results crawl.RecordWriter // stays a nil interface without --out
	if o.out != "" {
		if results, err = openResults(o.out, o.format); err != nil {
			return err
		}
	}
	sink := job.NewSink(results, o.check != nil)
	settled := make(chan struct{}, 1) // the reactor saw the crawl settle

	if o.ephemeral { // the demo's listeners, on loopback ports the OS chooses
		cfg.Peers.Listen, cfg.Admin.Listen, cfg.Events.Listen = zsock.Ephemeral, zsock.Ephemeral, "-"
	}
	// The latest totals, for the politeness note: the coordinator holds
	// the per-host limits, so it knows when they hold pages back.
	var polite politeHeld
	// The coordinator as serve starts it (store sync, notifier and metrics
	// from the config), with the crawl's own: its store is --state, its
	// finished jobs go to the sink, and it is the one crawl defined.
	spec := coordSpec{crawl: true, state: o.state, options: func(opts *server.Options, m *obs.Metrics) error {
		crawlCoord(&opts.Coord, cfg, o)
		opts.Results = nil // the records go to --out
		opts.OnFinished = sink.Add
		opts.OnSettled = func(admin.Totals) {
			select {
			case settled <- struct{}{}:
			default:
			}
		}
		onTotals := opts.OnTotals
		opts.OnTotals = func(t admin.Totals) {
			polite.set(t)
			onTotals(t)
		}
		// The crawl is defined on its coordinator as a fleet crawl is
		// (submit --crawler --scope --max-depth --max-pages), so status and
		// the console's Crawls view show it.
		opts.Crawls = []admin.Crawl{{Name: job.Crawler, Scope: string(ccfg.Scope), MaxDepth: ccfg.MaxDepth, MaxPages: ccfg.MaxPages}}
		if opts.Store != nil && results != nil {
			// A page done in the store has its record in --out, whenever
			// the process dies: each batch waits for the records before it.
			opts.BeforeCommit = sink.Mark
		}
		return m.RegisterCrawl(func() uint64 { return uint64(sink.Refused()) })
	}}
	// The reactor, then the workers, each on its own goroutine; all stop
	// when runCtx ends. The server stops last so the workers' final
	// results and DISCONNECTs reach it; the store closes after it.
	srvCtx, stopSrv := context.WithCancel(context.Background())
	c, err := startCoordinator(srvCtx, cfg, log, spec)
	if err != nil {
		stopSrv()
		sink.Close()
		if errors.Is(err, zmq4.EADDRINUSE) {
			return fmt.Errorf("crawl: %w (another drover running? choose other addresses with --bind, --admin and --events)", err)
		}
		return fmt.Errorf("crawl: %w", err)
	}
	defer c.close()
	defer stopSrv() // before close: the metrics endpoint ends with srvCtx
	srv := c.srv
	var fopts []crawl.Option
	if o.warc != "" {
		ww, err := openWARC(o.warc, o.warcMaxSize, ccfg)
		if err != nil {
			sink.Close()
			return err
		}
		// Closed after the workers have stopped (defers run last-first).
		defer ww.Close()
		fopts = append(fopts, crawl.WithWARC(ww))
		o.warcFirst = ww.FirstFile()
	}
	fetcher, err := crawl.New(ccfg, fopts...)
	if err != nil {
		sink.Close()
		return usageError("crawl: %v", err)
	}
	defer fetcher.Close()
	pages := fetcherFor(fetcher)

	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(srvCtx) }()
	defer func() {
		stopSrv()
		<-srvDone
	}()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var wg sync.WaitGroup
	for i := range o.workers {
		wid := fmt.Sprintf("local-%d", i+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := worker.Run(runCtx, worker.Options{
				Connect: srv.InprocPeers(), ID: wid, Host: hostname(), Slots: o.slots,
				Heartbeat: cfg.Heartbeat.Interval, Log: log.With("worker", wid),
			}, job.Handler(pages, ccfg, wid))
			if err != nil && !errors.Is(err, context.Canceled) {
				log.Error("local worker stopped", "worker", wid, "err", err)
			}
		}()
	}
	defer wg.Wait()
	defer stopRun()

	start := time.Now()
	if o.beforeSeed != nil {
		o.beforeSeed(runCtx, srv.InprocPeers())
	}
	if err := submitSeed(runCtx, srv.InprocPeers(), seed); err != nil {
		return err
	}
	adm, err := client.DialAdmin(runCtx, client.AdminOptions{Connect: srv.InprocAdmin(), ID: "crawl"})
	if err != nil {
		return fmt.Errorf("crawl: attaching to the coordinator: %w", err)
	}
	defer adm.Close()

	if !useTUI {
		fmt.Fprintf(out, "crawling %s with %d workers (peers %s, admin %s)\n", seed, o.workers, srv.PeersEndpoint(), srv.AdminEndpoint())
		if c.st != nil {
			fmt.Fprintf(out, "state in %s (sync %s): %s\n", o.state, c.st.SyncPolicy(), srv.Restored())
		}
		if c.metricsAt != nil {
			if at := <-c.metricsAt; at != "" {
				fmt.Fprintf(out, "metrics listening on http://%s\n", at)
			}
		}
	}
	finished := make(chan admin.Totals, 1)
	go watchCrawl(runCtx, adm, sink, useTUI, out, settled, finished, politenessNote(fetcher, &polite, false))

	var final admin.Totals
	completed := false
	if useTUI {
		topts, err := consoleOptions(cfg, true, false)
		if err != nil {
			return err
		}
		topts.DoneText = "crawl finished · q for the summary"
		topts.Notice = politenessNote(fetcher, &polite, true)
		if err := tui.Run(runCtx, adm, topts, cmd.InOrStdin(), out); err != nil {
			return fmt.Errorf("console: %w", err)
		}
		select {
		case final = <-finished:
			completed = true
		default:
			final, _ = adm.Totals(context.Background())
		}
	} else {
		select {
		case final = <-finished:
			completed = true
		case <-ctx.Done():
			final, _ = adm.Totals(context.Background())
		}
	}
	elapsed := time.Since(start)
	if completed && final.At.After(start) {
		elapsed = final.At.Sub(start) // when the frontier emptied, not when the console closed
	}
	stopRun()
	wg.Wait()
	if err := sink.Close(); err != nil {
		return err
	}
	if o.title != "" {
		fmt.Fprintln(out, o.title)
	}
	sink.Summary(out, final, elapsed, completed)
	if o.out != "" {
		fmt.Fprintf(out, "  results:           %s\n", o.out)
	}
	if o.warcFirst != "" {
		fmt.Fprintf(out, "  WARC:              %s onward, in %s\n", o.warcFirst, filepath.Dir(o.warc))
	}
	if o.check != nil && completed {
		records, dups := sink.Records()
		return o.check(records, dups, out)
	}
	return nil
}

// submitSeed submits the crawl's first page through a producer session.
func submitSeed(ctx context.Context, endpoint, seed string) error {
	item, err := job.SeedItem(seed)
	if err != nil {
		return err
	}
	p, err := client.Dial(ctx, client.Options{Connect: endpoint, ID: "crawl-seed"})
	if err != nil {
		return fmt.Errorf("crawl: connecting the producer: %w", err)
	}
	defer p.Close()
	if _, err := p.Submit(ctx, []wire.SubmitItem{item}); err != nil {
		return fmt.Errorf("crawl: submitting the seed %s: %w", seed, err)
	}
	return nil
}

// watchCrawl polls the totals until the frontier is empty and nothing is in
// flight, printing a progress line a second when there is no console.
func watchCrawl(ctx context.Context, adm *client.Admin, sink *job.Sink, quiet bool, out io.Writer, settled <-chan struct{}, finished chan<- admin.Totals, note func() string) {
	// Check at once when the reactor sees the crawl settle, on every
	// change the coordinator signals (CHANGED, coalesced to ten a second),
	// and at least every 200ms.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	lastLine := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-adm.Changed():
		case <-settled:
		}
		t, err := adm.Totals(ctx)
		if err != nil {
			continue
		}
		if !quiet && time.Since(lastLine) >= time.Second {
			lastLine = time.Now()
			pages, _, failed := sink.Counts()
			fmt.Fprintf(out, "pages %d  queued %d  in flight %d  backoff %d  failed %d  duplicates avoided %d\n",
				pages, t.Queued, t.Dispatched, t.Backoff, failed, t.DedupHits)
			if n := note(); n != "" {
				fmt.Fprintln(out, "  "+n)
			}
		}
		if t.Settled() {
			finished <- t
			return
		}
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}
