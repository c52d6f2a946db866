package crawl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func sampleRecord(i int) Record {
	return Record{
		URL: fmt.Sprintf("http://h.test/p%d?a=1&b=<2>", i), FinalURL: fmt.Sprintf("http://h.test/p%d", i),
		Status: 200, ContentType: "text/html", Title: fmt.Sprintf("Page \"%d\"\n", i), Depth: i % 5,
		LinksOut: i, Bytes: int64(100 * i), FetchMS: 1.25, Worker: "w1", Attempt: 1,
		FetchedAt: time.Date(2026, 11, 29, 12, 0, i%60, 0, time.UTC), Outcome: OK,
	}
}

// readRecords parses every line of a JSONL file; it fails the test on a
// line that does not parse.
func readRecords(t *testing.T, data []byte) []Record {
	t.Helper()
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d does not parse: %v\n%s", n, err, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func TestJSONLWriterFieldsAndConcurrency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	w, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := w.Write(sampleRecord(g*each + i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, data)
	if len(recs) != writers*each {
		t.Fatalf("%d records, want %d", len(recs), writers*each)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.URL] = true
	}
	for i := range writers * each {
		want := sampleRecord(i)
		if !seen[want.URL] {
			t.Errorf("record %s missing", want.URL)
		}
	}
	// The field names are the issue's.
	var m map[string]any
	if err := json.Unmarshal(data[:bytes.IndexByte(data, '\n')], &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"url", "final_url", "status", "content_type", "title", "depth", "links_out",
		"bytes", "fetch_ms", "worker", "attempt", "fetched_at", "outcome"} {
		if _, ok := m[k]; !ok {
			t.Errorf("field %q missing from %s", k, data[:bytes.IndexByte(data, '\n')])
		}
	}
	if !bytes.Contains(data, []byte("&b=<2>")) {
		t.Error("URLs are HTML-escaped; want them readable")
	}
	if err := w.Write(sampleRecord(0)); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestOpenJSONLAppendsAndCutsPartialLine(t *testing.T) {
	tests := []struct {
		name     string
		existing string
		keep     int // records kept from existing
	}{
		{"empty", "", 0},
		{"complete", `{"url":"a"}` + "\n" + `{"url":"b"}` + "\n", 2},
		{"partial last line", `{"url":"a"}` + "\n" + `{"url":"b","sta`, 1},
		{"only a partial line", `{"url":"a","st`, 0},
		{"long partial line", `{"url":"a"}` + "\n" + `{"title":"` + strings.Repeat("x", 200<<10), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			if err := os.WriteFile(path, []byte(tt.existing), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := OpenJSONL(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(sampleRecord(7)); err != nil {
				t.Fatal(err)
			}
			w.Close()
			data, _ := os.ReadFile(path)
			recs := readRecords(t, data)
			if len(recs) != tt.keep+1 || recs[len(recs)-1].URL != sampleRecord(7).URL {
				t.Errorf("got %d records ending %+v, want %d kept + the new one", len(recs), recs[len(recs)-1], tt.keep)
			}
		})
	}
}

func TestOpenJSONLBadPath(t *testing.T) {
	if _, err := OpenJSONL(filepath.Join(t.TempDir(), "no", "such", "dir", "x.jsonl")); err == nil {
		t.Error("OpenJSONL in a missing directory succeeded")
	}
}

// shortWriter accepts the first limit bytes and then writes short.
type shortWriter struct {
	buf   bytes.Buffer
	limit int
}

func (s *shortWriter) Write(b []byte) (int, error) {
	room := s.limit - s.buf.Len()
	if room >= len(b) {
		return s.buf.Write(b)
	}
	s.buf.Write(b[:max(room, 0)])
	return max(room, 0), nil
}

func TestJSONLWriterStopsAfterShortWrite(t *testing.T) {
	sw := &shortWriter{limit: 300}
	w := NewJSONLWriter(sw)
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		err = w.Write(sampleRecord(i))
	}
	if !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("err = %v, want a short write", err)
	}
	if err := w.Write(sampleRecord(99)); err == nil {
		t.Error("a write after a failed one succeeded; it would glue onto a partial line")
	}
}

func TestJSONLWriterFlushes(t *testing.T) {
	var sink bytes.Buffer
	bw := bufio.NewWriterSize(&sink, 64<<10)
	w := NewJSONLWriter(bw)
	if err := w.Write(sampleRecord(1)); err != nil {
		t.Fatal(err)
	}
	if recs := readRecords(t, sink.Bytes()); len(recs) != 1 {
		t.Errorf("the record was not flushed through the bufio.Writer: %d records", len(recs))
	}
}

// WriteLine writes an encoded record as its own line (flushed), and refuses
// what would break the one-record-per-line format.
func TestJSONLWriterWriteLine(t *testing.T) {
	var sink bytes.Buffer
	bw := bufio.NewWriterSize(&sink, 64<<10)
	w := NewJSONLWriter(bw)
	line, err := json.Marshal(sampleRecord(7))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteLine(line); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(sampleRecord(8)); err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, sink.Bytes())
	if len(recs) != 2 || recs[0].URL != sampleRecord(7).URL || recs[1].URL != sampleRecord(8).URL {
		t.Fatalf("records %+v: want samples 7 and 8, one per line", recs)
	}
	for _, bad := range []string{"{\"url\":\"a\",\n\"status\":200}", `{"url":`, ``} {
		if err := w.WriteLine([]byte(bad)); err == nil {
			t.Errorf("WriteLine(%q) accepted", bad)
		}
	}
	if n := len(readRecords(t, sink.Bytes())); n != 2 {
		t.Fatalf("%d records after refused lines, want 2", n)
	}
}

// TestJSONLSurvivesKill runs a child that writes records as fast as it can
// and kills it with SIGKILL mid-stream: every complete line of the file
// must parse, and at most the last line may be incomplete.
func TestJSONLSurvivesKill(t *testing.T) {
	if path := os.Getenv("CRAWL_JSONL_CHILD"); path != "" {
		w, err := OpenJSONL(path)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		for i := 0; ; i++ {
			if err := w.Write(sampleRecord(i)); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			if i == 200 {
				fmt.Println("ready")
			}
		}
	}
	path := filepath.Join(t.TempDir(), "out.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestJSONLSurvivesKill$")
	cmd.Env = append(os.Environ(), "CRAWL_JSONL_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	cmd.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1] // a last incomplete line is allowed
	}
	if recs := readRecords(t, data); len(recs) < 201 {
		t.Errorf("only %d records survived, want at least 201", len(recs))
	}
	// Reopening repairs the file for appending.
	w, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(sampleRecord(-1)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	all, _ := os.ReadFile(path)
	readRecords(t, all)
}
