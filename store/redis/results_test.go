package redis

import (
	"testing"
	"time"

	"drover/coord/id"
	"drover/coord/ledger"
	"drover/store"
)

// Results added by two coordinators read back on either, in cursor order
// with every field, from any cursor; a result past results.max_age is
// trimmed.
func TestResultsShared(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Results(), ls[1].Results()
	at := time.Unix(1700000000, 123)
	rec := func(i int, out string) store.ResultRecord {
		return store.ResultRecord{Job: uint64(i), Key: id.Key{Crawler: "site", Processor: "fetch", URL: "http://h.example/" + string(rune('a'+i))},
			Outcome: "ok", Attempt: 1, Worker: "w", At: at, Output: []byte(out)}
	}
	x := []store.ResultRecord{rec(0, "zero"), rec(1, "")}
	x[1].Outcome, x[1].Error, x[1].Key.Crawler = "failed", "boom", ""
	if err := a.Add(x); err != nil {
		t.Fatal(err)
	}
	y := []store.ResultRecord{rec(2, "two\x00bytes")}
	if err := b.Add(y); err != nil {
		t.Fatal(err)
	}
	if x[0].Cursor == 0 || x[1].Cursor <= x[0].Cursor || y[0].Cursor <= x[1].Cursor {
		t.Fatalf("cursors %d, %d, %d: want growing from 1", x[0].Cursor, x[1].Cursor, y[0].Cursor)
	}
	first, last, err := a.Bounds()
	if err != nil || first != x[0].Cursor || last != y[0].Cursor {
		t.Fatalf("bounds %d, %d, %v; want %d, %d", first, last, err, x[0].Cursor, y[0].Cursor)
	}
	want := append(append([]store.ResultRecord{}, x...), y...)
	for from := range want {
		var after uint64
		if from > 0 {
			after = want[from-1].Cursor
		}
		var got []store.ResultRecord
		if err := b.Read(after, last, func(r *store.ResultRecord) bool { got = append(got, *r); return true }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want)-from {
			t.Fatalf("read after %d: %d results; want %d", after, len(got), len(want)-from)
		}
		for i, g := range got {
			w := want[from+i]
			if g.Cursor != w.Cursor || g.Job != w.Job || g.Key != w.Key || g.Outcome != w.Outcome || g.Error != w.Error ||
				g.Attempt != w.Attempt || g.Worker != w.Worker || !g.At.Equal(w.At) || string(g.Output) != string(w.Output) {
				t.Fatalf("read %+v; want %+v", g, w)
			}
		}
	}
	// Everything is older than a minute from an hour on.
	n, err := a.Trim(time.Now().Add(time.Hour), &store.Retention{Default: store.ResultLimits{MaxAge: time.Minute}})
	if err != nil || n != 3 {
		t.Fatalf("trim: %d deleted, %v; want 3", n, err)
	}
	if first, last, err := b.Bounds(); err != nil || first != 0 || last != 0 {
		t.Fatalf("bounds after the trim %d, %d, %v; want none", first, last, err)
	}
}
