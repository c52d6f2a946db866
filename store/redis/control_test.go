package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/ledger"
)

// An action a posts to b reaches b's Requests, and b's Reply is what a's
// Ask returns; an action nobody answers fails Ask after the store's
// timeout, naming the coordinator; a read with nothing posted waits and
// returns none.
func TestControlAskReply(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	want := admin.Action{Kind: admin.ActRequeue, Targets: []string{strings.Repeat("ab", 16)}}
	type asked struct {
		res admin.ActionResult
		err error
	}
	got := make(chan asked, 1)
	go func() {
		res, err := a.JobView().Ask(b.coord, want)
		got <- asked{res, err}
	}()
	ctx := context.Background()
	var acts []admin.Action
	var replies []string
	for deadline := time.Now().Add(20 * time.Second); len(acts) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("b read no action")
		}
		var err error
		if acts, replies, err = b.JobView().Requests(ctx, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if len(acts) != 1 || acts[0].Kind != want.Kind || acts[0].Targets[0] != want.Targets[0] {
		t.Fatalf("b read %+v; want %+v", acts, want)
	}
	if err := b.JobView().Reply(replies[0], admin.ActionResult{Affected: 1, Errors: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || r.res.Affected != 1 || len(r.res.Errors) != 1 {
		t.Fatalf("a's answer: %+v, %v; want b's", r.res, r.err)
	}
	// Nobody answers: Ask fails after the timeout, naming b.
	if _, err := a.JobView().Ask(b.coord, want); err == nil || !strings.Contains(err.Error(), "coordinator "+b.coord+" did not answer") {
		t.Fatalf("unanswered ask: %v; want it to say coordinator %s did not answer", err, b.coord)
	}
	// The unanswered action is still read (and may be carried out).
	if acts, _, err := b.JobView().Requests(ctx, time.Second); err != nil || len(acts) != 1 {
		t.Fatalf("b's actions after the unanswered ask: %+v, %v; want the one posted", acts, err)
	}
	if acts, _, err := b.JobView().Requests(ctx, 100*time.Millisecond); err != nil || len(acts) != 0 {
		t.Fatalf("b's actions with none posted: %+v, %v; want none", acts, err)
	}
}
