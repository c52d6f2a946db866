package cli

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover/crawl"
	"drover/crawl/demosite"
)

// TestCrawlResumesFromState kills a crawl with SIGKILL in the middle and
// runs the same command again with the same --state: it resumes, and the
// two runs' results together cover exactly the site's expected pages, with
// at most the pages in flight at the kill fetched twice.
func TestCrawlResumesFromState(t *testing.T) {
	for _, tc := range []struct{ name, doneCache string }{
		{"default done cache", ""},
		// Five done pages in memory: the resumed crawl answers for the
		// others from the store (store.done_cache).
		{"done cache of 5", "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.doneCache != "" {
				t.Setenv("DROVER_STORE_DONE_CACHE", tc.doneCache)
			}
			crawlResumesFromState(t)
		})
	}
}

func crawlResumesFromState(t *testing.T) {
	site := demosite.New(demosite.Options{SlowDelay: 50 * time.Millisecond})
	hs := httptest.NewServer(site)
	defer hs.Close()
	want, err := site.Expect(hs.URL, 10)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "pages.jsonl")
	warcDir := filepath.Join(dir, "warc")
	args := func() []string {
		return append([]string{"crawl", hs.URL + "/", "--no-tui", "--workers", "2", "--slots", "1", "--state", state, "--out", out,
			"--metrics", "", "--crawl-min-delay", "20ms", "--warc", filepath.Join(warcDir, "site.warc.gz")}, anyPorts...)
	}

	first, firstOut := start(t, args()...)
	eventually(t, "part of the site crawled", 30*time.Second, func() bool { return countLines(t, out) > len(want.Pages)/4 })
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	before := countLines(t, out)
	if before >= len(want.Pages) {
		t.Fatalf("the first run finished (%d records) before the kill:\n%s", before, firstOut.String())
	}

	text, code := run(t, "", args()...)
	if code != 0 || !strings.Contains(text, "state in "+state+" (sync batch): keys: ") {
		t.Fatalf("resumed crawl: exit %d:\n%s", code, text)
	}
	got := map[string]int{}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r crawl.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results line %q: %v", sc.Text(), err)
		}
		got[r.URL]++
	}
	twice := 0
	for u := range want.Pages {
		switch n := got[u]; {
		case n == 0:
			t.Errorf("missing after resuming: %s", u)
		case n > 1:
			twice++
		}
	}
	for u := range got {
		if _, ok := want.Pages[u]; !ok {
			t.Errorf("unexpected page: %s", u)
		}
	}
	// Only jobs in flight at the kill (2 workers x 1 slot), or finished in
	// the last unsynced batch, may run again.
	if twice > 8 {
		t.Errorf("%d pages fetched twice across the kill, want only those in flight", twice)
	}
	t.Logf("%d records before the kill, %d pages fetched twice", before, twice)

	// The archive: the first run's file, left open by the kill, was cut
	// after its last whole record and closed; the resumed run added a
	// file; warcio reads them all; pages done before the kill were not
	// archived again.
	files, _ := filepath.Glob(filepath.Join(warcDir, "*"))
	if len(files) != 2 || filepath.Base(files[0]) != "site-00001.warc.gz" || filepath.Base(files[1]) != "site-00002.warc.gz" {
		t.Fatalf("WARC files %q, want site-00001.warc.gz (repaired) and site-00002.warc.gz", files)
	}
	archived := map[string]int{}
	for _, l := range warcioVerify(t, files) {
		if l.Type == "response" {
			archived[l.URI]++
		}
	}
	archivedTwice := 0
	for u, n := range archived {
		if n > 1 {
			archivedTwice++
		}
		if _, ok := want.Pages[u]; !ok {
			t.Errorf("archived a page not in the site: %s", u)
		}
	}
	if archivedTwice > 8 {
		t.Errorf("%d pages archived twice across the kill, want only those in flight", archivedTwice)
	}
	for u, f := range want.Pages {
		if f.Outcome == demosite.Fetched && archived[u] == 0 {
			t.Errorf("fetched but not archived: %s", u)
		}
	}
	t.Logf("%d pages archived, %d twice", len(archived), archivedTwice)
}

func countLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}
