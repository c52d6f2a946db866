package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"drover/admin"
	"drover/config"
	"drover/crawl"
	"drover/crawl/job"
	"drover/net/client"
	"drover/net/wire"
	"drover/net/worker"
	"drover/tui"
)

// loadConfigHeaders is loadConfig for worker and submit, with their
// repeated --header k=v flags as a map (parseHeaders).
func loadConfigHeaders(cmd *cobra.Command, hs []string) (*config.Config, map[string]string, error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, err
	}
	hm, err := parseHeaders(hs)
	return cfg, hm, err
}

// parseHeaders turns repeated --header k=v flags into a map.
func parseHeaders(hs []string) (map[string]string, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, usageError("--header %q: want name=value", h)
		}
		if _, dup := m[k]; dup {
			return nil, usageError("--header %q: %s given twice", h, k)
		}
		m[k] = v
	}
	return m, nil
}

// connectOr returns the --connect flag, or the endpoint the configuration
// says the coordinator listens on.
func connectOr(cmd *cobra.Command, listen string) string {
	if c, _ := cmd.Flags().GetString("connect"); c != "" {
		return c
	}
	return listen
}

func newWorkerCmd() *cobra.Command {
	var (
		slots   int
		headers []string
		execCmd string
		wid     string
		warcDir string
		// warcMaxSize is --warc-max-size.
		warcMaxSize string
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker: the crawl handler, or a command per job (--exec)",
		Long: `worker connects to a coordinator's peers endpoint, announces its capabilities
(--header k=v) and slots, and runs the jobs it is given. Without --exec it runs the
crawl handler (fetch the URL politely, report the page and its links) for any
crawler name: a crawl defined on the coordinator (drover submit --scope,
--max-depth, --max-pages) brings its scope and depth in the jobs' payloads, so
the worker needs no crawl flags; a job without a payload is a seed of host scope
and depth 10. With --exec
it runs the command through /bin/sh for each job: the payload on stdin,
DROVER_JOB_ID, DROVER_URL and DROVER_ATTEMPT in the environment; exit 0 is ok,
75 (EX_TEMPFAIL) a retryable failure, 65 (EX_DATAERR) a bad job, anything else a
retryable failure; stdout becomes the job's output. It reconnects by itself
(1s doubling to 32s) and re-announces the jobs it holds.`,
		Example: `  drover worker --connect tcp://10.0.0.5:5570 --slots 8 --key worker.key --server-key server.pub
  drover worker --header hwgroup=gpu --exec 'render "$DROVER_URL"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, hm, err := loadConfigHeaders(cmd, headers)
			if err != nil {
				return err
			}
			if slots < 1 || slots > wire.MaxSlots {
				return usageError("--slots %d: want 1 to %d", slots, wire.MaxSlots)
			}
			ctx, log, done, err := runContext(cmd, cfg, false)
			if err != nil {
				return err
			}
			defer done()
			sec, err := clientSecurity(cfg)
			if err != nil {
				return err
			}
			opts := worker.Options{
				Connect: connectOr(cmd, cfg.Peers.Listen), ID: wid, Slots: slots, Headers: hm,
				Heartbeat: cfg.Heartbeat.Interval, Log: log, Security: sec,
			}
			var h worker.Handler
			if execCmd != "" {
				h = worker.Exec([]string{"/bin/sh", "-c", execCmd})
			} else {
				ccfg, err := crawlConfig(cfg, crawlOptions{maxDepth: crawl.DefaultMaxDepth, scope: "host", sitemaps: true, localCaps: true})
				if err != nil {
					return err
				}
				ccfg.Parallel = slots
				name := wid
				if name == "" {
					name = hostname()
				}
				var fopts []crawl.Option
				if warcDir != "" {
					ww, err := openWARC(filepath.Join(warcDir, warcFileName(wid)), warcMaxSize, ccfg)
					if err != nil {
						return err
					}
					defer ww.Close() // after the worker has stopped
					fopts = append(fopts, crawl.WithWARC(ww))
					log.Info("writing WARC files", "dir", warcDir, "first", ww.FirstFile())
				}
				f, err := crawl.New(ccfg, fopts...)
				if err != nil {
					return usageError("worker: %v", err)
				}
				defer f.Close()
				defer func() {
					if n := f.Refused(); n > 0 {
						log.Info("connections to private addresses refused (crawl.allow_private)", "refused", n)
					}
				}()
				h = job.Handler(f, ccfg, name)
				if !ccfg.IgnoreRobots {
					opts.Robots = job.UseRobots(f) // the fleet's copies of robots.txt
				}
			}
			log.Info("worker starting", "connect", opts.Connect, "slots", slots, "exec", execCmd != "")
			err = worker.Run(ctx, opts, h)
			if errors.Is(err, context.Canceled) || errors.Is(err, worker.ErrDrained) {
				return nil
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.String("connect", "", "the coordinator's peers endpoint (default: peers.listen)")
	addKeyFlags(cmd)
	fs.IntVar(&slots, "slots", 1, "jobs run at once")
	fs.StringArrayVar(&headers, "header", nil, "a capability name=value (repeatable), e.g. hwgroup=gpu, threads=8")
	fs.StringVar(&execCmd, "exec", "", "run this shell command per job instead of the crawl handler")
	fs.StringVar(&warcDir, "warc", "", "write the crawl handler's fetches as WARC 1.1 files in this directory, named drover-ID-00001.warc.gz, ... after the worker id, so that several workers' files can be merged")
	fs.StringVar(&warcMaxSize, "warc-max-size", "1GiB", "start the next WARC file once one reaches this size")
	fs.StringVar(&wid, "id", "", "stable worker id (default: host-pid); a reconnect with the same id keeps its jobs")
	must(config.AddFlags(fs, "crawl.user_agent", "crawl.per_host", "crawl.timeout", "crawl.min_delay", "heartbeat.interval"))
	must(config.AddFlag(fs, "crawl.allow_private", "allow-private", ""))
	return cmd
}

func newStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Print the coordinator's totals, the next retry, the hosts held back for politeness, workers and crawls",
		Example: "  drover status\n  drover status --connect tcp://10.0.0.5:5571 --json | jq .totals",
		Args:    cobra.NoArgs,
		RunE: withConfig(func(cmd *cobra.Command, cfg *config.Config) error {
			ctx := cmd.Context()
			a, err := dialAdmin(ctx, cmd, cfg, client.AdminOptions{ReadOnly: true})
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			defer a.Close()
			t, err := a.Totals(ctx)
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			page, err := a.Query(ctx, admin.Query{View: admin.ViewWorkers, Limit: 1000})
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			crawls, err := a.Query(ctx, admin.Query{View: admin.ViewCrawls, Limit: 1000})
			if err != nil {
				return fmt.Errorf("status: %w", err)
			}
			// The job waiting in back-off that runs next (a host's back-off
			// or a retry delay ending): the retries view's first row.
			var next *admin.JobRow
			if t.Backoff > 0 {
				p, err := a.Query(ctx, admin.Query{View: admin.ViewRetries, Filter: "state=backoff", Limit: 1})
				if err != nil {
					return fmt.Errorf("status: %w", err)
				}
				if len(p.Jobs) > 0 {
					next = &p.Jobs[0]
				}
			}
			// The hosts holding queued jobs back for politeness, most
			// waiting jobs first (the retries view lists them).
			var polite []admin.HostRow
			if t.Polite > 0 {
				p, err := a.Query(ctx, admin.Query{View: admin.ViewRetries, Limit: 1})
				if err != nil {
					return fmt.Errorf("status: %w", err)
				}
				for _, h := range p.Hosts {
					if h.Polite {
						polite = append(polite, h)
					}
				}
			}
			if t.Cluster != nil {
				polite = withClusterPolite(polite, t.Cluster.PoliteHosts)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Totals      admin.Totals      `json:"totals"`
					NextRetry   *admin.JobRow     `json:"next_retry,omitempty"`
					PoliteHosts []admin.HostRow   `json:"polite_hosts,omitempty"`
					Workers     []admin.WorkerRow `json:"workers"`
					Crawls      []admin.Crawl     `json:"crawls"`
				}{t, next, polite, page.Workers, crawls.Crawls})
			}
			printStatus(out, t, next, page.Workers)
			printPolite(out, polite)
			printCrawls(out, crawls.Crawls)
			return nil
		}),
	}
	addAdminFlags(cmd, true)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printStatus(w io.Writer, t admin.Totals, next *admin.JobRow, workers []admin.WorkerRow) {
	paused := ""
	if t.Paused {
		paused = "  (dispatch PAUSED)"
	}
	polite := ""
	if t.Polite > 0 { // queued jobs of hosts at their politeness limits
		polite = fmt.Sprintf(" (%d polite: their hosts at their limits)", t.Polite)
	}
	fmt.Fprintf(w, "jobs:    queued %d%s, dispatched %d, backoff %d, done %d, failed %d, unroutable %d%s\n",
		t.Queued, polite, t.Dispatched, t.Backoff, t.Done, t.Failed, t.Unroutable, paused)
	if next != nil && !next.RetryAt.IsZero() {
		fmt.Fprintf(w, "next retry at %s (in %s): job %d %s, %s\n", next.RetryAt.Local().Format(time.TimeOnly),
			max(time.Until(next.RetryAt), 0).Round(100*time.Millisecond), next.JobID, next.URL, next.Reason)
	}
	fmt.Fprintf(w, "keys:    requested %d, queued %d, done %d, waiters %d, duplicates avoided %d\n",
		t.KeysRequested, t.KeysQueued, t.KeysDone, t.Waiters, t.DedupHits)
	fmt.Fprintf(w, "workers: idle %d, busy %d, draining %d, held back %d, lost %d\n", t.WorkersIdle, t.WorkersBusy, t.WorkersDraining, t.WorkersHeld, t.WorkersLost)
	if l := t.Listening; l != (admin.Listeners{}) {
		fmt.Fprintf(w, "listening: peers %s, admin %s, events %s\n", cmp.Or(l.Peers, "-"), cmp.Or(l.Admin, "-"), cmp.Or(l.Events, "-"))
	}
	printCluster(w, t.Cluster)
	if len(workers) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nWORKER\tHOST\tSTATE\tSLOTS\tJOBS\tDONE\tFAILURES\tHEARTBEAT")
	for _, r := range workers {
		state := r.State
		if !r.HeldUntil.IsZero() {
			state += " until " + r.HeldUntil.Local().Format(time.TimeOnly) // held back after early deaths
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%v\t%d\t%d\t%s ago\n", r.ID, r.Host, state, r.Used, r.Slots, r.Jobs, r.Done, r.Failures,
			time.Since(r.LastHeartbeat).Round(100*time.Millisecond))
	}
	tw.Flush()
}

// withClusterPolite adds to this coordinator's polite hosts those the
// coordinators sharing its Redis store found holding fetches back in the
// shared queue (a host this coordinator lists keeps its own row), most
// waiting jobs first.
func withClusterPolite(own, cluster []admin.HostRow) []admin.HostRow {
	if len(cluster) == 0 {
		return own
	}
	listed := make(map[string]bool, len(own))
	for _, h := range own {
		listed[h.Host] = true
	}
	for _, h := range cluster {
		if !listed[h.Host] {
			own = append(own, h)
		}
	}
	slices.SortStableFunc(own, func(x, y admin.HostRow) int { return cmp.Compare(y.Jobs, x.Jobs) })
	return own
}

// maxPoliteShown bounds the polite hosts status lists.
const maxPoliteShown = 10

// printPolite lists the hosts holding queued jobs back for politeness and
// when each is next eligible.
func printPolite(w io.Writer, hosts []admin.HostRow) {
	if len(hosts) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPOLITE HOST\tQUEUED\tIN FLIGHT\tLIMIT\tNEXT DISPATCH")
	for _, h := range hosts[:min(len(hosts), maxPoliteShown)] {
		next := "when a fetch of it ends"
		if !h.Until.IsZero() {
			next = h.Until.Local().Format("15:04:05.000") + " (in " + max(time.Until(h.Until), 0).Round(100*time.Millisecond).String() + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", h.Host, h.Jobs, h.InFlight, h.Limit, next)
	}
	if len(hosts) > maxPoliteShown {
		fmt.Fprintf(tw, "(%d more)\n", len(hosts)-maxPoliteShown)
	}
	tw.Flush()
}

// printCluster shows the coordinators sharing a Redis Cluster store, as
// they last published themselves (nothing for a coordinator on its own).
func printCluster(w io.Writer, c *admin.Cluster) {
	if c == nil {
		return
	}
	alive := 0
	for _, r := range c.Coordinators {
		if r.Alive {
			alive++
		}
	}
	fmt.Fprintf(w, "cluster: %s (%d alive); shared queue %d, claimed %d, done %d, failed %d\n",
		plural(len(c.Coordinators), "coordinator"), alive, c.Queued, c.Claimed, c.Done, c.Failed)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCOORDINATOR\tPEERS\tSTATE\tWORKERS IDLE/BUSY\tQUEUED\tRUNNING\tDONE\tFAILED\tHEARTBEAT")
	for _, r := range c.Coordinators {
		state := "alive"
		if !r.Alive {
			state = "gone"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%d\t%d\t%d\t%s ago\n", r.ID, cmp.Or(r.Peers, "-"), state, r.WorkersIdle, r.WorkersBusy,
			r.Queued, r.Dispatched, r.Done, r.Failed, time.Since(r.Heartbeat).Round(100*time.Millisecond))
	}
	tw.Flush()
}

// printCrawls lists the crawls defined on the coordinator.
func printCrawls(w io.Writer, crawls []admin.Crawl) {
	if len(crawls) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCRAWL\tSTATE\tSCOPE\tMAX DEPTH\tQUEUED\tRUNNING\tBACKOFF\tDONE\tFAILED\tPAGES/S\tPAGES\tBUDGET LEFT")
	for _, c := range crawls {
		depth, left := strconv.Itoa(c.MaxDepth), "-"
		if c.MaxDepth == 0 {
			depth = "-"
		}
		if c.MaxPages > 0 {
			left = strconv.Itoa(max(c.MaxPages-c.Pages, 0)) + " of " + strconv.Itoa(c.MaxPages)
		}
		// The state is the coordinator's (admin.Crawl.CurrentState): a
		// crawl with nothing left to do is done, not running.
		state, scope := c.State, c.Scope
		if scope == "" { // paused or cancelled by name, never defined
			scope, depth = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t%d\t%s\n", c.Name, state, scope, depth,
			c.Queued, c.Running, c.Backoff, c.Done, c.Failed, c.PagesPerSec, c.Pages, left)
	}
	tw.Flush()
}
func newConsoleCmd() *cobra.Command {
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Attach the console to a running drover serve",
		Long: `console attaches the operations console to a coordinator's admin endpoint.
Closing it leaves the coordinator running. The header shows STALE while the
coordinator does not answer, and the console recovers by itself when it returns.`,
		Example: "  drover console --connect tcp://127.0.0.1:5571\n  ssh ops@crawler -t drover console --read-only",
		Args:    cobra.NoArgs,
		RunE: withConfig(func(cmd *cobra.Command, cfg *config.Config) error {
			topts, ctx, log, done, err := consoleContext(cmd, cfg, false, readOnly)
			if err != nil {
				return err
			}
			defer done()
			a, err := dialAdmin(ctx, cmd, cfg, client.AdminOptions{ID: "console", ReadOnly: topts.ReadOnly, Log: log})
			if err != nil {
				return fmt.Errorf("console: attaching to %s: %w", connectOr(cmd, cfg.Admin.Listen), err)
			}
			return runConsole(ctx, cmd, a, topts)
		}),
	}
	addAdminFlags(cmd, false)
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "look without acting: evict, drain, requeue and pause are refused")
	return cmd
}

// runConsole runs the console on the command's terminal over a (dialled
// to a remote admin endpoint, or the inproc:// one of a coordinator in
// this process) until the operator quits or ctx ends, and closes a.
func runConsole(ctx context.Context, cmd *cobra.Command, a *client.Admin, topts tui.Options) error {
	defer a.Close()
	return ignoreCanceled(tui.Run(ctx, a, topts, cmd.InOrStdin(), cmd.OutOrStdout()))
}
