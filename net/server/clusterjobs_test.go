package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/net/wire"
)

// fakeClusterJobs is a cluster of n queued jobs on other coordinators,
// its cursor the index of the next row; it records the last walk asked
// (under mu: the walks are made off the reactor).
type fakeClusterJobs struct {
	rows       []admin.JobRow
	knowHosts  bool
	mu         sync.Mutex
	lastCursor string
	lastSkip   int
}

// last is the cursor and skip of the last walk.
func (f *fakeClusterJobs) last() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastCursor, f.lastSkip
}

func (f *fakeClusterJobs) Self() string { return "1" }

func (f *fakeClusterJobs) Jobs(cursor, parts string, host func(string) bool, match func(*admin.JobRow) bool, skip, limit int) ([]admin.JobRow, int, string, error) {
	f.mu.Lock()
	f.lastCursor, f.lastSkip = cursor, skip
	f.mu.Unlock()
	i := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil {
			return nil, 0, "", fmt.Errorf("cursor %q: not one a page gave", cursor)
		}
		i = n
	}
	if limit <= 0 {
		return nil, 0, strconv.Itoa(i), nil
	}
	var rows []admin.JobRow
	skipped := 0
	for ; i < len(f.rows) && len(rows) < limit; i++ {
		r := f.rows[i]
		if host != nil && !host(id.Host(r.URL)) || match != nil && !match(&r) {
			continue
		}
		if skipped < skip {
			skipped++
			continue
		}
		rows = append(rows, r)
	}
	next := ""
	if i < len(f.rows) {
		next = strconv.Itoa(i)
	}
	return rows, skipped, next, nil
}

// Host knows the hosts of the rows' keys when knowHosts is set.
func (f *fakeClusterJobs) Host(fp id.Fingerprint) (string, bool) {
	for _, r := range f.rows {
		if f.knowHosts && r.Key == fp.String() {
			return id.Host(r.URL), true
		}
	}
	return "", false
}

func (f *fakeClusterJobs) Waiters(id.Fingerprint, string) ([]admin.WaiterRow, error) {
	return nil, nil
}

func (f *fakeClusterJobs) Locate(fp id.Fingerprint, host string) (admin.JobRow, bool, error) {
	for _, r := range f.rows {
		if r.Key == fp.String() && id.Host(r.URL) == host {
			return r, true, nil
		}
	}
	return admin.JobRow{}, false, nil
}

func (f *fakeClusterJobs) NoteRetries([]admin.JobRow, int) {}

func (f *fakeClusterJobs) NoteJobs([]admin.JobRow) {}

func (f *fakeClusterJobs) NoteWorkers([]string) {}

func (f *fakeClusterJobs) WorkerAt(string) (string, string, bool, error) { return "", "", false, nil }

func (f *fakeClusterJobs) MarkDrained([]string) ([]string, error) { return nil, nil }

func (f *fakeClusterJobs) UnmarkDrained(ws []string) ([]bool, error) {
	return make([]bool, len(ws)), nil
}

func (f *fakeClusterJobs) Drained(string) bool { return false }

func (f *fakeClusterJobs) Ask(c string, a admin.Action) (admin.ActionResult, error) {
	return admin.ActionResult{}, fmt.Errorf("no coordinator %s", c)
}

// Requests waits, as a store with no action posted would.
func (f *fakeClusterJobs) Requests(ctx context.Context, wait time.Duration) ([]admin.Action, []string, error) {
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return nil, nil, nil
}

func (f *fakeClusterJobs) Reply(string, admin.ActionResult) error { return nil }

func (f *fakeClusterJobs) Retries() ([]admin.JobRow, int, error) { return nil, 0, nil }

// adminPage sends q on con and returns the PAGE (CHANGED pushes skipped).
func adminPage(t *testing.T, con *rawClient, req uint64, q admin.Query) admin.Page {
	t.Helper()
	con.send(&wire.Query{Req: req, Query: q})
	for {
		m := con.recv()
		if _, ok := m.(*wire.Changed); ok {
			continue
		}
		return expect[*wire.Page](t, m).Page
	}
}

// View jobs with Options.ClusterJobs: the coordinator's own rows, then the
// cluster's, one window across both; after is absent while own rows go on,
// then the cursor of the cluster's rows; an offset goes on from where a
// page ended; the filter applies to the cluster's rows, a host term as a
// host test; a bad after is refused with 400.
func TestClusterJobsWindow(t *testing.T) {
	fake := &fakeClusterJobs{}
	for i := range 20 {
		fake.rows = append(fake.rows, admin.JobRow{Key: fmt.Sprintf("%032x", i+1), URL: fmt.Sprintf("http://c%d.test/%d", i%2, i),
			State: "queued", QueueID: uint64(100 + i)})
	}
	s := startServer(t, Options{ClusterJobs: fake, Cluster: func() *admin.Cluster { return &admin.Cluster{Queued: 20} }})
	p := dial(t, s.PeersEndpoint())
	hello(t, p, wire.RoleProducer, "p1", 0)
	submitNumbered(t, p, 2, "http://own.test/", 5)
	con := dial(t, s.InprocAdmin())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())

	pg := adminPage(t, con, 2, admin.Query{View: admin.ViewJobs, Limit: 3})
	if len(pg.Jobs) != 3 || pg.Jobs[0].JobID == 0 || pg.After != "" || pg.Total != 25 {
		t.Fatalf("first page: %d rows (first %+v), after %q, total %d; want 3 own rows, no after, total 5+20", len(pg.Jobs), pg.Jobs, pg.After, pg.Total)
	}
	pg = adminPage(t, con, 3, admin.Query{View: admin.ViewJobs, Offset: 3, Limit: 4})
	if len(pg.Jobs) != 4 || pg.Jobs[1].JobID == 0 || pg.Jobs[2].QueueID != 100 || pg.Jobs[3].QueueID != 101 || pg.After != "2" {
		t.Fatalf("offset 3: %+v, after %q; want 2 own rows then the cluster's first 2, after 2", pg.Jobs, pg.After)
	}
	// Offset 7 = cluster row 2: from the memo's cursor, nothing skipped.
	pg = adminPage(t, con, 4, admin.Query{View: admin.ViewJobs, Offset: 7, Limit: 2})
	if cur, skip := fake.last(); len(pg.Jobs) != 2 || pg.Jobs[0].QueueID != 102 || cur != "2" || skip != 0 {
		t.Fatalf("offset 7: %+v, walked from %q skipping %d; want rows 102, 103 from the memo's cursor 2", pg.Jobs, cur, skip)
	}
	// By after: the cluster's rows only.
	pg = adminPage(t, con, 5, admin.Query{View: admin.ViewJobs, After: "18", Limit: 5})
	if len(pg.Jobs) != 2 || pg.Jobs[0].QueueID != 118 || pg.After != "" {
		t.Fatalf("after 18: %+v, after %q; want the last 2 rows and no after", pg.Jobs, pg.After)
	}
	// A host term: only the cluster's rows of that host (own rows are of
	// own.test); total is those read and one more while the walk goes on.
	pg = adminPage(t, con, 6, admin.Query{View: admin.ViewJobs, Filter: "host=c1.test", Limit: 4})
	if len(pg.Jobs) != 4 || pg.Total != 5 || pg.After == "" {
		t.Fatalf("host=c1.test: %d rows, total %d, after %q; want 4 rows, total 4+1, an after", len(pg.Jobs), pg.Total, pg.After)
	}
	for _, r := range pg.Jobs {
		if id.Host(r.URL) != "c1.test" {
			t.Fatalf("host=c1.test listed %s", r.URL)
		}
	}
	con.send(&wire.Query{Req: 7, Query: admin.Query{View: admin.ViewJobs, After: "bogus"}})
	for {
		m := con.recv()
		if _, ok := m.(*wire.Changed); ok {
			continue
		}
		if e := expect[*wire.Error](t, m); e.Code != wire.CodeMalformed {
			t.Fatalf("a bad after: %+v; want 400", e)
		}
		break
	}
}

// A key's detail on a coordinator that does not know the key's host: the
// cluster is not searched, and the error says to give the host with a
// host= term; with it, the job is found where it is in the cluster.
func TestClusterJobDetailByHost(t *testing.T) {
	k := key("http://far.test:8080/x")
	fake := &fakeClusterJobs{rows: []admin.JobRow{{Key: k.Fingerprint().String(), URL: k.URL, State: "queued", QueueID: 7}}}
	s := startServer(t, Options{ClusterJobs: fake})
	con := dial(t, s.InprocAdmin())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())
	fp := k.Fingerprint().String()
	con.send(&wire.Query{Req: 2, Query: admin.Query{View: admin.ViewJobs, Key: fp}})
	for {
		m := con.recv()
		if _, ok := m.(*wire.Changed); ok {
			continue
		}
		if e := expect[*wire.Error](t, m); e.Code != wire.CodeNotFound || !strings.Contains(e.Msg, "filter host=HOST") {
			t.Fatalf("detail of a key of an unknown host: %+v; want 404 saying to give host=HOST", e)
		}
		break
	}
	pg := adminPage(t, con, 3, admin.Query{View: admin.ViewJobs, Key: fp, Filter: "host=far.test:8080"})
	if len(pg.Jobs) != 1 || pg.Jobs[0].QueueID != 7 || pg.Jobs[0].State != "queued" {
		t.Fatalf("detail with host=far.test:8080: %+v; want the job queued in the cluster as 7", pg.Jobs)
	}
}

// A requeue of a job another coordinator claimed, which does not answer:
// the ACTED's error line names where the job is and why it was not
// requeued; a job in the cluster's queue is already queued.
func TestClusterRequeueElsewhere(t *testing.T) {
	held, queued := key("http://far.test/held"), key("http://far.test/queued")
	fake := &fakeClusterJobs{knowHosts: true, rows: []admin.JobRow{
		{Key: held.Fingerprint().String(), URL: held.URL, State: "claimed", Coordinator: "2"},
		{Key: queued.Fingerprint().String(), URL: queued.URL, State: "queued", QueueID: 9},
	}}
	s := startServer(t, Options{ClusterJobs: fake})
	con := dial(t, s.InprocAdmin())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Action{Req: 2, Action: admin.Action{Kind: admin.ActRequeue, Targets: []string{held.Fingerprint().String(), queued.Fingerprint().String()}}})
	for {
		m := con.recv()
		if _, ok := m.(*wire.Changed); ok {
			continue
		}
		res := expect[*wire.Acted](t, m).Result
		if res.Affected != 0 || len(res.Errors) != 2 ||
			!strings.Contains(res.Errors[0], "its job is claimed by coordinator 2; asking it to requeue: no coordinator 2") ||
			!strings.Contains(res.Errors[1], "already waiting in the cluster's queue (job 9 there)") {
			t.Fatalf("requeue: %+v; want the claimed job's line naming coordinator 2 and the queued one's", res)
		}
		break
	}
}
