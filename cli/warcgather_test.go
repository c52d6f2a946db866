package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFleetWARCGather: three crawl worker processes with --warc DIRs of
// their own crawl the 60-page site; drover warc gather reads the crawl's
// results from the coordinator and copies each page's records from the
// three workers' shards into one WARC file, which warcio reads whole
// (every response's payload digest right), each page once; its CDX index
// points at each response record.
func TestFleetWARCGather(t *testing.T) {
	st := newSite(t)
	const ephemeral = "tcp://127.0.0.1:0"
	_, srvOut := start(t, "serve", "--store", "memory", "--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral,
		"--metrics", "", "--heartbeat-interval", "1s")
	at := listening(t, srvOut, "peers", "admin", "events")
	var dirs []string
	for i := range 3 {
		dirs = append(dirs, filepath.Join(t.TempDir(), fmt.Sprintf("shards-%d", i)))
	}
	for i, d := range dirs {
		w, wOut := start(t, "worker", "--connect", at["peers"], "--slots", "4", "--id", fmt.Sprintf("arc-%d", i), "--warc", d,
			"--heartbeat-interval", "1s")
		t.Cleanup(func() { // SIGTERM closes the shards; the kill at cleanup would leave them open
			w.Process.Signal(syscall.SIGTERM)
			if err := w.Wait(); err != nil && w.ProcessState == nil {
				t.Errorf("worker %d: %v\n%s", i, err, wOut.String())
			}
		})
	}
	if out, code := run(t, "", "submit", "--connect", at["peers"], "--admin", at["admin"], "--crawler", "arc", "--scope", "prefix",
		st.srv.URL+"/p/0"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	eventually(t, "the crawl done", 90*time.Second, func() bool { return crawlStatus(t, at["admin"])["arc"].Done == 60 })

	out := filepath.Join(t.TempDir(), "arc.warc.gz")
	msg, code := run(t, "", append([]string{"warc", "gather", "--connect", at["admin"], "--crawler", "arc", "--out", out}, dirs...)...)
	if code != 0 || !strings.Contains(msg, "gathered 60 pages from ") {
		t.Fatalf("warc gather: exit %d, %s; want 60 pages gathered", code, msg)
	}
	var got []string
	kinds := map[string]int{}
	for _, l := range warcioVerify(t, []string{out}) {
		kinds[l.Type]++
		if l.Type == "response" {
			got = append(got, strings.TrimPrefix(l.URI, st.srv.URL))
		}
	}
	want := make([]string, 60)
	for i := range want {
		want[i] = fmt.Sprintf("/p/%d", i)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || kinds["warcinfo"] != 1 || kinds["request"] != 60 {
		t.Fatalf("gathered records %v, responses of %v; want a warcinfo, then a request and a response of each of %v", kinds, got, want)
	}

	// The gathered index points at each response record.
	cdx, err := os.ReadFile(strings.TrimSuffix(out, ".warc.gz") + ".cdx")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := strings.Split(strings.TrimSuffix(string(cdx), "\n"), "\n")
	if len(lines) != 61 || lines[0] != " CDX N b a m s k r M S V g" {
		t.Fatalf("index of %d lines, first %q; want the CDX header and 60 lines", len(lines), lines[0])
	}
	for _, l := range lines[1:] {
		var key, ts, u, mime, status, digest, r, m, length, file string
		var off int64
		if n, err := fmt.Sscan(l, &key, &ts, &u, &mime, &status, &digest, &r, &m, &length, &off, &file); n != 11 || err != nil {
			t.Fatalf("index line %q: %v", l, err)
		}
		n, head, err := gzipMember(f, off)
		if err != nil || fmt.Sprint(n) != length || warcHeader(head, "WARC-Target-URI") != u || warcHeader(head, "WARC-Type") != "response" ||
			file != filepath.Base(out) || mime != "text/html" || status != "200" || len(digest) != 32 {
			t.Fatalf("index line %q: the record at %d is %d bytes of %q (%v)", l, off, n, head, err)
		}
	}

	// The coordinator's index names the shards.
	idx, code := run(t, "", "warc", "index", "--connect", at["admin"], "--crawler", "arc")
	if n := strings.Count(idx, "drover-arc-"); code != 0 || n != 60 {
		t.Fatalf("warc index: exit %d, %d lines naming a shard, want 60:\n%s", code, n, idx)
	}
}

// TestSURT: the CDX keys of the index lines.
func TestSURT(t *testing.T) {
	for in, want := range map[string]string{
		"http://www.Example.com/a/b?q=1": "com,example)/a/b?q=1",
		"https://news.example.org:8443/": "org,example,news:8443)/",
		"http://127.0.0.1:18960/p/0":     "127.0.0.1:18960)/p/0",
		"http://[::1]/x":                 "::1)/x",
	} {
		if got := surt(in); got != want {
			t.Errorf("surt(%q) = %q, want %q", in, got, want)
		}
	}
}
