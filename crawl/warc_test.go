package crawl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// WARCRecord is one record as readWARCFile reads it.
type WARCRecord struct {
	Header textproto.MIMEHeader
	Block  []byte
}

// readWARCFile reads a .warc.gz file without the library that wrote it:
// member by member (each record must be a gzip member of its own), each
// member "WARC/1.1", header fields, a blank line, Content-Length bytes of
// block and CRLF CRLF.
func readWARCFile(t testing.TB, path string) []WARCRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var recs []WARCRecord
	for {
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: gzip member %d: %v", path, len(recs), err)
		}
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(member)))
		version, err := tp.ReadLine()
		if err != nil || version != "WARC/1.1" {
			t.Fatalf("%s: record %d starts %q (%v), want WARC/1.1", path, len(recs), version, err)
		}
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("%s: record %d header: %v", path, len(recs), err)
		}
		n, err := strconv.Atoi(h.Get("Content-Length"))
		if err != nil {
			t.Fatalf("%s: record %d Content-Length %q", path, len(recs), h.Get("Content-Length"))
		}
		rest, _ := io.ReadAll(tp.R)
		if len(rest) != n+4 || string(rest[n:]) != "\r\n\r\n" {
			t.Fatalf("%s: record %d: %d bytes after the header, want Content-Length %d and CRLF CRLF (one record per gzip member)", path, len(recs), len(rest), n)
		}
		recs = append(recs, WARCRecord{Header: h, Block: rest[:n]})
		if err := zr.Reset(br); err == io.EOF {
			return recs
		} else if err != nil {
			t.Fatalf("%s: after record %d: %v", path, len(recs), err)
		}
	}
}

func sha1Base32(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// checkWARCDigests checks every record's block digest and every response
// record's payload digest against the bytes, and returns the payloads of
// the response records by target URI.
func checkWARCDigests(t testing.TB, recs []WARCRecord) map[string][]byte {
	t.Helper()
	payloads := map[string][]byte{}
	for i, r := range recs {
		if got, want := r.Header.Get("WARC-Block-Digest"), sha1Base32(r.Block); got != want {
			t.Errorf("record %d (%s): WARC-Block-Digest %s, computed %s", i, r.Header.Get("WARC-Type"), got, want)
		}
		if r.Header.Get("WARC-Type") != "response" {
			continue
		}
		head, payload, ok := bytes.Cut(r.Block, []byte("\r\n\r\n"))
		if !ok || !bytes.HasPrefix(head, []byte("HTTP/1.1 ")) {
			t.Errorf("record %d: response block starts %.40q, want an HTTP/1.1 message", i, r.Block)
			continue
		}
		if got, want := r.Header.Get("WARC-Payload-Digest"), sha1Base32(payload); got != want {
			t.Errorf("record %d (%s): WARC-Payload-Digest %s, computed %s", i, r.Header.Get("WARC-Target-URI"), got, want)
		}
		payloads[r.Header.Get("WARC-Target-URI")] = payload
	}
	return payloads
}

func TestWARCRecordsOfFetches(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<title>P</title><a href="/gz.html">gz</a>`)
	})
	mux.HandleFunc("/gz.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			fmt.Fprint(w, "asked for no gzip")
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprint(zw, `<title>Zipped</title><a href="/page.html">back</a>`)
		zw.Close()
	})
	mux.HandleFunc("/chunked.bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		for i := range 100 {
			fmt.Fprintf(w, "chunk %d\n", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/page.html", http.StatusFound) })
	srv := newServer(t, mux)

	dir := t.TempDir()
	ww, err := OpenWARC(WARCOptions{Path: filepath.Join(dir, "site.warc.gz"), Software: "drover/test",
		Info: map[string]string{"robots": "obey"}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t, testConfig(), WithWARC(ww))
	for _, p := range []string{"/page.html", "/gz.html", "/chunked.bin", "/busy", "/moved", "/missing"} {
		page := f.Fetch(context.Background(), srv.URL+p)
		if p == "/gz.html" && (page.Title != "Zipped" || len(page.Links) != 1) {
			t.Errorf("gzip page parsed as %q with links %q, want its title and link", page.Title, page.Links)
		}
	}
	if err := ww.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if want := []string{filepath.Join(dir, "site-00001.warc.gz")}; !slices.Equal(files, want) {
		t.Fatalf("files %q, want %q", files, want)
	}
	recs := readWARCFile(t, files[0])
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Header.Get("WARC-Type")+" "+strings.TrimPrefix(r.Header.Get("WARC-Target-URI"), srv.URL))
	}
	want := []string{"warcinfo ", "request /page.html", "response /page.html", "request /gz.html", "response /gz.html",
		"request /chunked.bin", "response /chunked.bin", "request /moved", "response /moved", "request /missing", "response /missing"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("records\n%q\nwant (no 503: it is retried)\n%q", kinds, want)
	}
	info := string(recs[0].Block)
	for _, w := range []string{"software: drover/test\r\n", "format: WARC File Format 1.1\r\n", "robots: obey\r\n"} {
		if !strings.Contains(info, w) {
			t.Errorf("warcinfo lacks %q:\n%s", w, info)
		}
	}
	if recs[0].Header.Get("WARC-Filename") != "site-00001.warc.gz" {
		t.Errorf("warcinfo WARC-Filename %q", recs[0].Header.Get("WARC-Filename"))
	}
	for i := 1; i < len(recs); i += 2 {
		req, resp := recs[i], recs[i+1]
		if req.Header.Get("WARC-Concurrent-To") != resp.Header.Get("WARC-Record-ID") ||
			resp.Header.Get("WARC-Concurrent-To") != req.Header.Get("WARC-Record-ID") {
			t.Errorf("records %d and %d not linked by WARC-Concurrent-To", i, i+1)
		}
		for _, r := range []WARCRecord{req, resp} {
			if r.Header.Get("WARC-IP-Address") != "127.0.0.1" || r.Header.Get("WARC-Date") == "" ||
				r.Header.Get("WARC-Warcinfo-ID") != recs[0].Header.Get("WARC-Record-ID") {
				t.Errorf("record %s %s: IP %q, date %q, warcinfo %q", r.Header.Get("WARC-Type"), r.Header.Get("WARC-Target-URI"),
					r.Header.Get("WARC-IP-Address"), r.Header.Get("WARC-Date"), r.Header.Get("WARC-Warcinfo-ID"))
			}
		}
		if !bytes.HasPrefix(req.Block, []byte("GET /")) || !bytes.Contains(req.Block, []byte("\r\nAccept-Encoding: gzip\r\n")) ||
			!bytes.Contains(req.Block, []byte("\r\nUser-Agent: drover/test")) {
			t.Errorf("request record %d: %q", i, req.Block)
		}
	}
	payloads := checkWARCDigests(t, recs)
	if p := payloads[srv.URL+"/gz.html"]; len(p) < 2 || p[0] != 0x1f || p[1] != 0x8b {
		t.Errorf("gzip body archived as %.20q, want the gzip bytes as sent", p)
	}
	if p := payloads[srv.URL+"/chunked.bin"]; !bytes.HasPrefix(p, []byte("chunk 0\nchunk 1\n")) || !bytes.HasSuffix(p, []byte("chunk 99\n")) {
		t.Errorf("chunked body archived as %.40q..., want it de-chunked", p)
	}
	for _, r := range recs {
		if bytes.Contains(r.Block, []byte("Transfer-Encoding")) {
			t.Errorf("%s keeps a Transfer-Encoding header for a de-chunked body", r.Header.Get("WARC-Target-URI"))
		}
	}
}

// Files rotate past the maximum size and a new writer on the same name
// numbers on after the files already there.
func TestWARCRotationAndResume(t *testing.T) {
	body := strings.Repeat("x", 20<<10)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, r.URL.Path, body)
	}))
	dir := t.TempDir()
	write := func(paths ...string) {
		ww, err := OpenWARC(WARCOptions{Path: filepath.Join(dir, "c.warc.gz"), MaxSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		f := newFetcher(t, testConfig(), WithWARC(ww))
		for _, p := range paths {
			if page := f.Fetch(context.Background(), srv.URL+p); page.Outcome != OK {
				t.Fatal(page)
			}
		}
		if err := ww.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("/a", "/b")
	write("/c")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{"c-00001.warc.gz", "c-00002.warc.gz", "c-00003.warc.gz"}
	for i := range want {
		want[i] = filepath.Join(dir, want[i])
	}
	if !slices.Equal(files, want) {
		t.Fatalf("files %q, want %q", files, want)
	}
	for i, path := range files {
		recs := readWARCFile(t, path)
		if len(recs) != 3 || recs[0].Header.Get("WARC-Type") != "warcinfo" {
			t.Fatalf("%s: %d records, want warcinfo, request, response", path, len(recs))
		}
		if got := recs[2].Header.Get("WARC-Target-URI"); got != srv.URL+"/"+string(rune('a'+i)) {
			t.Errorf("%s holds %s", path, got)
		}
		checkWARCDigests(t, recs)
	}
}

func TestOpenWARCRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"", "crawl.warc", "dir/", ".warc.gz", "x.gz"} {
		if _, err := OpenWARC(WARCOptions{Path: filepath.Join(t.TempDir(), p)}); err == nil || !strings.Contains(err.Error(), ".warc.gz") {
			t.Errorf("OpenWARC(%q): %v, want an error asking for .warc.gz", p, err)
		}
	}
}

// A file a killed writer left open is cut after its last whole record
// and closed; the next writer numbers on after it.
func TestWARCRepairsOpenFile(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.URL.Path)
	}))
	dir := t.TempDir()
	path := filepath.Join(dir, "k.warc.gz")
	ww, err := OpenWARC(WARCOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t, testConfig(), WithWARC(ww))
	f.Fetch(context.Background(), srv.URL+"/a")
	f.Fetch(context.Background(), srv.URL+"/b")
	if err := ww.Close(); err != nil {
		t.Fatal(err)
	}
	// What a kill in the middle of the next record leaves.
	whole, err := os.ReadFile(filepath.Join(dir, "k-00001.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var extra bytes.Buffer
	zw := gzip.NewWriter(&extra)
	zw.Write([]byte("WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 1000\r\n\r\nsome of it"))
	zw.Close()
	cut := append(slices.Clone(whole), extra.Bytes()[:extra.Len()/2]...)
	if err := os.WriteFile(filepath.Join(dir, "k-00001.warc.gz.open"), cut, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "k-00001.warc.gz"))

	ww, err = OpenWARC(WARCOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ww.Repaired, []string{"k-00001.warc.gz"}) || ww.FirstFile() != "k-00002.warc.gz" {
		t.Errorf("Repaired %q, FirstFile %q; want k-00001 repaired and k-00002 next", ww.Repaired, ww.FirstFile())
	}
	ww.Close()
	got, err := os.ReadFile(filepath.Join(dir, "k-00001.warc.gz"))
	if err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("repaired file: %d bytes (%v), want the %d bytes of its whole records", len(got), err, len(whole))
	}
	if n := len(readWARCFile(t, filepath.Join(dir, "k-00001.warc.gz"))); n != 5 {
		t.Errorf("repaired file holds %d records, want 5", n)
	}
}
