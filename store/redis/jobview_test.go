package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/coord/ledger"
	"drover/filter"
)

// hostTest is the host test of f's host term (nil: none), as the
// server makes it.
func hostTest(f filter.Filter) func(string) bool {
	t := f.Only(filter.FieldHost)
	if t.Empty() {
		return nil
	}
	return func(h string) bool { return t.Terms[0].MatchValue(h) }
}

// walkAll pages through the walk of parts with pages of limit rows,
// following the cursors, and returns every row; it fails when the walk
// does not end within a page per row (and a few more).
func walkAll(t *testing.T, v *JobView, parts, filterText string, limit int) []admin.JobRow {
	t.Helper()
	f, err := filter.Parse(filterText)
	if err != nil {
		t.Fatal(err)
	}
	var out []admin.JobRow
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("the walk did not end after %d pages (%d rows)", pages, len(out))
		}
		rows, skipped, next, err := v.Jobs(cursor, parts, hostTest(f), f.Job, 0, limit)
		if err != nil {
			t.Fatal(err)
		}
		if skipped != 0 || len(rows) > limit {
			t.Fatalf("page %d: %d rows, %d skipped; want at most %d rows, none skipped", pages, len(rows), skipped, limit)
		}
		out = append(out, rows...)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// The job view of coordinator a lists, page by page from cursors, every
// job coordinator b claimed (naming b) and every job in the shared queue,
// each once, with the filter applied; a skip passes over rows as a page
// would have listed them; keys requested by b on hosts a never touched
// are listed with their owner, and their waiters and jobs are found by
// fingerprint.
func TestJobViewWalk(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	qb := b.Jobs()
	now := time.Now()
	const n = 300
	for i := range n {
		if _, err := qb.Push(now, jobSpec(i)); err != nil {
			t.Fatal(err)
		}
	}
	var claimed []string
	for len(claimed) < 40 {
		specs, err := qb.Claim(now, 40-len(claimed))
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range specs {
			claimed = append(claimed, sp.Key.URL)
		}
	}
	v := a.JobView()
	for _, limit := range []int{1, 7, 100, 1000} {
		rows := walkAll(t, v, "cq", "", limit)
		seen := make(map[string]admin.JobRow)
		for _, r := range rows {
			if _, dup := seen[r.URL]; dup {
				t.Fatalf("limit %d: %s listed twice", limit, r.URL)
			}
			seen[r.URL] = r
		}
		if len(seen) != n {
			t.Fatalf("limit %d: %d jobs listed; want %d", limit, len(seen), n)
		}
		for _, u := range claimed {
			if r := seen[u]; r.State != "claimed" || r.Coordinator != b.coord || r.QueueID == 0 || !strings.Contains(r.Reason, "coordinator "+b.coord) {
				t.Fatalf("limit %d: claimed job %s listed as %+v; want state claimed by coordinator %s with its queue id", limit, u, r, b.coord)
			}
		}
		queued := 0
		for _, r := range seen {
			if r.State == "queued" {
				queued++
			}
		}
		if queued != n-len(claimed) {
			t.Fatalf("limit %d: %d queued rows; want %d", limit, queued, n-len(claimed))
		}
	}
	// With b's summary listing the hosts it holds jobs of, a's walk
	// reads b's leases there only: none when it lists none, all 40 when
	// it lists them.
	vb := b.JobView()
	publish := func() {
		t.Helper()
		if err := b.PublishSummary(context.Background(), admin.ClusterCoordinator{Peers: "tcp://b"}); err != nil {
			t.Fatal(err)
		}
	}
	vb.held.Store(&[]string{})
	publish()
	if rows := walkAll(t, v, "c", "", 3); len(rows) != 0 {
		t.Fatalf("b lists no held hosts, yet %d claimed rows", len(rows))
	}
	vb.NoteHeld()
	publish()
	if rows := walkAll(t, v, "c", "", 3); len(rows) != len(claimed) || !strings.Contains(rows[0].Reason, "(tcp://b)") {
		t.Fatalf("b lists its held hosts: %d claimed rows (first %+v); want %d naming b's peers endpoint", len(rows), rows, len(claimed))
	}
	// The filter: host h3 (jobs 3, 13, 23, ...) and the claimed ones only.
	rows := walkAll(t, v, "cq", "host=h3.example state=queued", 5)
	if len(rows) == 0 {
		t.Fatal("no row for host=h3.example state=queued")
	}
	for _, r := range rows {
		if id.Host(r.URL) != "h3.example" || r.State != "queued" {
			t.Fatalf("host=h3.example state=queued listed %+v", r)
		}
	}
	all := walkAll(t, v, "q", "", 1000)
	n3 := 0
	for _, r := range all {
		if id.Host(r.URL) == "h3.example" {
			n3++
		}
	}
	if len(rows) != n3 {
		t.Fatalf("host=h3.example state=queued: %d rows; want the %d queued jobs of h3.example", len(rows), n3)
	}
	// A skip passes over rows: skip 50, take 10 = rows 50..59 of one walk.
	got, skipped, _, err := v.Jobs("", "cq", nil, nil, 50, 10)
	if err != nil || skipped != 50 || len(got) != 10 {
		t.Fatalf("skip 50 limit 10: %d rows, %d skipped, err %v; want 10 rows after 50", len(got), skipped, err)
	}
	ref := walkAll(t, v, "cq", "", 1000)
	for i := range got {
		if got[i].Key != ref[50+i].Key {
			t.Fatalf("skip 50: row %d is %s; want %s as the walk lists it", i, got[i].URL, ref[50+i].URL)
		}
	}
	// A bad cursor is refused.
	if _, _, _, err := v.Jobs("not-a-cursor", "cq", nil, nil, 0, 10); err == nil {
		t.Fatal("a made-up cursor was taken")
	}

	// Keys requested by b on hosts a never touched, one with a waiter.
	var keys []ledger.Item
	for i := range 5 {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://req%d.example/x", i)}
		it := ledger.Item{Key: k, FP: k.Fingerprint()}
		if vd, r := b.Request(now, 3, uint64(i+1), it.Key, it.FP); vd != ledger.OK {
			t.Fatalf("request %s: %v %v", k.URL, vd, r)
		}
		keys = append(keys, it)
	}
	if vd, _ := b.Request(now, 4, 9, keys[2].Key, keys[2].FP); vd != ledger.Wait {
		t.Fatalf("second request of %s: %v; want wait", keys[2].Key.URL, vd)
	}
	req := walkAll(t, v, "r", "", 2)
	if len(req) != 5 {
		t.Fatalf("%d requested keys listed; want 5: %+v", len(req), req)
	}
	for _, r := range req {
		if r.State != "requested" || r.Owner != "s3 on coordinator "+b.coord {
			t.Fatalf("requested key listed as %+v; want owner s3 on coordinator %s", r, b.coord)
		}
		if r.URL == keys[2].Key.URL && r.Waiters != 1 {
			t.Fatalf("%s: %d waiters; want 1", r.URL, r.Waiters)
		}
	}
	h2, ok := v.Host(keys[2].FP)
	if !ok || h2 != "req2.example" {
		t.Fatalf("host of %s: %q %v; want req2.example, the walk listed it", keys[2].Key.URL, h2, ok)
	}
	ws, err := v.Waiters(keys[2].FP, h2)
	if err != nil || len(ws) != 1 || ws[0].Session != "s4 on coordinator "+b.coord || ws[0].Position != 1 {
		t.Fatalf("waiters of %s: %+v ok %v err %v; want s4 on coordinator %s first", keys[2].Key.URL, ws, ok, err, b.coord)
	}
	// Locate: a claimed job names b; a queued one is found in the queue.
	ck := id.Key{Crawler: "c", Processor: "p", URL: claimed[0]}
	if r, ok, err := v.Locate(ck.Fingerprint(), id.Host(ck.URL)); err != nil || !ok || r.Coordinator != b.coord || r.State != "claimed" {
		t.Fatalf("locate %s: %+v ok %v err %v; want claimed by %s", claimed[0], r, ok, err, b.coord)
	}
	for _, r := range all[len(all)-3:] {
		fp, _ := id.ParseFingerprint(r.Key)
		if got, ok, err := v.Locate(fp, id.Host(r.URL)); err != nil || !ok || got.State != "queued" || got.QueueID != r.QueueID {
			t.Fatalf("locate %s: %+v ok %v err %v; want it queued as %+v", r.URL, got, ok, err, r)
		}
	}
}

// A coordinator's retries rows, noted and published in its summary, are
// what the others' Retries lists: the first 50, naming it, without its
// own job ids, with its total.
func TestJobViewRetries(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	rows := make([]admin.JobRow, 60)
	for i := range rows {
		k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://f%d.example/", i)}
		rows[i] = admin.JobRow{JobID: uint64(i + 1), Key: k.Fingerprint().String(), URL: k.URL, State: "failed",
			LastError: strings.Repeat("x", 500), History: []admin.Attempt{{Worker: "w"}}}
	}
	b.JobView().NoteRetries(rows, 61)
	if err := b.PublishSummary(context.Background(), admin.ClusterCoordinator{}); err != nil {
		t.Fatal(err)
	}
	got, total, err := a.JobView().Retries()
	if err != nil || total != 61 || len(got) != PublishedRetries {
		t.Fatalf("a's view of b's retries: %d rows, total %d, err %v; want %d rows of 61", len(got), total, err, PublishedRetries)
	}
	for i, r := range got {
		if r.Coordinator != b.coord || r.Reason != "on coordinator "+b.coord || r.JobID != 0 || r.URL != rows[i].URL || r.History != nil || len(r.LastError) > maxPublishedError+len("…") {
			t.Fatalf("row %d: %+v; want %s of coordinator %s, no job id, no history, the error cut", i, r, rows[i].URL, b.coord)
		}
	}
	if got, _, _ := b.JobView().Retries(); len(got) != 0 {
		t.Fatalf("b lists %d of its own retries as another's", len(got))
	}
}
