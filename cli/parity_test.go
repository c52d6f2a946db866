package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// parityDocs is a multi-page HTML tree nobody on the team wrote: the GNU
// diffutils manual (texinfo's HTML), from Debian's diffutils-doc package
// (scripts/deps.sh test installs it).
const parityDocs = "/usr/share/doc/diffutils"

// TestCrawlParityWithWget serves the diffutils manual under /doc/diffutils/
// with Go's http.FileServer and crawls it with `wget -r -np --spider` and
// with `drover crawl --scope prefix`: drover must fetch every HTML page
// wget fetched, nothing outside /doc/diffutils/ (robots.txt and the
// sitemap look-up aside), and each page once.
func TestCrawlParityWithWget(t *testing.T) {
	drover(t) // built first, so that the crawl's run does not count the build
	if _, err := os.Stat(filepath.Join(parityDocs, "index.html")); err != nil {
		t.Fatalf("the parity test crawls %s (package diffutils-doc; scripts/deps.sh test installs it): %v", parityDocs, err)
	}
	wget, err := exec.LookPath("wget")
	if err != nil {
		t.Fatal("the parity test needs wget (scripts/deps.sh test installs it)")
	}
	type hit struct{ agent, path string }
	var (
		mu   sync.Mutex
		hits []hit
	)
	files := http.StripPrefix("/doc/diffutils/", http.FileServer(http.Dir(parityDocs)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent := "other"
		switch ua := r.UserAgent(); {
		case strings.HasPrefix(ua, "Wget/"):
			agent = "wget"
		case strings.HasPrefix(ua, "drover/"):
			agent = "drover"
		}
		mu.Lock()
		hits = append(hits, hit{agent, r.URL.Path})
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/doc/diffutils/") {
			files.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	seed := srv.URL + "/doc/diffutils/index.html"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := dieWithTest(exec.CommandContext(ctx, wget, "-r", "-np", "--spider", "-nv", "-o", filepath.Join(dir, "wget.log"), "-P", dir, seed))
	if err := cmd.Run(); err != nil {
		// exit 8: some link answered an error (a broken link in the
		// manual); what wget fetched is still the comparison.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 8 {
			log, _ := os.ReadFile(filepath.Join(dir, "wget.log"))
			t.Fatalf("wget: %v\n%s", err, log)
		}
	}

	out := filepath.Join(dir, "pages.jsonl")
	text, code := run(t, "", append([]string{"crawl", seed, "--scope", "prefix", "--no-tui", "--out", out, "--workers", "2", "--metrics", ""}, anyPorts...)...)
	if code != 0 {
		t.Fatalf("drover crawl: exit %d:\n%s", code, text)
	}

	mu.Lock()
	defer mu.Unlock()
	wgetPages := map[string]bool{}
	droverHits := map[string]int{}
	for _, h := range hits {
		switch h.agent {
		case "wget":
			if strings.HasSuffix(h.path, ".html") {
				if _, err := os.Stat(filepath.Join(parityDocs, strings.TrimPrefix(h.path, "/doc/diffutils/"))); err == nil {
					wgetPages[h.path] = true
				}
			}
		case "drover":
			droverHits[h.path]++
		default:
			t.Errorf("a request from neither crawler: %s", h.path)
		}
	}
	if len(wgetPages) < 20 {
		t.Fatalf("wget found %d HTML pages of the manual; want 20 or more (is %s whole?)", len(wgetPages), parityDocs)
	}
	var missing []string
	for p := range wgetPages {
		if droverHits[p] == 0 {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("drover missed %d of the %d pages wget found: %q", len(missing), len(wgetPages), missing)
	}
	for p, n := range droverHits {
		switch {
		case p == "/robots.txt" || p == "/sitemap.xml":
		case !strings.HasPrefix(p, "/doc/diffutils/"):
			t.Errorf("drover fetched %s, outside the prefix scope /doc/diffutils/", p)
		case n != 1:
			t.Errorf("drover fetched %s %d times, want once", p, n)
		}
	}
	recs := readRecords(t, out)
	if len(recs) != len(droverHits)-2 {
		t.Errorf("%d records for %d pages requested (robots.txt and sitemap.xml aside)", len(recs), len(droverHits)-2)
	}
	var extra []string
	for p := range droverHits {
		if !wgetPages[p] && p != "/robots.txt" && p != "/sitemap.xml" {
			extra = append(extra, p)
		}
	}
	slices.Sort(extra)
	t.Logf("wget found %d HTML pages, drover fetched %d URLs (%d records); beyond wget's: %q", len(wgetPages), len(droverHits)-2, len(recs), extra)
}
