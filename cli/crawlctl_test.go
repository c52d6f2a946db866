package cli

import (
	"strings"
	"testing"
	"time"
)

// TestCrawlControl: pause, resume, cancel and requeue --failed act on one
// crawl while another runs, through real processes.
func TestCrawlControl(t *testing.T) {
	eps := freeEndpoints(t, 3)
	peers, adminEP, events := eps[0], eps[1], eps[2]
	_, srvOut := start(t, "serve", "--store", t.TempDir(), "--bind", peers, "--admin", adminEP, "--events", events, "--metrics", "", "--heartbeat-interval", "200ms")
	eventually(t, "serve listening", 10*time.Second, func() bool { return strings.Contains(srvOut.String(), "drover serving") })
	start(t, "worker", "--connect", peers, "--slots", "2", "--heartbeat-interval", "200ms", "--exec", `echo "ran $DROVER_URL"`)
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

	act("pause", "--crawler", "c")
	submit("c", "http://c.test/1", "http://c.test/2", "http://c.test/3")
	if out := act("cancel", "--crawler", "c", "--yes"); !strings.Contains(out, "3 jobs failed as cancelled") {
		t.Fatalf("cancel: %q, want 3 jobs cancelled", out)
	}
	eventually(t, "cancelled results", 30*time.Second, func() bool {
		o := outcomes("c")
		return len(o) == 3 && o["http://c.test/1"] == "cancelled"
	})
	act("resume", "--crawler", "c")
	if out := act("requeue", "--failed", "--crawler", "c", "--yes"); !strings.Contains(out, "requeued 3 jobs") {
		t.Fatalf("requeue --failed --crawler c: %q", out)
	}
	eventually(t, "c runs after requeue", 30*time.Second, func() bool {
		o := outcomes("c")
		return o["http://c.test/1"] == "ok" && o["http://c.test/2"] == "ok" && o["http://c.test/3"] == "ok"
	})
}
