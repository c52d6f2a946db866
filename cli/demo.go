package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"drover/config"
	"drover/coord/id"
	"drover/crawl"
	"drover/crawl/demosite"
	"drover/crawl/job"
	"drover/net/client"
)

// demoHost is the name the demo site is crawled under; the fetcher pins it
// to the site's loopback listener, so no DNS is involved and the site's
// spellings with an explicit :80 really occur.
const demoHost = "demo.drover.test"

func newDemoCmd() *cobra.Command {
	o := crawlOptions{workers: 4, slots: 2, maxDepth: 10, scope: "host", ephemeral: true, minDelay: 10 * time.Millisecond, sitemaps: true}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Crawl a built-in local site with the console: the quickest way to see drover work",
		Long: `demo serves a built-in, deterministic site on 127.0.0.1 — a few hundred pages with
cycles, the same page under several spellings, a robots.txt with a disallowed
section, pages that answer 429 with Retry-After for a while, flapping 500s, a page
that always fails, a slow page, a 404 and an infinite calendar trap — and crawls it
with local workers under the console. For its first seconds a rival crawler holds
three of the pages (filter Jobs with state=requested, then press 3 for their waiter
queues) and then dies, handing each page to the next waiting worker. It needs
nothing but this binary and libzmq. At the end it checks what it found against the
site's own link graph.`,
		Example: `  drover demo            # with the console (q quits)
  drover demo --no-tui   # progress lines and a summary`,
		Args: cobra.NoArgs,
		RunE: withConfig(func(cmd *cobra.Command, cfg *config.Config) error {
			site := demosite.New(demosite.Options{})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return fmt.Errorf("demo: listening on 127.0.0.1: %w", err)
			}
			hs := &http.Server{Handler: site, ReadHeaderTimeout: 5 * time.Second}
			go hs.Serve(ln)
			defer hs.Close()
			origin := "http://" + demoHost
			want, err := site.Expect(origin, o.maxDepth)
			if err != nil {
				return err
			}
			o.resolve = map[string]string{demoHost + ":80": ln.Addr().String()}
			o.title = fmt.Sprintf("demo site %s (served on %s)", origin, ln.Addr())
			o.check = func(records map[string]crawl.Record, dups []string, w io.Writer) error {
				return checkDemo(want, records, dups, w)
			}
			o.beforeSeed = func(ctx context.Context, peers string) { rivalCrawler(ctx, peers, want, rivalHold) }
			return runCrawl(cmd, cfg, want.Seed, o)
		}),
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.noTUI, "no-tui", false, "print progress lines and a summary instead of the console")
	fs.IntVar(&o.workers, "workers", o.workers, "local workers to run")
	fs.StringVar(&o.out, "out", "", "write one JSON object per fetched page to this file (JSON lines)")
	return cmd
}

// checkDemo compares a demo crawl's records with what the site says a
// correct crawl finds: the same pages, each with its outcome and status.
// A page an operator requeued counts by its last outcome.
func checkDemo(want demosite.Expected, got map[string]crawl.Record, dups []string, w io.Writer) error {
	var diffs []string
	for _, u := range dups {
		diffs = append(diffs, "fetched by two jobs: "+u)
	}
	for u, f := range want.Pages {
		r, ok := got[u]
		switch {
		case !ok:
			diffs = append(diffs, "missing: "+u)
		case f.Outcome == demosite.Disallowed && !r.Disallowed:
			diffs = append(diffs, "not disallowed: "+u)
		case f.Outcome == demosite.Failed && r.Outcome != "failed":
			diffs = append(diffs, fmt.Sprintf("should have failed: %s (status %d)", u, r.Status))
		case f.Outcome == demosite.Fetched && r.Status != f.Status:
			diffs = append(diffs, fmt.Sprintf("status %d, want %d: %s", r.Status, f.Status, u))
		}
	}
	for u := range got {
		if _, ok := want.Pages[u]; !ok {
			diffs = append(diffs, "unexpected: "+u)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		for _, d := range diffs[:min(len(diffs), 20)] {
			fmt.Fprintln(w, "  check: "+d)
		}
		return fmt.Errorf("demo: the crawl differs from the site's expected pages in %d ways", len(diffs))
	}
	fmt.Fprintf(w, "  check:             matches the site: %d pages fetched (%d answered 404, %d redirects), %d disallowed, %d failed, %d throttled first, %d calendar pages before the depth limit\n",
		want.Fetched, want.NotFound, want.Redirects, want.Disallowed, want.Failed, want.Throttled, want.Calendar)
	return nil
}

// rivalHold is how long the demo's rival crawler holds its keys before it
// "dies".
const rivalHold = 4 * time.Second

// rivalCrawler plays seed 000's scenario inside the demo: another crawler
// requests a few of the site's pages first and holds them; the crawl's
// workers that discover those links wait in the keys' FIFO queues (the
// console's Waiters view shows them); then the rival's process dies
// without queueing anything, and each key passes to the next waiter, which
// crawls it. The demo's check proves no page was lost or fetched twice.
func rivalCrawler(ctx context.Context, peers string, want demosite.Expected, hold time.Duration) {
	var keys []id.Key
	for _, u := range slices.Sorted(maps.Keys(want.Pages)) {
		f := want.Pages[u]
		if f.Depth == 1 && f.Outcome == demosite.Fetched && f.Status == 200 && f.Refusals == 0 && f.Failures == 0 && len(keys) < 3 {
			keys = append(keys, id.Key{Crawler: job.Crawler, Processor: job.Processor, URL: u})
		}
	}
	c, err := client.Dial(ctx, client.Options{Connect: peers, ID: "rival-crawler"})
	if err != nil {
		return // the demo goes on without its rival
	}
	if _, err := c.Request(ctx, keys); err != nil {
		c.Close()
		return
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
		c.Close() // the rival "dies": its keys pass to their waiters
	}()
}
