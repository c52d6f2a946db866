package crawl

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCSVWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pages.csv")
	at := time.Date(2026, 12, 1, 20, 0, 0, 5, time.UTC)
	recs := []Record{
		{URL: "http://a.test/", FinalURL: "http://a.test/", Status: 200, ContentType: "text/html", Title: `Quote " and, comma`,
			Depth: 0, LinksOut: 3, Bytes: 1234, FetchMS: 1.5, Worker: "local-1", Attempt: 1, FetchedAt: at, Outcome: OK,
			Canonical: "http://a.test/c", NoIndex: true},
		{URL: "http://a.test/x", Parent: "http://a.test/", Depth: 1, Disallowed: true, Outcome: OK, Error: "line\nbreak", FetchedAt: at},
	}
	w, err := OpenCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(recs[0]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Reopened: appended after the first record, no second header; the
	// JSON line form (the sink's fast path) gives the same row.
	w, err = OpenCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteLine(recs[1].AppendJSON(nil)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f, _ := os.Open(path)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || !slices.Equal(rows[0], CSVColumns) {
		t.Fatalf("rows %q, want the header and two records", rows)
	}
	col := func(row []string, name string) string { return row[slices.Index(CSVColumns, name)] }
	for name, want := range map[string]string{"title": `Quote " and, comma`, "status": "200", "fetch_ms": "1.5",
		"fetched_at": "2026-12-01T20:00:00.000000005Z", "noindex": "true", "canonical": "http://a.test/c", "parent": ""} {
		if got := col(rows[1], name); got != want {
			t.Errorf("row 1 %s = %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]string{"parent": "http://a.test/", "disallowed": "true", "error": "line\nbreak", "depth": "1"} {
		if got := col(rows[2], name); got != want {
			t.Errorf("row 2 %s = %q, want %q", name, got, want)
		}
	}
}

func TestOpenCSVRefusesOtherFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.csv")
	os.WriteFile(path, []byte("name,value\nx,1\n"), 0o644)
	if _, err := OpenCSV(path); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("OpenCSV on another CSV file: %v, want a refusal naming the header", err)
	}
}
