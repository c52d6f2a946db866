package client

import (
	"errors"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/net/internal/testsrv"
	"drover/net/wire"
	"drover/tui"
)

// The admin client is the console's backend.
var _ tui.Backend = (*Admin)(nil)

func TestAdminTotalsQueryAct(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{})
	if adm.Endpoint() != s.AdminEndpoint() {
		t.Fatalf("endpoint %q, want %q", adm.Endpoint(), s.AdminEndpoint())
	}
	ctx := ctxT(t)
	p := dial(t, s, Options{})
	if _, err := p.Submit(ctx, []wire.SubmitItem{{Key: key("http://a.test/1")}, {Key: key("http://a.test/2")}}); err != nil {
		t.Fatal(err)
	}
	tot, err := adm.Totals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Queued != 2 || tot.Paused {
		t.Fatalf("totals %+v: want 2 queued, not paused", tot)
	}
	page, err := adm.Query(ctx, admin.Query{View: admin.ViewJobs, Limit: 10, Filter: "state=queued"})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 2 || len(page.Jobs) != 2 {
		t.Fatalf("page %+v: want the 2 queued jobs", page)
	}
	res, err := adm.Act(ctx, admin.Action{Kind: admin.ActPause})
	if err != nil || res.Affected != 1 {
		t.Fatalf("pause: %+v, %v; want 1 affected", res, err)
	}
	if tot, err := adm.Totals(ctx); err != nil || !tot.Paused {
		t.Fatalf("totals after pause: %+v, %v; want paused", tot, err)
	}
	res, err = adm.Act(ctx, admin.Action{Kind: admin.ActEvict, Targets: []string{"nobody"}})
	if err != nil || res.Affected != 0 || len(res.Errors) != 1 {
		t.Fatalf("evict unknown worker: %+v, %v; want one error, nothing affected", res, err)
	}
	if _, err := adm.Query(ctx, admin.Query{View: "nonsense"}); !wire.IsCode(err, wire.CodeMalformed) {
		t.Fatalf("query of an unknown view: %v, want the encoder's 400", err)
	}
}

func TestAdminReadOnly(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{ReadOnly: true})
	_, err := adm.Act(ctxT(t), admin.Action{Kind: admin.ActPause})
	if !wire.IsCode(err, wire.CodeForbidden) {
		t.Fatalf("read-only act: %v, want ERROR 403", err)
	}
	if _, err := adm.Totals(ctxT(t)); err != nil {
		t.Fatalf("read-only totals: %v", err)
	}
}

// TestAdminChanged: CHANGED pushes reach Changed.
func TestAdminChanged(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s.AdminEndpoint(), AdminOptions{})
	drain := func() {
		for {
			select {
			case <-adm.Changed():
			default:
				return
			}
		}
	}
	// The server pushes CHANGED to consoles it knows: make sure it has
	// answered one request, then drop the signal of the connection.
	if _, err := adm.Totals(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	drain()
	p := dial(t, s, Options{})
	if _, err := p.Submit(ctxT(t), []wire.SubmitItem{{Key: key("http://ch.test/")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-adm.Changed():
	case <-time.After(wait):
		t.Fatal("no change signalled after a submit")
	}
	adm.Close()
	select {
	case _, ok := <-adm.Changed():
		for ok {
			_, ok = <-adm.Changed()
		}
	case <-time.After(wait):
		t.Fatal("Changed not closed by Close")
	}
}

// TestAdminInproc: the embedded console's transport, over the server's
// inproc admin endpoint.
func TestAdminInproc(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	adm := dialAdmin(t, s.InprocAdmin(), AdminOptions{})
	if adm.Endpoint() != "embedded" {
		t.Fatalf("endpoint %q, want embedded", adm.Endpoint())
	}
	p := dial(t, s, Options{})
	if _, err := p.Request(ctxT(t), []id.Key{key("http://in.test/")}); err != nil {
		t.Fatal(err)
	}
	tot, err := adm.Totals(ctxT(t))
	if err != nil || tot.KeysRequested != 1 {
		t.Fatalf("totals over inproc: %+v, %v; want 1 key requested", tot, err)
	}
}

// TestAdminRecoversAfterRestart: calls fail at once while the coordinator
// is away (the console shows STALE) and work again once a new one runs on
// the same endpoint, without the caller doing anything.
func TestAdminRecoversAfterRestart(t *testing.T) {
	s := testsrv.Start(t, testsrv.Options{})
	peers, ep := s.PeersEndpoint(), s.AdminEndpoint()
	adm := dialAdmin(t, ep, AdminOptions{ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond})
	if _, err := adm.Totals(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	testsrv.Eventually(t, wait, "calls failing while the server is away", func() bool {
		_, err := adm.Totals(ctxT(t))
		return errors.Is(err, ErrNotConnected) || errors.Is(err, ErrTimeout)
	})
	s2 := testsrv.Start(t, testsrv.Options{Peers: peers, Admin: ep})
	p := dial(t, s2, Options{})
	if _, err := p.Submit(ctxT(t), []wire.SubmitItem{{Key: key("http://r.test/")}}); err != nil {
		t.Fatal(err)
	}
	testsrv.Eventually(t, wait, "totals from the new server", func() bool {
		tot, err := adm.Totals(ctxT(t))
		return err == nil && tot.Queued == 1
	})
}
