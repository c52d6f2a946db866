package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"
)

// TestCrawlStartsAsServe: drover crawl starts its coordinator as serve
// does: the store of --state with the sync policy of the config
// (store.sync), the notifier of the config (notifier.url) and, with
// --metrics, the coordinator's metrics beside the crawl's, on a port the OS
// chose and the output names.
func TestCrawlStartsAsServe(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<a href="/a">a</a> <a href="/hold">hold</a>`)
		case "/a":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<title>a</title>`)
		case "/hold": // the crawl lasts until the test is done looking
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<title>held</title>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()

	var mu sync.Mutex
	var kinds []admin.EventKind
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev admin.Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err == nil {
			mu.Lock()
			kinds = append(kinds, ev.Kind)
			mu.Unlock()
		}
	}))
	defer hook.Close()
	t.Setenv("DROVER_NOTIFIER_URL", hook.URL)
	t.Setenv("DROVER_STORE_SYNC", "always")

	state := filepath.Join(t.TempDir(), "state")
	const ephemeral = "tcp://127.0.0.1:0"
	cmd, out := start(t, "crawl", site.URL+"/", "--no-tui", "--workers", "1", "--slots", "2", "--state", state,
		"--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral, "--metrics", "127.0.0.1:0", "--crawl-min-delay", "0s")
	metricsAt := regexp.MustCompile(`metrics listening on (http://\S+)`)
	eventually(t, "the crawl's store and metrics named", 30*time.Second, func() bool {
		return strings.Contains(out.String(), "state in "+state+" (sync always): ") && metricsAt.MatchString(out.String())
	})
	eventually(t, "job.done reports from the notifier", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, k := range kinds {
			if k == admin.EventJobDone {
				n++
			}
		}
		return n >= 2 // the seed and /a; /hold is held
	})
	url := metricsAt.FindStringSubmatch(out.String())[1] + "/metrics"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, out.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"drover_crawl_pages_refused_total", "drover_notifier_sent_total", "drover_reactor_steps_total", "drover_completions_total"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("the crawl's metrics lack %s:\n%s", m, body)
		}
	}
	free()
	if exited, err := waitWithin(cmd, time.Minute); !exited || err != nil {
		t.Fatalf("crawl: exited %v, %v:\n%s", exited, err, out.String())
	}
}
