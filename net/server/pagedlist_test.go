package server

import (
	"fmt"
	"path/filepath"
	"testing"

	"drover/admin"
	"drover/coord"
	"drover/coord/id"
	"drover/net/wire"
	"drover/store"
)

// TestJobListsPageThroughTheStore: a server keeping 500 of 3,000 queued
// jobs in memory lists all 3,000 in the jobs view, oldest first, over the
// admin socket: windows before, across and after the end of the jobs in
// memory come in id order, the paged-out rows read from the store (and
// marked so), the total counts them all, a requested key follows the
// jobs, and a state filter naming queued pages the same way.
func TestJobListsPageThroughTheStore(t *testing.T) {
	const n, resident = 3000, 500
	st := openStore(t, filepath.Join(t.TempDir(), "store"), store.SyncNone)
	t.Cleanup(func() { st.Close() })
	s, _ := runServer(t, Options{Store: st, ResidentJobs: resident})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p", 0)
	items := make([]wire.SubmitItem, n)
	for i := range items {
		items[i] = wire.SubmitItem{Key: key(fmt.Sprintf("http://h%d.test/list/%d", i%hosts, i))}
	}
	p.send(&wire.Submit{Req: 2, Jobs: items})
	expect[*wire.Submitted](t, p.recv())
	waitFor(t, "jobs paged out", func() bool { return s.Paging().Out >= n-resident })

	con := dial(t, s.InprocAdmin())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())
	req := uint64(1)
	query := func(q admin.Query) admin.Page {
		t.Helper()
		req++
		con.send(&wire.Query{Req: req, Query: q})
		for {
			switch m := con.recv().(type) {
			case *wire.Changed:
				continue
			case *wire.Page:
				return m.Page
			default:
				t.Fatalf("query %+v: %T %+v, want a PAGE", q, m, m)
			}
		}
	}
	// check wants the rows of jobs first..last (ids) and the total.
	check := func(q admin.Query, first, last, total int) []admin.JobRow {
		t.Helper()
		pg := query(q)
		if pg.Total != total || len(pg.Jobs) != last-first+1 {
			t.Fatalf("query %+v: total %d, %d rows; want total %d, rows of jobs %d..%d", q, pg.Total, len(pg.Jobs), total, first, last)
		}
		for i, r := range pg.Jobs {
			if r.JobID != uint64(first+i) || r.State != "queued" {
				t.Fatalf("query %+v: row %d is job %d (%s), want job %d queued", q, i, r.JobID, r.State, first+i)
			}
			if paged := r.Reason == coord.PagedReason && r.Wait == admin.WaitPaged; paged != (r.JobID > resident) {
				t.Fatalf("query %+v: job %d reason %q, wait %q: paged out should be exactly the jobs above %d", q, r.JobID, r.Reason, r.Wait, resident)
			}
		}
		return pg.Jobs
	}
	check(admin.Query{View: admin.ViewJobs, Limit: 100}, 1, 100, n)
	rows := check(admin.Query{View: admin.ViewJobs, Offset: 400, Limit: 300}, 401, 700, n) // across the end of memory
	if r := rows[len(rows)-1]; r.URL != items[699].Key.URL || r.Key != items[699].Key.Fingerprint().String() {
		t.Fatalf("row of job 700 %+v: want %s", r, items[699].Key.URL)
	}
	check(admin.Query{View: admin.ViewJobs, Offset: 2000, Limit: 500}, 2001, 2500, n)
	check(admin.Query{View: admin.ViewJobs, Offset: 2990, Limit: 50}, 2991, n, n)
	check(admin.Query{View: admin.ViewJobs, Sort: "age", Filter: "state=queued", Offset: 450, Limit: 100}, 451, 550, n)
	if pg := query(admin.Query{View: admin.ViewJobs, Filter: "state=done"}); pg.Total != 0 || len(pg.Jobs) != 0 {
		t.Fatalf("done jobs: %+v, want none", pg)
	}

	// A requested key comes after every job.
	p.send(&wire.Request{Req: 3, Keys: []id.Key{key("http://asked.test/")}})
	expect[*wire.Verdicts](t, p.recv())
	pg := query(admin.Query{View: admin.ViewJobs, Offset: n - 2, Limit: 10})
	if pg.Total != n+1 || len(pg.Jobs) != 3 || pg.Jobs[1].JobID != n || pg.Jobs[2].State != "requested" || pg.Jobs[2].URL != "http://asked.test/" {
		t.Fatalf("window at the end: total %d, rows %+v; want jobs %d, %d and the requested key", pg.Total, pg.Jobs, n-1, n)
	}
	// wait=paged lists the jobs in the store only, without the key.
	check(admin.Query{View: admin.ViewJobs, Filter: "wait=paged", Offset: 10, Limit: 20}, resident+11, resident+30, n-resident)
	check(admin.Query{View: admin.ViewJobs, Filter: "state=queued wait=paged,polite", Offset: n - resident - 5, Limit: 20}, n-4, n, n-resident)
}
