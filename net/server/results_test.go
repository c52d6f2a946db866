package server

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"drover/admin"
	"drover/clock"
	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
	"drover/store"
)

// TestResultsRetentionPerCrawl: a crawl defined with results_max_age of
// its own has its results deleted after it, while another crawl's results
// follow the coordinator's longer results.max_age; with a store (the
// trimmer's pass on the fake clock) and in memory (the next results'
// step).
func TestResultsRetentionPerCrawl(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("store=%v", durable), func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
			opts := Options{
				Clock: clk, Coord: coord.Config{Heartbeat: time.Hour, MaxHeartbeat: time.Hour},
				Results: &ResultsOptions{MaxAge: time.Hour, TrimEvery: time.Minute},
				Crawls:  []admin.Crawl{{Name: "short", Scope: "host", ResultsMaxAge: 60}},
			}
			if durable {
				opts.Store = openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncAlways)
				t.Cleanup(func() { opts.Store.Close() })
			}
			s := startServer(t, opts)
			w := dial(t, s.PeersEndpoint())
			w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Slots: 10})
			expect[*wire.Welcome](t, w.recv())
			p := dial(t, s.PeersEndpoint())
			p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p"})
			expect[*wire.Welcome](t, p.recv())
			req := uint64(1)
			run := func(keys ...id.Key) {
				t.Helper()
				items := make([]wire.SubmitItem, len(keys))
				for i, k := range keys {
					items[i] = wire.SubmitItem{Key: k}
				}
				req++
				p.send(&wire.Submit{Req: req, Jobs: items})
				expect[*wire.Submitted](t, p.recv())
				var results []wire.ResultItem
				for len(results) < len(items) {
					if j, ok := w.recv().(*wire.Job); ok {
						for _, it := range j.Jobs {
							results = append(results, wire.ResultItem{JobID: it.JobID, Attempt: it.Attempt, Outcome: wire.OutcomeOK})
						}
					}
				}
				w.send(&wire.Result{Req: req, Items: results})
				expect[*wire.ResultOK](t, w.recv())
			}
			con := dial(t, s.AdminEndpoint())
			con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console", ReadOnly: true})
			expect[*wire.Welcome](t, con.recv())
			urls := func() []string {
				req++
				con.send(&wire.Query{Req: req, Query: admin.Query{View: admin.ViewResults}})
				for {
					if pg, ok := con.recv().(*wire.Page); ok {
						var out []string
						for _, r := range pg.Page.Results {
							out = append(out, r.URL)
						}
						return out
					}
				}
			}
			waitURLs := func(what string, want ...string) {
				t.Helper()
				var got []string
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
					if got = urls(); slices.Equal(got, want) {
						return
					}
				}
				t.Fatalf("%s: results of %v, want %v", what, got, want)
			}
			run(id.Key{Crawler: "short", Processor: "p", URL: "http://a.test/1"}, id.Key{Crawler: "long", Processor: "p", URL: "http://a.test/2"})
			waitURLs("at first", "http://a.test/1", "http://a.test/2")
			clk.Advance(2 * time.Minute)
			if !durable {
				run(id.Key{Crawler: "long", Processor: "p", URL: "http://a.test/3"}) // the step that trims
				waitURLs("2 minutes later", "http://a.test/2", "http://a.test/3")
				return
			}
			waitURLs("2 minutes later", "http://a.test/2")
			clk.Advance(time.Hour)
			waitURLs("an hour later")
		})
	}
}
