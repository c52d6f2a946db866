package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCrawlExposure: drover crawl's listeners are held to serve's exposure
// rule. A --bind beyond loopback is refused (exit 2, naming --bind and
// --insecure) even with security.key set, since crawl takes no keys;
// --insecure lets the crawl run.
func TestCrawlExposure(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>one page</body></html>"))
	}))
	t.Cleanup(site.Close)
	args := []string{"crawl", site.URL + "/", "--no-tui", "--workers", "1", "--max-pages", "1",
		"--bind", "tcp://0.0.0.0:0", "--admin", "tcp://127.0.0.1:0", "--events", "tcp://127.0.0.1:0", "--metrics", ""}

	out, code := runWithin(t, time.Minute, args...)
	if code != 2 || !strings.Contains(out, "--bind tcp://0.0.0.0:0") || !strings.Contains(out, "--insecure") {
		t.Fatalf("crawl --bind 0.0.0.0 without --insecure: exit %d, %q: want 2 naming --bind and --insecure", code, out)
	}
	out, code = runEnv(t, []string{"DROVER_SECURITY_KEY=/nonexistent.key"}, "", args...)
	if code != 2 || !strings.Contains(out, "takes no keys") {
		t.Fatalf("crawl --bind 0.0.0.0 with security.key set: exit %d, %q: want 2 saying crawl takes no keys", code, out)
	}
	out, code = runWithin(t, time.Minute, append(args, "--insecure")...)
	if code != 0 || !strings.Contains(out, "1 page") {
		t.Fatalf("crawl --bind 0.0.0.0 --insecure: exit %d, %q: want the crawl to run", code, out)
	}
}
