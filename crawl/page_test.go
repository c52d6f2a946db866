package crawl

import (
	"testing"
	"time"
)

func TestPageRecord(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.FixedZone("x", 3600))
	p := Page{URL: "http://h/", FinalURL: "http://h/", Status: 200, ContentType: "text/html",
		Title: "T", Links: []string{"a", "b"}, Bytes: 10, FetchedAt: at,
		FetchDuration: 1500 * time.Microsecond, Outcome: OK}
	r := p.Record(3, "w1", 2)
	want := Record{URL: "http://h/", FinalURL: "http://h/", Status: 200, ContentType: "text/html",
		Title: "T", Depth: 3, LinksOut: 2, Bytes: 10, FetchMS: 1.5, Worker: "w1", Attempt: 2,
		FetchedAt: at.UTC(), Outcome: OK}
	if r != want {
		t.Errorf("Record = %+v\nwant     %+v", r, want)
	}
	if s := (Page{Outcome: Internal, Status: 500, URL: "u", Err: "e"}).String(); s != "internal 500 u: e" {
		t.Errorf("String() = %q", s)
	}
}
