package server

import (
	"testing"

	"drover/admin"
	"drover/net/wire"
)

func TestAdminQueryActAndChanged(t *testing.T) {
	s := startServer(t, Options{})
	w := dial(t, s.PeersEndpoint())
	w.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "w1", Slots: 1})
	expect[*wire.Welcome](t, w.recv())

	con := dial(t, s.InprocAdmin()) // the embedded console's transport
	con.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "console"})
	expect[*wire.Welcome](t, con.recv())
	con.send(&wire.Query{Req: 2, Query: admin.Query{View: admin.ViewWorkers, Limit: 10}})
	// A CHANGED for the worker's arrival may come before the page or
	// after it (they are sent at most ten a second).
	m := con.recv()
	if _, ok := m.(*wire.Changed); ok {
		m = con.recv()
	}
	page := expect[*wire.Page](t, m)
	if len(page.Page.Workers) != 1 || page.Page.Workers[0].ID != "w1" {
		t.Fatalf("workers page %+v: want w1", page.Page)
	}
	con.send(&wire.Action{Req: 3, Action: admin.Action{Kind: admin.ActPause}})
	m = con.recv()
	if _, ok := m.(*wire.Changed); ok {
		m = con.recv()
	}
	acted := expect[*wire.Acted](t, m)
	if acted.Result.Affected != 1 {
		t.Fatalf("pause: %+v", acted.Result)
	}
	// State changed: the console is told, once, without asking.
	expect[*wire.Changed](t, con.recv())
	con.send(&wire.Status{Req: 4})
	if tot := expect[*wire.Totals](t, con.recv()); !tot.Totals.Paused {
		t.Fatalf("totals %+v: want paused", tot.Totals)
	}

	// A read-only console may look but not act; a worker may not use the admin socket.
	ro := dial(t, s.AdminEndpoint())
	ro.send(&wire.Hello{Req: 1, Role: wire.RoleConsole, ID: "ro", ReadOnly: true})
	expect[*wire.Welcome](t, ro.recv())
	ro.send(&wire.Action{Req: 2, Action: admin.Action{Kind: admin.ActResume}})
	if e := expect[*wire.Error](t, ro.recv()); e.Code != wire.CodeForbidden || e.Req != 2 {
		t.Fatalf("read-only action: %+v, want 403 for request 2", e)
	}
	bad := dial(t, s.AdminEndpoint())
	bad.send(&wire.Hello{Req: 1, Role: wire.RoleWorker, ID: "sneaky", Slots: 1})
	if e := expect[*wire.Error](t, bad.recv()); e.Code != wire.CodeForbidden {
		t.Fatalf("worker on admin socket: %+v, want 403", e)
	}
	// Evict through the admin socket: the worker is told 410 and leaves.
	con.send(&wire.Action{Req: 5, Action: admin.Action{Kind: admin.ActEvict, Targets: []string{"w1"}}})
	for {
		m := con.recv()
		if a, ok := m.(*wire.Acted); ok {
			if a.Result.Affected != 1 {
				t.Fatalf("evict: %+v", a.Result)
			}
			break
		}
	}
	if d := expect[*wire.Disconnect](t, w.recv()); d.Code != wire.CodeEvicted {
		t.Fatalf("evicted worker got %+v, want DISCONNECT 410", d)
	}
}
