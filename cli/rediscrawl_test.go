package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/net/client"
	"drover/store/redis/redistest"
)

// startRedisCrawler starts `drover serve --store redis://...` with a
// crawl worker process of its own (no crawl flags: the crawl's definition
// travels with its jobs).
func startRedisCrawler(t *testing.T, url, name string) *redisCoordinator {
	t.Helper()
	rc := startRedisServe(t, url)
	rc.startWorker(t, "crawler-"+name, 4)
	return rc
}

// crawlsOf reads view crawls from a coordinator's drover status --json.
func crawlsOf(t *testing.T, adm string) map[string]admin.Crawl {
	t.Helper()
	out, code := run(t, "", "status", "--json", "--connect", adm)
	if code != 0 {
		return nil
	}
	var st struct {
		Crawls []admin.Crawl `json:"crawls"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	m := make(map[string]admin.Crawl, len(st.Crawls))
	for _, c := range st.Crawls {
		m[c.Name] = c
	}
	return m
}

// TestCrawlBudgetAcrossCoordinatorsOnRedis: a crawl defined on one of two
// coordinators on a Redis Cluster, each with a crawl worker, fetches
// exactly its --max-pages of a 60-page site, though the pages it finds are
// claimed and fetched on both coordinators; both coordinators' status
// shows the crawl the same: its 20 pages spent, 20 done, 40 failed (the
// budget), finished.
func TestCrawlBudgetAcrossCoordinatorsOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	st := newSite(t)
	a := startRedisCrawler(t, cl.URL(), "a")
	b := startRedisCrawler(t, cl.URL(), "b")
	if out, code := run(t, "", "submit", "--connect", a.peers, "--admin", a.adm, "--crawler", "site", "--max-pages", "20", st.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	t0 := time.Now()
	eventually(t, "the cluster settles", 90*time.Second, func() bool {
		tot, _, ok := statusJSON(t, a.adm)
		c := tot.Cluster
		return ok && c != nil && c.Queued == 0 && c.Claimed == 0 && c.Done+c.Failed >= 60
	})
	t.Logf("settled in %v", time.Since(t0).Round(time.Millisecond))
	st.fetchedOnce(t, 20, "--max-pages 20 across both coordinators")
	finished := func(c admin.Crawl) bool {
		return c.State == admin.CrawlDone && c.Done+c.Failed == 60 && c.Queued+c.Running+c.Backoff == 0
	}
	var ca, cb admin.Crawl
	eventually(t, "both coordinators show the crawl finished", 30*time.Second, func() bool {
		ca, cb = crawlsOf(t, a.adm)["site"], crawlsOf(t, b.adm)["site"]
		return finished(ca) && finished(cb)
	})
	for _, c := range []admin.Crawl{ca, cb} {
		if c.Pages != 20 || c.Done != 20 || c.Failed != 40 || c.MaxPages != 20 {
			t.Fatalf("crawl on a %+v, on b %+v: want 20 of 20 pages, 20 done, 40 failed (budget) on both", ca, cb)
		}
	}
	// Every result, whichever coordinator's worker ran its job, reads
	// the same on both.
	for _, c := range []*redisCoordinator{a, b} {
		out, code := run(t, "", "results", "--connect", c.adm, "--crawler", "site")
		if code != 0 {
			t.Fatalf("results: exit %d, %s", code, out)
		}
		pages, budget := 0, 0
		workers := map[string]int{}
		for _, r := range resultLines(t, out) {
			switch r.Outcome {
			case "ok":
				pages++
				workers[r.Worker]++
			case "budget":
				budget++
			}
		}
		if pages != 20 || budget != 40 {
			t.Fatalf("results on %s: %d pages and %d budget skips, want 20 and 40", c.adm, pages, budget)
		}
		t.Logf("results on %s: pages by worker %v", c.adm, workers)
	}
	// View events on either coordinator shows every coordinator's: the
	// 20 pages done, wherever they ran, each naming its coordinator.
	for _, c := range []*redisCoordinator{a, b} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		adm, err := client.DialAdmin(ctx, client.AdminOptions{Connect: c.adm, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var page admin.Page
		eventually(t, "view events shows the 20 pages done", 20*time.Second, func() bool {
			page, err = adm.Query(ctx, admin.Query{View: admin.ViewEvents, Filter: "kind=job.done", Limit: 100})
			return err == nil && len(page.Events) == 20
		})
		coords := map[string]int{}
		for _, ev := range page.Events {
			coords[ev.Coordinator]++
			if ev.Coordinator == "" || ev.Cursor == 0 {
				t.Fatalf("event %+v: want its coordinator and result cursor", ev)
			}
		}
		t.Logf("events on %s: pages done by coordinator %v", c.adm, coords)
		adm.Close()
		cancel()
	}
	out, _ := run(t, "", "status", "--connect", b.adm)
	if !strings.Contains(out, "site") || !strings.Contains(out, "0 of 20") {
		t.Fatalf("b's status:\n%s\nwant crawl site with 0 of 20 pages left", out)
	}
}

// A crawl without a page budget cancelled on a before its jobs are
// submitted to b: every job fails as cancelled without running, and both
// coordinators show the crawl with 0 pages, as the embedded store does (a
// job that ends without a dispatch gives its page back). The pages its
// claims counted used to stay: 10 pages, none fetched.
func TestCancelledCrawlSpendsNoPagesOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	dir := t.TempDir()
	a := startRedisCoordinator(t, cl.URL(), dir, "a")
	b := startRedisCoordinator(t, cl.URL(), dir, "b")
	if out, code := run(t, "", "cancel", "--crawler", "gone", "--yes", "--connect", a.adm); code != 0 {
		t.Fatalf("cancel on a: exit %d, %s", code, out)
	}
	eventually(t, "b has the crawl cancelled", 30*time.Second, func() bool {
		return crawlsOf(t, b.adm)["gone"].State == admin.CrawlCancelled
	})
	urls := redisURLs("cancelled", 10)
	out, code := run(t, strings.Join(urls, "\n")+"\n", "submit", "-", "--crawler", "gone", "--connect", b.peers)
	if code != 0 {
		t.Fatalf("submit to b: exit %d, %s", code, out)
	}
	var ca, cb admin.Crawl
	eventually(t, "both coordinators count the 10 jobs failed", 60*time.Second, func() bool {
		ca, cb = crawlsOf(t, a.adm)["gone"], crawlsOf(t, b.adm)["gone"]
		return ca.Failed == 10 && cb.Failed == 10 && ca.Queued+ca.Running == 0 && cb.Queued+cb.Running == 0
	})
	if ca.Pages != 0 || cb.Pages != 0 || ca.Done != 0 {
		t.Fatalf("cancelled crawl on a %+v, on b %+v: want 0 pages, none done", ca, cb)
	}
	if n := len(ran(t, a, b)); n != 0 {
		t.Fatalf("the workers ran %d jobs of the cancelled crawl; want none", n)
	}
}

// A crawl cancelled on b while its 5 jobs wait in the cluster's queue and
// no coordinator has a worker: b's answer claims no job failed (none was
// on b; it used to say "1 job failed as cancelled"), a cancel again says
// it was cancelled already, and the jobs stay queued until a worker
// connects to a, whose claims fail them as cancelled, unrun, no page
// spent (as drover cancel --help says of a Redis store).
func TestCancelWithJobsInTheClusterQueueOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	b := startRedisServe(t, cl.URL())
	urls := redisURLs("queued-cancel", 5)
	if out, code := run(t, strings.Join(urls, "\n")+"\n", "submit", "-", "--crawler", "later", "--connect", a.peers); code != 0 {
		t.Fatalf("submit to a: exit %d, %s", code, out)
	}
	out, code := run(t, "", "cancel", "--crawler", "later", "--yes", "--connect", b.adm)
	if code != 0 || strings.TrimSpace(out) != "crawl later cancelled" {
		t.Fatalf("cancel on b: exit %d, %q; want exit 0, %q (no job of it was on b)", code, out, "crawl later cancelled")
	}
	if out, code := run(t, "", "cancel", "--crawler", "later", "--yes", "--connect", b.adm); code != 0 || !strings.Contains(out, "was cancelled already") {
		t.Fatalf("cancel on b again: exit %d, %q; want it cancelled already", code, out)
	}
	eventually(t, "a has the crawl cancelled, its 5 jobs queued", 30*time.Second, func() bool {
		c := crawlsOf(t, a.adm)["later"]
		return c.State == admin.CrawlCancelled && c.Queued == 5 && c.Failed == 0
	})
	ranFile := filepath.Join(t.TempDir(), "a.ran")
	a.startWorker(t, "w-a", 2, "--exec", `echo "$DROVER_URL" >> `+ranFile)
	var ca admin.Crawl
	eventually(t, "a's claims fail the 5 jobs as cancelled", 60*time.Second, func() bool {
		ca = crawlsOf(t, a.adm)["later"]
		return ca.Failed == 5 && ca.Queued == 0
	})
	if ca.Pages != 0 || ca.Done != 0 {
		t.Fatalf("crawl on a %+v: want none done, 0 pages", ca)
	}
	if b, err := os.ReadFile(ranFile); err == nil && len(b) > 0 {
		t.Fatalf("a's worker ran jobs of the cancelled crawl:\n%s", b)
	}
}
