package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"drover/crawl"
)

// bigSize is the size of the test site's binary, which a crawl without a
// WARC must not read (it is not parsed) and a crawl with one archives.
const bigSize = 10 << 20

// linkSite is a site with every link form drover follows and every one it
// must not, robots.txt with a Crawl-delay, a Disallow and a sitemap index,
// redirects in and out of scope, nofollow pages and a 10 MB binary. It
// counts the requests for each path.
type linkSite struct {
	srv, other *httptest.Server
	mu         sync.Mutex
	hits       map[string]int
	otherHits  atomic.Int64
	bigWritten atomic.Int64
	bigDone    chan struct{}
}

func newLinkSite(t *testing.T) *linkSite {
	s := &linkSite{hits: map[string]int{}, bigDone: make(chan struct{}, 4)}
	s.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.otherHits.Add(1)
		fmt.Fprint(w, "<title>elsewhere</title>")
	}))
	t.Cleanup(s.other.Close)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *linkSite) html(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, body)
}

func (s *linkSite) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	origin := "http://" + r.Host
	switch p := r.URL.Path; p {
	case "/":
		s.html(w, `<html><head><title>Home</title>
<link rel="canonical" href="/"><link rel="stylesheet" href="/style.css"><link rel="next" href="/next.html">
<link rel="icon" href="/favicon.ico"><script src="/app.js"></script>
<style>.hero { background: url(/hero.png) }</style>
</head><body>
<a href="/a.html">a</a> <a href="/a.html#again">a again</a> <a href="./a.html">and again</a>
<map><area href="/area.html" alt="area"></map>
<iframe src="/iframe.html"></iframe>
<a href="/frames.html">frames</a> <a href="/refresh.html">refresh</a> <a href="/based/page.html">base</a>
<a rel="nofollow" href="/nofollowed.html">nofollow</a> <a href="/meta-nofollow.html">meta nofollow</a>
<a href="/private/secret.html">private</a>
<a href="/redir-in">redirect in</a> <a href="/redir-out">redirect out</a> <a href="`+s.other.URL+`/page.html">other host</a>
<a href="/big.bin">big</a> <a href="mailto:x@example.com">mail</a>
<img src="/img.png" srcset="/img-2x.png 2x"><div style="background: url('/div.png')">x</div>
</body></html>`)
	case "/a.html":
		s.html(w, `<title>A</title><a href="/">home</a><a href="/a.html">self</a>`)
	case "/frames.html":
		s.html(w, `<title>Frames</title><frameset><frame src="/frame1.html"></frameset>`)
	case "/refresh.html":
		s.html(w, `<meta http-equiv="refresh" content="0; url=/refreshed.html"><title>Refresh</title>`)
	case "/based/page.html":
		s.html(w, `<base href="/base-target/"><title>Based</title><a href="leaf.html">leaf</a>`)
	case "/meta-nofollow.html":
		s.html(w, `<meta name="robots" content="nofollow"><title>Meta</title><a href="/behind-meta.html">x</a>`)
	case "/redir-in":
		http.Redirect(w, r, "/redirected.html", http.StatusMovedPermanently)
	case "/redir-out":
		http.Redirect(w, r, s.other.URL+"/away.html", http.StatusFound)
	case "/robots.txt":
		fmt.Fprintf(w, "User-agent: *\nCrawl-delay: 0.02\nDisallow: /private/\nSitemap: %s/sitemap-index.xml\n", origin)
	case "/sitemap-index.xml":
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>%s/sitemap-pages.xml.gz</loc></sitemap></sitemapindex>`, origin)
	case "/sitemap-pages.xml.gz":
		zw := gzip.NewWriter(w)
		fmt.Fprintf(zw, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%[1]s/only-in-sitemap.html</loc></url><url><loc>%[1]s/a.html</loc></url></urlset>`, origin)
		zw.Close()
	case "/style.css":
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprint(w, `@import "more.css"; body { background: url(bg.png) }`)
	case "/big.bin":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(bigSize))
		rng := rand.New(rand.NewPCG(1, 2))
		chunk := make([]byte, 64<<10) // random, so that gzip cannot shrink the archive much
		for written := 0; written < bigSize; written += len(chunk) {
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			if written == 0 { // links a parser would find if it read the binary
				copy(chunk, `<html><title>not parsed</title><a href="/from-binary.html">`)
			}
			if _, err := w.Write(chunk); err != nil {
				break
			}
			s.bigWritten.Add(int64(len(chunk)))
		}
		s.bigDone <- struct{}{}
	case "/next.html", "/area.html", "/iframe.html", "/frame1.html", "/refreshed.html", "/base-target/leaf.html",
		"/redirected.html", "/only-in-sitemap.html", "/nofollowed.html", "/behind-meta.html":
		s.html(w, "<title>"+p+"</title>")
	case "/favicon.ico", "/app.js", "/hero.png", "/img.png", "/img-2x.png", "/div.png", "/bg.png", "/more.css":
		fmt.Fprint(w, "requisite "+p)
	default:
		http.NotFound(w, r)
	}
}

// pagesOf are the site's pages a crawl fetches by navigation alone; with
// requisites it adds requisites.
var (
	sitePages = []string{"/", "/a.html", "/area.html", "/iframe.html", "/frames.html", "/frame1.html", "/refresh.html",
		"/refreshed.html", "/based/page.html", "/base-target/leaf.html", "/meta-nofollow.html", "/redir-in",
		"/redirected.html", "/redir-out", "/big.bin", "/next.html", "/only-in-sitemap.html"}
	siteRequisites = []string{"/style.css", "/more.css", "/bg.png", "/favicon.ico", "/app.js", "/hero.png",
		"/img.png", "/img-2x.png", "/div.png"}
)

// readRecords reads a JSONL results file.
func readRecords(t *testing.T, path string) []crawl.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []crawl.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r crawl.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		recs = append(recs, r)
	}
	return recs
}

// crawlSite runs drover crawl on the site and checks what it fetched:
// every page (and, with requisites, every requisite) once, the private
// page as disallowed, nothing else, nothing from the other host.
func crawlSite(t *testing.T, s *linkSite, extra ...string) []crawl.Record {
	t.Helper()
	out := filepath.Join(t.TempDir(), "pages.jsonl")
	args := append(append([]string{"crawl", s.srv.URL + "/", "--no-tui", "--out", out, "--workers", "2", "--metrics", ""}, anyPorts...), extra...)
	text, code := run(t, "", args...)
	if code != 0 {
		t.Fatalf("drover crawl: exit %d:\n%s", code, text)
	}
	recs := readRecords(t, out)
	requisites := slices.Contains(extra, "--requisites")
	want := slices.Clone(sitePages)
	if requisites {
		want = append(want, siteRequisites...)
	}
	var got []string
	for _, r := range recs {
		p := strings.TrimPrefix(r.URL, s.srv.URL)
		switch {
		case p == "/private/secret.html":
			if !r.Disallowed {
				t.Errorf("%s: not disallowed by robots.txt", p)
			}
		default:
			got = append(got, p)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("fetched\n%q\nwant\n%q", got, want)
	}
	s.mu.Lock()
	for _, p := range want {
		if s.hits[p] != 1 {
			t.Errorf("%s requested %d times, want once", p, s.hits[p])
		}
	}
	for _, p := range []string{"/nofollowed.html", "/behind-meta.html", "/private/secret.html", "/from-binary.html"} {
		if s.hits[p] != 0 {
			t.Errorf("%s requested %d times, want never", p, s.hits[p])
		}
	}
	s.hits = map[string]int{}
	s.mu.Unlock()
	if n := s.otherHits.Load(); n != 0 {
		t.Errorf("the out-of-scope host got %d requests", n)
	}
	byPath := map[string]crawl.Record{}
	for _, r := range recs {
		byPath[strings.TrimPrefix(r.URL, s.srv.URL)] = r
	}
	if r := byPath["/"]; r.Canonical != s.srv.URL+"/" || r.Title != "Home" {
		t.Errorf("home record: canonical %q, title %q", r.Canonical, r.Title)
	}
	if r := byPath["/a.html"]; r.Parent != s.srv.URL+"/" || r.Depth != 1 {
		t.Errorf("/a.html record: parent %q, depth %d; want the home page, 1", r.Parent, r.Depth)
	}
	if r := byPath["/redir-in"]; r.Status != 301 || r.FinalURL != s.srv.URL+"/redirected.html" {
		t.Errorf("redirect record: status %d, final URL %q", r.Status, r.FinalURL)
	}
	if r := byPath["/redir-out"]; r.Status != 302 || r.FinalURL != s.other.URL+"/away.html" {
		t.Errorf("out-of-scope redirect record: status %d, final URL %q", r.Status, r.FinalURL)
	}
	if r := byPath["/meta-nofollow.html"]; !r.NoFollow || r.LinksOut != 0 {
		t.Errorf("meta nofollow record: nofollow %v, links %d", r.NoFollow, r.LinksOut)
	}
	if r := byPath["/big.bin"]; r.Bytes != bigSize || r.LinksOut != 0 || r.Title != "" {
		t.Errorf("binary record: %d bytes, %d links, title %q; want %d bytes, not parsed", r.Bytes, r.LinksOut, r.Title, bigSize)
	}
	return recs
}

// waitBig waits for the binary's handler to end and returns what it wrote.
func (s *linkSite) waitBig(t *testing.T) int64 {
	t.Helper()
	select {
	case <-s.bigDone:
	case <-time.After(time.Minute):
		t.Fatal("the binary's handler did not end")
	}
	return s.bigWritten.Swap(0)
}

// TestCrawlLinkForms crawls the site with the defaults: every navigational
// link form followed, nofollow and robots.txt honoured, the sitemap read,
// requisites left alone, and the 10 MB binary not read past its start.
func TestCrawlLinkForms(t *testing.T) {
	s := newLinkSite(t)
	crawlSite(t, s)
	if n := s.waitBig(t); n >= bigSize {
		t.Errorf("the binary's handler wrote all %d bytes: the crawl read a body nothing needs", n)
	}
}

// TestCrawlRequisitesWARC crawls the site with requisites and a WARC, and
// checks the archive with the warcio package: every record parses and
// every response's payload digest matches; the binary is archived whole.
func TestCrawlRequisitesWARC(t *testing.T) {
	s := newLinkSite(t)
	dir := t.TempDir()
	recs := crawlSite(t, s, "--requisites", "--warc", filepath.Join(dir, "site.warc.gz"), "--warc-max-size", "1KiB")
	if n := s.waitBig(t); n != bigSize {
		t.Errorf("the binary's handler wrote %d bytes, want all %d for the archive", n, bigSize)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) < 2 || filepath.Base(files[0]) != "site-00001.warc.gz" {
		t.Fatalf("WARC files %q: want site-00001.warc.gz and more (rotated at 1KiB: a file per fetch)", files)
	}
	lines := warcioVerify(t, files)
	responses := map[string]int{}
	for _, l := range lines {
		if l.Type == "response" {
			responses[strings.TrimPrefix(l.URI, s.srv.URL)]++
			if l.URI == s.srv.URL+"/big.bin" && l.Bytes != bigSize {
				t.Errorf("binary archived with %d payload bytes, want %d", l.Bytes, bigSize)
			}
		}
	}
	var fetched []string
	for _, r := range recs {
		if !r.Disallowed {
			fetched = append(fetched, strings.TrimPrefix(r.URL, s.srv.URL))
		}
	}
	slices.Sort(fetched)
	if got := slices.Sorted(maps.Keys(responses)); !slices.Equal(got, fetched) {
		t.Errorf("response records for\n%q\nwant one per fetched page\n%q", got, fetched)
	}
	for u, n := range responses {
		if n != 1 {
			t.Errorf("%s archived %d times", u, n)
		}
	}
}

// warcioLine is one line of crawl/testdata/warcverify.cjs.
type warcioLine struct {
	File, Type, URI string
	Status          int
	Bytes           int
	DigestOK        bool `json:"digest_ok"`
}

// warcioVerify checks WARC files with the warcio npm package (installed
// with npm into the user's cache directory on first use): warcio index
// must list every record, and warcverify.cjs (warcio's parser) must find
// every response's payload digest right.
func warcioVerify(t *testing.T, files []string) []warcioLine {
	t.Helper()
	dir := warcioDir(t)
	index := exec.Command("node", append([]string{filepath.Join(dir, "node_modules", "warcio", "dist", "cli.js"), "index"}, files...)...)
	idx, err := index.CombinedOutput()
	if err != nil {
		t.Fatalf("warcio index: %v\n%s", err, idx)
	}
	verify := exec.Command("node", filepath.Join("..", "crawl", "testdata", "warcverify.cjs"))
	verify.Args = append(verify.Args, files...)
	verify.Env = append(os.Environ(), "WARCIO_DIR="+dir)
	var stderr bytes.Buffer
	verify.Stderr = &stderr
	out, err := verify.Output()
	if err != nil {
		t.Fatalf("warcverify.cjs: %v\n%s", err, stderr.String())
	}
	var lines []warcioLine
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var w warcioLine
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("warcverify.cjs line %q: %v", l, err)
		}
		if w.Type == "response" && !w.DigestOK {
			t.Errorf("%s: %s: payload digest does not match", w.File, w.URI)
		}
		lines = append(lines, w)
	}
	if n := strings.Count(strings.TrimSpace(string(idx)), "\n") + 1; n != len(lines) {
		t.Errorf("warcio index lists %d records, the parser read %d", n, len(lines))
	}
	return lines
}

// warcioVersion is the warcio npm package the tests check archives with.
const warcioVersion = "2.4.11"

// warcioDir returns a directory with warcio installed, installing it with
// npm on first use. A machine without node and npm fails the test:
// scripts/deps.sh test installs them.
func warcioDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the WARC check needs node and npm (scripts/deps.sh test installs them)", tool)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "drover-test", "warcio-"+warcioVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "warcio", "dist", "cli.js")); err == nil {
		return dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "warcio@"+warcioVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install warcio@%s: %v\n%s", warcioVersion, err, out)
	}
	return dir
}

// TestWorkerWARC runs a serve and a crawl worker with --warc DIR: the
// worker writes its fetches to files named after its id, closed when it
// stops, which warcio reads.
func TestWorkerWARC(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<title>seed</title><a href="/one">1</a><iframe src="/two"></iframe>`)
		case "/one", "/two":
			fmt.Fprint(w, "<title>"+r.URL.Path+"</title>")
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	const ephemeral = "tcp://127.0.0.1:0"
	_, srvOut := start(t, "serve", "--store", "memory", "--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral,
		"--metrics", "", "--heartbeat-interval", "1s")
	at := listening(t, srvOut, "peers", "admin", "events")
	dir := t.TempDir()
	worker, workerOut := start(t, "worker", "--connect", at["peers"], "--id", "w/arc 1", "--warc", dir, "--heartbeat-interval", "1s")
	if out, code := run(t, "", "submit", site.URL+"/", "--connect", at["peers"]); code != 0 {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	eventually(t, "the site crawled", 30*time.Second, func() bool {
		tot, _, ok := statusJSON(t, at["admin"])
		return ok && tot.Done == 3
	})
	worker.Process.Signal(syscall.SIGTERM)
	if err := worker.Wait(); err != nil {
		t.Fatalf("worker: %v\n%s", err, workerOut.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || filepath.Base(files[0]) != "drover-w_arc_1-00001.warc.gz" {
		t.Fatalf("worker WARC files %q, want drover-w_arc_1-00001.warc.gz (its id, made safe)", files)
	}
	var got []string
	for _, l := range warcioVerify(t, files) {
		if l.Type == "response" {
			got = append(got, strings.TrimPrefix(l.URI, site.URL))
		}
	}
	slices.Sort(got)
	if want := []string{"/", "/one", "/two"}; !slices.Equal(got, want) {
		t.Errorf("archived %q, want %q", got, want)
	}
}
