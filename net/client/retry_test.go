package client

import (
	"context"
	"testing"
	"time"

	"drover/net/internal/testsrv"
	"drover/net/wire"
)

// TestSubmitResentAfterSessionLoss: a SUBMIT whose session ends while some
// of its items wait is sent again on the next session, those items only,
// with the same request id, and the call returns every status.
func TestSubmitResentAfterSessionLoss(t *testing.T) {
	srv := testsrv.NewScripted(t)
	dialed := make(chan *Client, 1)
	go func() {
		c, err := Dial(ctxT(t), Options{Connect: srv.EP, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond})
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
func TestRequestTimeoutIsPerReply(t *testing.T) {
	srv := testsrv.NewScripted(t)
	const timeout = 100 * time.Millisecond
	dialed := make(chan *Client, 1)
	go func() {
		c, err := Dial(ctxT(t), Options{Connect: srv.EP, Timeout: timeout})
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
	k := key("http://slow.test/")
	got := make(chan verdictResult, 1)
	go func() {
		vs, err := c.Request(context.Background(), keysOf(k))
		got <- verdictResult{vs, err}
	}()
	req := testsrv.Expect[*wire.Request](t, srv.Next())
	srv.Send(&wire.Verdicts{Req: req.Req, Items: []wire.VerdictItem{{Fingerprint: k.Fingerprint(), Verdict: wire.VerdictWait, Reason: "requested"}}})
	// Several timeouts pass without a reply: the call must still wait (the
	// session stays up: the scripted WELCOME gave 1s × 3 of liveness).
	select {
	case r := <-got:
		t.Fatalf("request ended before its ANSWER: %+v, %v", r.vs, r.err)
	case <-time.After(5 * timeout):
	}
	srv.Send(&wire.Answer{Req: req.Req, Items: []wire.VerdictItem{{Fingerprint: k.Fingerprint(), Verdict: wire.VerdictOK, Reason: "handover"}}})
	r := <-got
	if r.err != nil || r.vs[0].Verdict != wire.VerdictOK || r.vs[0].Reason != "handover" {
		t.Fatalf("request: %+v, %v; want ok (handover)", r.vs, r.err)
	}
}
