package server

import (
	"fmt"
	"testing"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/net/wire"
)

// Every kind of coordinator error maps to its code, also when wrapped, and
// an error of no kind is the server's own failure.
func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want wire.Code
	}{
		{coord.ErrUnknownSession, wire.CodeHelloRequired},
		{fmt.Errorf("query jobs: %w", coord.ErrInvalid), wire.CodeMalformed},
		{fmt.Errorf("result: %w", broker.ErrBadOutcome), wire.CodeMalformed},
		{fmt.Errorf("result: %w", coord.ErrForbidden), wire.CodeForbidden},
		{fmt.Errorf("no key: %w", coord.ErrNotFound), wire.CodeNotFound},
		{fmt.Errorf("requeue: %w", broker.ErrUnknownJob), wire.CodeNotFound},
		{fmt.Errorf("drain: %w", broker.ErrUnknownWorker), wire.CodeNotFound},
		{fmt.Errorf("hello: %w", coord.ErrConflict), wire.CodeConflict},
		{fmt.Errorf("drain: %w", broker.ErrWrongState), wire.CodeConflict},
		{fmt.Errorf("something else"), wire.CodeInternal},
		// the server's own and the cluster's views: their kinds, not codes
		{coord.Errorf(coord.ErrInvalid, "query events: offset %d: want >= 0", -1), wire.CodeMalformed},
		{coord.Errorf(coord.ErrNotFound, "view results: this coordinator keeps no results"), wire.CodeNotFound},
	} {
		if got := errorCode(tc.err); got != tc.want {
			t.Errorf("errorCode(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Over a real socket: a query for a key the coordinator does not have is
// answered 404, a RESULT from a producer 403.
func TestCoordinatorErrorsOverTheWire(t *testing.T) {
	s := startServer(t, Options{})
	con := dial(t, s.AdminEndpoint())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console", ReadOnly: true})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Query{Req: 2, Query: admin.Query{View: admin.ViewJobs, Key: "0123456789abcdef0123456789abcdef"}})
	if e := expect[*wire.Error](t, con.recv()); e.Code != wire.CodeNotFound || e.Req != 2 {
		t.Fatalf("query of an unknown key: %+v, want 404 for request 2", e)
	}

	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p"})
	expect[*wire.Welcome](t, p.recv())
	p.send(&wire.Result{Req: 2, Items: []wire.ResultItem{{JobID: 1, Attempt: 1, Outcome: wire.OutcomeOK}}})
	if e := expect[*wire.Error](t, p.recv()); e.Code != wire.CodeForbidden || e.Req != 2 {
		t.Fatalf("RESULT from a producer: %+v, want 403 for request 2", e)
	}
}

// The results view's filter is the filter grammar on crawler and
// processor (names ignore case, several values), and any other term is
// refused with 400.
func TestResultsFilter(t *testing.T) {
	s := startServer(t, Options{Results: &ResultsOptions{}})
	w := dial(t, s.PeersEndpoint())
	w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Slots: 10})
	expect[*wire.Welcome](t, w.recv())
	p := dial(t, s.PeersEndpoint())
	p.send(&wire.Hello{Req: 1, Role: wire.RoleProducer, ID: "p"})
	expect[*wire.Welcome](t, p.recv())
	var items []wire.SubmitItem
	for _, k := range [][2]string{{"c1", "fetch"}, {"c1", "render"}, {"C2", "fetch"}} {
		items = append(items, wire.SubmitItem{Key: id.Key{Crawler: k[0], Processor: k[1], URL: "http://a.test/" + k[0] + k[1]}})
	}
	p.send(&wire.Submit{Req: 2, Jobs: items})
	expect[*wire.Submitted](t, p.recv())
	var results []wire.ResultItem
	for len(results) < len(items) {
		m := w.recv()
		if j, ok := m.(*wire.Job); ok {
			for _, it := range j.Jobs {
				results = append(results, wire.ResultItem{JobID: it.JobID, Attempt: it.Attempt, Outcome: wire.OutcomeOK})
			}
		}
	}
	w.send(&wire.Result{Req: 3, Items: results})
	expect[*wire.ResultOK](t, w.recv())

	con := dial(t, s.AdminEndpoint())
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console", ReadOnly: true})
	expect[*wire.Welcome](t, con.recv())
	req := uint64(1)
	query := func(f string) wire.Message {
		req++
		con.send(&wire.Query{Req: req, Query: admin.Query{View: admin.ViewResults, Filter: f}})
		for {
			if m := con.recv(); fmt.Sprintf("%T", m) != "*wire.Changed" {
				return m
			}
		}
	}
	for f, want := range map[string]int{"": 3, "crawler=c1": 2, "crawler=c2": 1, "crawler=c1,c2 processor=FETCH": 2, "processor=none": 0} {
		for deadline := time.Now().Add(10 * time.Second); ; {
			page := expect[*wire.Page](t, query(f))
			if f == "" && len(page.Page.Results) < 3 && time.Now().Before(deadline) {
				continue // the results become readable once durable: ask again
			}
			if len(page.Page.Results) != want {
				t.Errorf("results %q: %d rows, want %d", f, len(page.Page.Results), want)
			}
			break
		}
	}
	if e := expect[*wire.Error](t, query("state=done")); e.Code != wire.CodeMalformed {
		t.Errorf("results with a state term: %+v, want 400", e)
	}
}

// coord.Errorf's text is its format's alone: the kind picks the code and
// is not spelled in the message an operator reads.
func TestKindErrorText(t *testing.T) {
	err := coord.Errorf(coord.ErrInvalid, "view results: filter %q: want only crawler= and processor= terms", "host=x")
	if want := `view results: filter "host=x": want only crawler= and processor= terms`; err.Error() != want {
		t.Fatalf("text %q, want %q", err, want)
	}
}
