package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"drover/admin"
)

// TestCrawlControl: pause, resume, cancel and requeue --failed act on one
// crawl while another runs, through real processes.
func TestCrawlControl(t *testing.T) {
	serveArgs := []string{"serve", "--store", t.TempDir(), "--metrics", "", "--heartbeat-interval", "1s"}
	srv, srvOut := start(t, append(serveArgs, anyPorts...)...)
	peers, adminEP, events := serving(t, srvOut)
	serveArgs = append(serveArgs, onPorts(peers, adminEP, events)...) // a restart keeps the ports
	start(t, "worker", "--connect", peers, "--slots", "2", "--heartbeat-interval", "1s", "--exec", `echo "ran $DROVER_URL"`)
	act := func(args ...string) string {
		t.Helper()
		out, code := run(t, "", append(args, "--connect", adminEP)...)
		if code != 0 {
			t.Fatalf("drover %v: exit %d, %s", args, code, out)
		}
		return out
	}
	submit := func(crawler string, urls ...string) {
		t.Helper()
		if out, code := run(t, "", append([]string{"submit", "--connect", peers, "--crawler", crawler, "--processor", "sh"}, urls...)...); code != 0 {
			t.Fatalf("submit: exit %d, %s", code, out)
		}
	}
	outcomes := func(crawler string) map[string]string {
		out := act("results", "--crawler", crawler)
		m := map[string]string{}
		for _, r := range resultLines(t, out) {
			m[r.URL] = r.Outcome // the newest wins
		}
		return m
	}
	if out := act("pause", "--crawler", "a"); !strings.Contains(out, "crawl a paused") {
		t.Fatalf("pause: %q", out)
	}
	submit("a", "http://a.test/1", "http://a.test/2")
	submit("b", "http://b.test/1")
	eventually(t, "b runs while a is paused", 30*time.Second, func() bool { return outcomes("b")["http://b.test/1"] == "ok" })
	tot, _, _ := statusJSON(t, adminEP)
	if tot.Queued != 2 || len(outcomes("a")) != 0 {
		t.Fatalf("totals %+v, results of a %v: want a's 2 jobs queued, none run", tot, outcomes("a"))
	}
	if out := act("status"); !strings.Contains(out, "paused") {
		t.Fatalf("status:\n%s\nwant crawl a paused", out)
	}
	act("resume", "--crawler", "a")
	eventually(t, "a runs after resume", 30*time.Second, func() bool { return len(outcomes("a")) == 2 })
	if a := crawlStatus(t, adminEP)["a"]; a.Done != 2 || a.Queued+a.Running+a.Failed != 0 || a.State != admin.CrawlDone {
		t.Fatalf("crawl a after its 2 jobs ran: %+v, want state done, 2 done, none queued, running or failed", a)
	}

	act("pause", "--crawler", "c")
	submit("c", "http://c.test/1", "http://c.test/2", "http://c.test/3")
	if out := act("cancel", "--crawler", "c", "--yes"); !strings.Contains(out, "3 jobs failed as cancelled") {
		t.Fatalf("cancel: %q, want 3 jobs cancelled", out)
	}
	eventually(t, "cancelled results", 30*time.Second, func() bool {
		o := outcomes("c")
		return len(o) == 3 && o["http://c.test/1"] == "cancelled"
	})
	if c := crawlStatus(t, adminEP)["c"]; c.Failed != 3 || c.Done != 0 || c.Queued != 0 {
		t.Fatalf("crawl c after its cancel: %+v, want 3 failed, none done or queued", c)
	}
	act("resume", "--crawler", "c")
	if out := act("requeue", "--failed", "--crawler", "c", "--yes"); !strings.Contains(out, "requeued 3 jobs") {
		t.Fatalf("requeue --failed --crawler c: %q", out)
	}
	eventually(t, "c runs after requeue", 30*time.Second, func() bool {
		o := outcomes("c")
		return o["http://c.test/1"] == "ok" && o["http://c.test/2"] == "ok" && o["http://c.test/3"] == "ok"
	})
	if c := crawlStatus(t, adminEP)["c"]; c.Failed != 0 || c.Done != 3 {
		t.Fatalf("crawl c after its requeued jobs ran: %+v, want 3 done, 0 failed", c)
	}

	// The done counts survive a kill -9 of the coordinator.
	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	_, srvOut = start(t, serveArgs...)
	eventually(t, "serve listening again", 10*time.Second, func() bool { return strings.Contains(srvOut.String(), "drover serving") })
	cs := crawlStatus(t, adminEP)
	if cs["a"].Done != 2 || cs["c"].Done != 3 || cs["c"].Failed != 0 {
		t.Fatalf("crawls after kill -9 and restart: a %+v, c %+v; want 2 and 3 done", cs["a"], cs["c"])
	}
	// c is resumed, but none of its jobs is left to run: it is done.
	if out := act("status"); !regexp.MustCompile(`(?m)^c +done +- +- +0 +0 +0 +3 +0 +`).MatchString(out) {
		t.Fatalf("status:\n%s\nwant crawl c done with 3 done", out)
	}
}

// crawlStatus is status --json's crawls by name.
func crawlStatus(t *testing.T, adminEP string) map[string]admin.Crawl {
	t.Helper()
	out, code := run(t, "", "status", "--json", "--connect", adminEP)
	if code != 0 {
		t.Fatalf("status --json: exit %d, %s", code, out)
	}
	var st struct {
		Crawls []admin.Crawl `json:"crawls"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json printed %q: %v", out, err)
	}
	m := map[string]admin.Crawl{}
	for _, c := range st.Crawls {
		m[c.Name] = c
	}
	return m
}

// TestServeConfigCrawls: a crawls section in the config file defines its
// crawls when serve starts, as submit --scope does: status --json lists
// them; a bad value exits 2 naming its key.
func TestServeConfigCrawls(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "drover.yaml")
	if err := os.WriteFile(cfgFile, []byte("crawls:\n  news: {scope: domain, max_depth: 5, max_pages: 100000, results_max_age: 72h, results_max_bytes: 500MiB}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const ephemeral = "tcp://127.0.0.1:0"
	_, srvOut := start(t, "serve", "--config", cfgFile, "--store", filepath.Join(dir, "store"), "--bind", ephemeral, "--admin", ephemeral,
		"--events", ephemeral, "--metrics", "")
	adminEP := listening(t, srvOut, "admin")["admin"]
	out, code := run(t, "", "status", "--json", "--connect", adminEP)
	if code != 0 {
		t.Fatalf("status --json: exit %d, %s", code, out)
	}
	var st struct {
		Crawls []admin.Crawl `json:"crawls"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json printed %q: %v", out, err)
	}
	if len(st.Crawls) != 1 || st.Crawls[0].Name != "news" || st.Crawls[0].Scope != "domain" || st.Crawls[0].MaxDepth != 5 ||
		st.Crawls[0].MaxPages != 100000 || st.Crawls[0].ResultsMaxAge != 72*3600 || st.Crawls[0].ResultsMaxBytes != 500<<20 {
		t.Fatalf("status --json crawls %+v, want news: domain, depth 5, 100000 pages, results kept 72h and 500MiB", st.Crawls)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("crawls:\n  news: {scope: planet}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = run(t, "", "serve", "--config", bad, "--store", "memory", "--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral, "--metrics", "")
	if code != 2 || !strings.Contains(out, "crawls.news.scope") {
		t.Fatalf("serve with crawls.news.scope: planet: exit %d, %q; want exit 2 naming crawls.news.scope", code, out)
	}
	if err := os.WriteFile(bad, []byte("crawls:\n  news: {results_max_age: soon}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = run(t, "", "serve", "--config", bad, "--store", "memory", "--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral, "--metrics", "")
	if code != 2 || !strings.Contains(out, "crawls.news.results_max_age") {
		t.Fatalf("serve with crawls.news.results_max_age: soon: exit %d, %q; want exit 2 naming the key", code, out)
	}
}
