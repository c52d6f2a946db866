package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/filter"
	"drover/net/client"
	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// TestFilterContract runs one table of filters against a real coordinator
// over its admin socket and against the filter package's matcher (what the
// console and any client apply) on the same rows: every view, every field,
// free text, several values, subdomains and ports. The coordinator answers
// from its own indexes; it must give the rows the matcher picks from the
// unfiltered view, and count them alike.
func TestFilterContract(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{Heartbeat: 2 * time.Second})
	p := dialProducer(t, s)
	a := dialAdmin(t, s, client.AdminOptions{ReadOnly: false})

	// Jobs in every state, over two crawlers and processors, hosts with
	// subdomains and a port: the worker does by path what its job says.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	runWorker(t, s.PeersEndpoint(), Options{ID: "W-Alpha", Host: "m1.example.test", Slots: 4},
		func(ctx context.Context, j Job) Result {
			switch {
			case strings.HasSuffix(j.Key.URL, "/hold"):
				select {
				case <-ctx.Done():
				case <-release:
				}
				return Internal(errors.New("released"))
			case strings.HasSuffix(j.Key.URL, "/bad"):
				return External(errors.New("bad page"))
			case strings.HasSuffix(j.Key.URL, "/Slow"):
				return Throttled(time.Hour, errors.New("429"))
			}
			return OK(nil)
		})
	item := func(crawler, processor, u string, hdr ...string) wire.SubmitItem {
		it := wire.SubmitItem{Key: id.Key{Crawler: crawler, Processor: processor, URL: u}}
		if len(hdr) == 2 {
			it.Headers = wire.Headers{{Name: hdr[0], Value: hdr[1]}}
		}
		return it
	}
	submit(t, p,
		item("c1", "render", "http://example.test/ok"),
		item("c1", "render", "http://www.example.test/hold"),
		item("c1", "fetch", "http://other.test:8080/bad"),
		item("c2", "render", "http://example.test/Slow"),
		item("c2", "fetch", "http://badexample.test/queued", "gpu", "yes"), // no worker can take it
	)
	// A key requested by the producer (no job: state requested), and a
	// second producer waiting on it.
	if v, err := p.Request(ctxT(t), []id.Key{{Crawler: "c1", Processor: "render", URL: "http://www.example.test/req"}}); err != nil || v[0].Verdict != wire.VerdictOK {
		t.Fatalf("request: %+v, %v", v, err)
	}
	p2, err := client.Dial(ctxT(t), client.Options{Connect: s.PeersEndpoint(), ID: "waiter"})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, stopWaiting := context.WithCancel(context.Background())
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		p2.Request(waitCtx, []id.Key{{Crawler: "c1", Processor: "render", URL: "http://www.example.test/req"}})
	}()
	t.Cleanup(func() { stopWaiting(); <-waited; p2.Close() })
	totals(t, a, "jobs in every state", func(t admin.Totals) bool {
		return t.Done == 1 && t.Dispatched == 1 && t.Failed == 1 && t.Backoff == 1 && t.Queued == 1 &&
			t.KeysRequested == 1 && t.Waiters == 1
	})
	// A second worker, idle: no job is left that it may take.
	runWorker(t, s.PeersEndpoint(), Options{ID: "w-beta", Host: "other.test", Slots: 1}, func(ctx context.Context, j Job) Result { return OK(nil) })
	totals(t, a, "a busy and an idle worker", func(t admin.Totals) bool { return t.WorkersBusy == 1 && t.WorkersIdle == 1 })

	reqKey := id.Key{Crawler: "c1", Processor: "render", URL: "http://www.example.test/req"}.Fingerprint().String()
	okKey := id.Key{Crawler: "c1", Processor: "render", URL: "http://example.test/ok"}.Fingerprint().String()
	tried := map[filter.Field]bool{} // the fields a row of the table names
	for _, tc := range []struct {
		view    admin.View
		filter  string
		atLeast int // the matcher must find at least this many (the table cannot pass on empty views)
	}{
		{admin.ViewJobs, "", 6},
		{admin.ViewJobs, "crawler=c1", 4}, // with the requested key
		{admin.ViewJobs, "crawler=C2", 2},
		{admin.ViewJobs, "processor=render", 4},
		{admin.ViewJobs, "processor=render,fetch crawler=c1", 4},
		{admin.ViewJobs, "host=example.test", 4}, // www. too, not badexample.test
		{admin.ViewJobs, "host=www.example.test", 2},
		{admin.ViewJobs, "host=other.test", 1},      // port ignored
		{admin.ViewJobs, "host=other.test:8080", 1}, // port given
		{admin.ViewJobs, "host=other.test:9", 0},
		{admin.ViewJobs, "host=example.test,other.test state=failed,dispatched", 2},
		{admin.ViewJobs, "state=requested", 1},
		{admin.ViewJobs, "state=requested,queued", 2},
		{admin.ViewJobs, "state=done", 1},
		{admin.ViewJobs, "state=idle", 0},
		{admin.ViewJobs, "worker=w-alpha", 1},
		{admin.ViewJobs, "key=" + okKey, 1},
		{admin.ViewJobs, "key=" + reqKey, 1},
		{admin.ViewJobs, "slow", 1}, // free text ignores case
		{admin.ViewJobs, "example.test c1", 0},
		{admin.ViewJobs, "example.test crawler=c1", 3},
		{admin.ViewJobs, "kind=job.", 0}, // jobs have no kind
		{admin.ViewJobs, "wait=unroutable", 1},
		{admin.ViewJobs, "wait=host-backoff", 1},
		{admin.ViewJobs, "wait=Unroutable,host-backoff,paused", 2},
		{admin.ViewJobs, "wait=unroutable crawler=c2", 1},
		{admin.ViewJobs, "wait=host-backoff host=example.test", 1},
		{admin.ViewJobs, "wait=polite,retry,reclaim,paged", 0},
		{admin.ViewRetries, "", 2},
		{admin.ViewRetries, "host=example.test", 1},
		{admin.ViewRetries, "crawler=c1", 1},
		{admin.ViewRetries, "processor=fetch state=failed", 1},
		{admin.ViewRetries, "state=queued", 0},
		{admin.ViewRetries, "wait=host-backoff", 1},
		{admin.ViewRetries, "wait=unroutable", 0}, // queued: not in retries
		{admin.ViewWorkers, "", 2},
		{admin.ViewWorkers, "state=busy", 1},
		{admin.ViewWorkers, "state=draining,idle", 1},
		{admin.ViewWorkers, "state=busy,idle", 2},
		{admin.ViewWorkers, "host=example.test", 1}, // m1.example.test
		{admin.ViewWorkers, "host=other.test", 1},
		{admin.ViewWorkers, "worker=W-ALPHA", 1},
		{admin.ViewWorkers, "alpha", 1},
		{admin.ViewWorkers, "m1", 1}, // free text on the host too
		{admin.ViewWorkers, "crawler=c1", 0},
		{admin.ViewWorkers, "wait=polite", 0},
		{admin.ViewEvents, "", 10},
		{admin.ViewEvents, "kind=job.", 5},
		{admin.ViewEvents, "kind=job.done,job.failed", 2},
		{admin.ViewEvents, "kind=worker.", 2},
		{admin.ViewEvents, "host=example.test", 3},
		{admin.ViewEvents, "worker=w-alpha", 1},
		{admin.ViewEvents, "key=" + okKey, 1},
		{admin.ViewEvents, "slow", 1},
		{admin.ViewEvents, "state=done", 0},
		{admin.ViewEvents, "wait=host-backoff", 0},
		{admin.ViewWaiters, "", 1},
		{admin.ViewWaiters, "waiter", 1},
		{admin.ViewWaiters, "nobody", 0},
		{admin.ViewWaiters, "host=example.test", 0},
	} {
		name := fmt.Sprintf("%s/%s", tc.view, tc.filter)
		f, err := filter.Parse(tc.filter)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, term := range f.Terms {
			tried[term.Field] = tried[term.Field] || tc.atLeast > 0
		}
		// The same rows, unfiltered, before and after: events may arrive
		// between the two queries (a retry then sees them settled).
		var want, got []string
		var total int
		testsrv.Eventually(t, wait, name+": a quiet moment", func() bool {
			all := query(t, a, admin.Query{View: tc.view, Key: reqKey})
			page := query(t, a, admin.Query{View: tc.view, Key: reqKey, Filter: tc.filter})
			again := query(t, a, admin.Query{View: tc.view, Key: reqKey})
			if !slices.Equal(rowIDs(all, nil), rowIDs(again, nil)) {
				return false
			}
			want, got, total = rowIDs(all, &f), rowIDs(page, nil), page.Total
			return true
		})
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) || total != len(want) {
			t.Errorf("%s: coordinator gave %d rows (total %d) %v; the matcher picks %d: %v", name, len(got), total, got, len(want), want)
		}
		if len(want) < tc.atLeast || (tc.atLeast == 0 && len(want) != 0) {
			t.Errorf("%s: the matcher picks %d rows %v, want %d", name, len(want), want, tc.atLeast)
		}
	}

	for _, field := range filter.Fields {
		if !tried[field] {
			t.Errorf("no filter of the table on field %s matches a row: want every field tried", field)
		}
	}

	// A filter that does not parse is refused with an error naming it.
	if _, err := a.Query(ctxT(t), admin.Query{View: admin.ViewJobs, Filter: "colour=red"}); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("query with an unknown field: %v, want an error naming it", err)
	}
}

// query asks for a whole view (the waiters of Key, on the waiters view).
func query(t *testing.T, a *client.Admin, q admin.Query) admin.Page {
	t.Helper()
	q.Limit = 1000
	if q.View != admin.ViewWaiters {
		q.Key = ""
	}
	page, err := a.Query(ctxT(t), q)
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	return page
}

// rowIDs names a page's rows (keys, worker ids, event seqs, sessions),
// keeping those f matches when f is not nil.
func rowIDs(p admin.Page, f *filter.Filter) []string {
	var out []string
	for _, r := range p.Jobs {
		if p.View != admin.ViewWaiters && (f == nil || f.Job(&r)) {
			out = append(out, r.Key)
		}
	}
	for _, r := range p.Workers {
		if f == nil || f.Worker(&r) {
			out = append(out, r.ID)
		}
	}
	for _, r := range p.Events {
		if f == nil || f.Event(&r) {
			out = append(out, fmt.Sprint(r.Seq))
		}
	}
	for _, r := range p.Waiters {
		if f == nil || f.Waiter(&r) {
			out = append(out, r.Session)
		}
	}
	return out
}
