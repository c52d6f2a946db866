package client

import (
	"context"
	"fmt"
	"testing"
	"time"

	"drover/clock"
	"drover/net/internal/conn"
	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// TestSubmitResentAfterSessionLoss: a SUBMIT whose session ends while some
// of its items wait is sent again on the next session, those items only,
// with the same request id, and the call returns every status.
func TestSubmitResentAfterSessionLoss(t *testing.T) {
	srv := testsrv.NewScripted(t)
	c := dialScripted(t, srv, Options{Connect: srv.EP, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	a, b := key("http://retry.test/a"), key("http://retry.test/b")
	type res struct {
		st  []Submitted
		err error
	}
	got := make(chan res, 1)
	go func() {
		st, err := c.Submit(context.Background(), []wire.SubmitItem{{Key: a}, {Key: b}})
		got <- res{st, err}
	}()
	sub := testsrv.Expect[*wire.Submit](t, srv.Next())
	if len(sub.Jobs) != 2 {
		t.Fatalf("SUBMIT of %d jobs, want 2", len(sub.Jobs))
	}
	srv.Send(&wire.Submitted{Req: sub.Req, Items: []wire.SubmittedItem{
		{Status: wire.SubmitAccepted, JobID: 1, Fingerprint: a.Fingerprint()},
		{Status: wire.SubmitWait, Fingerprint: b.Fingerprint(), Reason: "requested"},
	}})
	srv.Send(&wire.Disconnect{Code: wire.CodeUnavailable, Reason: "restarting"})
	srv.Greet()
	again := testsrv.Expect[*wire.Submit](t, srv.Next())
	if len(again.Jobs) != 1 || again.Jobs[0].Key != b || again.Req != sub.Req {
		t.Fatalf("re-sent SUBMIT %+v (req %d): want only the waiting job, under the first send's request id %d (the server knows the request by it)", again.Jobs, again.Req, sub.Req)
	}
	srv.Send(&wire.Submitted{Req: again.Req, Items: []wire.SubmittedItem{{Status: wire.SubmitAccepted, JobID: 2, Fingerprint: b.Fingerprint()}}})
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.st[0].JobID != 1 || r.st[1].JobID != 2 || r.st[1].Status != wire.SubmitAccepted {
		t.Fatalf("statuses %+v: want job 1 from the first session and job 2 from the second", r.st)
	}
}

// TestRequestTimeoutIsPerReply: the timeout bounds the wait for a reply,
// not a deferred ANSWER: a request whose VERDICTS said wait outlives it.
// The timeout runs on a fake clock, so a loaded machine slow to carry the
// VERDICTS cannot run it out first.
func TestRequestTimeoutIsPerReply(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := testsrv.NewScripted(t)
	srv.Heartbeat = time.Hour // the session outlives the fake minutes below
	const timeout = 7 * time.Second
	c := dialScripted(t, srv, Options{Connect: srv.EP, Timeout: timeout, Clock: clk})
	k := key("http://slow.test/")
	got := make(chan verdictResult, 1)
	go func() {
		vs, err := c.Request(context.Background(), keysOf(k))
		got <- verdictResult{vs, err}
	}()
	req := testsrv.Expect[*wire.Request](t, srv.Next())
	srv.Send(&wire.Verdicts{Req: req.Req, Items: []wire.VerdictItem{{Fingerprint: k.Fingerprint(), Verdict: wire.VerdictWait, Reason: "requested"}}})
	testsrv.Eventually(t, wait, "the client reading VERDICTS wait", func() bool {
		read := make(chan bool, 1)
		if !c.c.Post(func(*conn.Link) { cl := c.e.calls[req.Req]; read <- cl != nil && !cl.awaiting.Load() }) {
			return false
		}
		return <-read
	})
	// Several timeouts pass without a reply: the call must still wait.
	clk.Advance(5 * timeout)
	select {
	case r := <-got:
		t.Fatalf("request ended before its ANSWER: %+v, %v", r.vs, r.err)
	case <-time.After(100 * time.Millisecond): // a give-up would come at once
	}
	srv.Send(&wire.Answer{Req: req.Req, Items: []wire.VerdictItem{{Fingerprint: k.Fingerprint(), Verdict: wire.VerdictOK, Reason: "handover"}}})
	var r verdictResult
	select {
	case r = <-got:
	case <-time.After(wait):
		t.Fatal("the request did not return after its ANSWER")
	}
	if r.err != nil || r.vs[0].Verdict != wire.VerdictOK || r.vs[0].Reason != "handover" {
		t.Fatalf("request: %+v, %v; want ok (handover)", r.vs, r.err)
	}
}

// TestSubmitInFlightBounded: a large submit keeps at most inFlight of its
// batches sent and unanswered, and sends the next as each is answered (it
// sent all of them at once: the coordinator held them all, and a lost
// session sent them all again).
func TestSubmitInFlightBounded(t *testing.T) {
	const batches = inFlight + 3
	jobs := make([]wire.SubmitItem, batches*wire.MaxBatch)
	for i := range jobs {
		jobs[i].Key = key(fmt.Sprintf("http://window.test/%d", i))
	}
	srv := testsrv.NewScripted(t)
	// The window is the test, not liveness: encoding batches of 10,000
	// jobs under -race on a loaded machine outlasted 1 s x 3 of silence,
	// and the client, taking the session for lost, dialled again.
	srv.Heartbeat = time.Minute
	c := dialScripted(t, srv, Options{Connect: srv.EP, Timeout: time.Minute})
	got := make(chan error, 1)
	go func() {
		_, err := c.Submit(context.Background(), jobs)
		got <- err
	}()
	answer := func(sub *wire.Submit) {
		items := make([]wire.SubmittedItem, len(sub.Jobs))
		for i, j := range sub.Jobs {
			items[i] = wire.SubmittedItem{Status: wire.SubmitAccepted, JobID: uint64(i + 1), Fingerprint: j.Key.Fingerprint()}
		}
		srv.Send(&wire.Submitted{Req: sub.Req, Items: items})
	}
	var sent []*wire.Submit
	for range inFlight {
		sent = append(sent, testsrv.Expect[*wire.Submit](t, srv.Next()))
	}
	for i := range batches {
		// Sent and unanswered: inFlight of them; nothing more comes.
		if i+inFlight < batches && srv.Arrives(300*time.Millisecond) {
			t.Fatalf("batch %d sent with %d unanswered, want at most %d in flight", i+inFlight+1, inFlight, inFlight)
		}
		answer(sent[i])
		if i+inFlight < batches {
			next := testsrv.Expect[*wire.Submit](t, srv.Next())
			if first := next.Jobs[0].Key.URL; first != jobs[(i+inFlight)*wire.MaxBatch].Key.URL {
				t.Fatalf("after batch %d answered, a batch starting with %s sent, want batch %d", i+1, first, i+inFlight+1)
			}
			sent = append(sent, next)
		}
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// dialScripted dials the scripted server with opts (Connect set to it)
// while it greets the client, and closes the client at the test's end.
func dialScripted(t *testing.T, srv *testsrv.Scripted, opts Options) *Client {
	t.Helper()
	dialed := make(chan *Client, 1)
	go func() {
		c, err := Dial(ctxT(t), opts)
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	srv.Greet()
	c := <-dialed
	if c == nil {
		t.FailNow()
	}
	t.Cleanup(func() { c.Close() })
	return c
}
