package server

import (
	"fmt"
	"testing"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
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
