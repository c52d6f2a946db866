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

// readOne reads the one action posted to l, with a deadline.
func readOne(t *testing.T, l *Ledger) (admin.Action, string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		acts, tickets, err := l.JobView().Requests(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) > 1 {
			t.Fatalf("coordinator %s read %d actions; want one", l.coord, len(acts))
		}
		if len(acts) == 1 {
			return acts[0], tickets[0]
		}
	}
	t.Fatalf("coordinator %s read no action", l.coord)
	return admin.Action{}, ""
}

// An action its holder read and did not answer is not lost: a reader
// started again reads it again and answers it; a holder that dies with
// actions read or unread has them answered as not done by its sweeper,
// saying why; one that leaves the store answers them so itself; and no
// control list stays behind.
func TestControlNotLost(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	// c has a client of its own: leaving closes it.
	c, err := newLedger(context.Background(), client(t), Config{Prefix: a.cfg.Prefix, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.halt() })
	ctx := context.Background()
	av := a.JobView()
	evict := admin.Action{Kind: admin.ActEvict, Targets: []string{"w-1"}}
	key := strings.Repeat("cd", 16)
	requeue := admin.Action{Kind: admin.ActRequeue, Targets: []string{key}}
	answer := func(c string, act admin.Action, reply string) admin.ActionResult {
		t.Helper()
		res, err := av.await(c, act, reply, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	gone := func(l *Ledger) {
		t.Helper()
		if n, err := rdb.Exists(ctx, l.controlKey(l.coord), l.doingKey(l.coord)).Result(); err != nil || n != 0 {
			t.Fatalf("coordinator %s's control lists: %d exist (%v); want none", l.coord, n, err)
		}
	}

	// Read, the reader stops, a reader started again reads it again.
	reply, err := av.post(b.coord, evict)
	if err != nil {
		t.Fatal(err)
	}
	got, ticket := readOne(t, b)
	if got.Kind != admin.ActEvict {
		t.Fatalf("b read %+v; want the evict", got)
	}
	b.JobView().reread.Store(false) // a reader started again
	again, ticket2 := readOne(t, b)
	if again.Kind != admin.ActEvict || ticket2 != ticket {
		t.Fatalf("b's reader started again read %+v; want the evict read before", again)
	}
	if err := b.JobView().Reply(ticket2, admin.ActionResult{Affected: 1}); err != nil {
		t.Fatal(err)
	}
	if res := answer(b.coord, evict, reply); res.Affected != 1 {
		t.Fatalf("a's answer: %+v; want b's", res)
	}
	if n, _ := rdb.LLen(ctx, b.doingKey(b.coord)).Result(); n != 0 {
		t.Fatalf("b's processing list holds %d after its answer; want none", n)
	}

	// b dies with one action read and one not: a sweeps it and both are
	// answered as not done, saying why.
	r1, err := av.post(b.coord, evict)
	if err != nil {
		t.Fatal(err)
	}
	readOne(t, b)
	r2, err := av.post(b.coord, requeue)
	if err != nil {
		t.Fatal(err)
	}
	killAndSweep(t, b, a, c)
	res := answer(b.coord, evict, r1)
	if want := `evict worker "w-1": not done: coordinator ` + b.coord + " died before carrying it out"; res.Affected != 0 || len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0], want) {
		t.Fatalf("answer to the evict b read before dying: %+v; want one line beginning %q", res, want)
	}
	res = answer(b.coord, requeue, r2)
	if want := "requeue key " + key + ": not done: coordinator " + b.coord + " died before carrying it out; its jobs went back to the cluster's queue with its sweep"; len(res.Errors) != 1 || res.Errors[0] != want {
		t.Fatalf("answer to the requeue b never read: %+v; want %q", res, want)
	}
	gone(b)

	// c leaves with an action read and not answered.
	r3, err := av.post(c.coord, evict)
	if err != nil {
		t.Fatal(err)
	}
	readOne(t, c)
	if err := c.Leave(time.Now()); err != nil {
		t.Fatal(err)
	}
	res = answer(c.coord, evict, r3)
	if want := `evict worker "w-1": not done: coordinator ` + c.coord + " stopped before carrying it out"; len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0], want) {
		t.Fatalf("answer to the evict c read before leaving: %+v; want one line beginning %q", res, want)
	}
	gone(c)
}

// A coordinator that dies with evicts and drains posted to it has each
// target now connected to another live coordinator forwarded there (the
// one whose summary lists it, or the sweeper's own), which answers the
// asker on the same reply list; the targets no live coordinator has are
// answered as not done by the dead one, a drain kept in the cluster
// saying so; the asker gets both parts as one answer.
func TestControlForwardedWhereWorkersWent(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 3, ledger.Config{})
	a, b, c := ls[0], ls[1], ls[2]
	ctx := context.Background()
	av := a.JobView()
	// w-9 left b for c; w-8 is on a (the sweeper, or the one whose
	// summary lists it); w-0 is nowhere.
	c.JobView().NoteWorkers([]string{"w-9"})
	av.NoteWorkers([]string{"w-8"})
	for _, l := range []*Ledger{a, c} {
		if err := l.PublishSummary(ctx, admin.ClusterCoordinator{Heartbeat: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	evict := admin.Action{Kind: admin.ActEvict, Targets: []string{"w-9", "w-0", "w-8"}}
	drain := admin.Action{Kind: admin.ActDrain, Targets: []string{"w-0"}}
	if _, err := av.MarkDrained(drain.Targets); err != nil {
		t.Fatal(err)
	}
	r1, err := av.post(b.coord, evict)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := av.post(b.coord, drain)
	if err != nil {
		t.Fatal(err)
	}
	killAndSweep(t, b, a, c)
	// c and a each read their part of the evict, and answer it.
	for _, l := range []*Ledger{c, a} {
		got, ticket := readOne(t, l)
		want := map[*Ledger]string{c: "w-9", a: "w-8"}[l]
		if got.Kind != admin.ActEvict || len(got.Targets) != 1 || got.Targets[0] != want {
			t.Fatalf("coordinator %s read %+v; want the evict of %s forwarded", l.coord, got, want)
		}
		if err := l.JobView().Reply(ticket, admin.ActionResult{Affected: 1}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := av.await(b.coord, evict, r1, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := `evict worker "w-0": not done: coordinator ` + b.coord + " died before carrying it out"; res.Affected != 2 || len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0], want) {
		t.Fatalf("answer to the evict b left: %+v; want 2 carried out (w-9 by c, w-8 by a) and one line beginning %q", res, want)
	}
	res, err = av.await(b.coord, drain, r2, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := "it stays drained in the cluster"; res.Affected != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], want) {
		t.Fatalf("answer to the drain of a worker nowhere live: %+v; want one line saying %q", res, want)
	}
	if n, err := rdb.Exists(ctx, b.controlKey(b.coord), b.doingKey(b.coord)).Result(); err != nil || n != 0 {
		t.Fatalf("b's control lists after its sweep: %d exist (%v); want none", n, err)
	}
}

// An answer covering part of an action's targets, with the rest never
// answered, is returned with a line saying how many were not, once the
// wait is over; the lines of a coordinator that carried it out come
// prefixed with its id.
func TestControlPartAnswered(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	act := admin.Action{Kind: admin.ActEvict, Targets: []string{"w-1", "w-2", "w-3"}}
	reply, err := a.JobView().post(b.coord, act)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := a.ctx()
	defer cancel()
	if err := a.answer(ctx, reply, answerMsg{ActionResult: admin.ActionResult{Affected: 1, Errors: []string{"x"}}, By: b.coord, Covers: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := a.JobView().await(b.coord, act, reply, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Affected != 1 || len(res.Errors) != 2 || res.Errors[0] != "on coordinator "+b.coord+": x" || !strings.Contains(res.Errors[1], "1 of its 3 targets not answered") {
		t.Fatalf("a part answered: %+v; want b's line prefixed and one saying 1 of 3 not answered", res)
	}
}

// killAndSweep halts coordinator b, ends its heartbeat as its expiry
// would, and runs a's and c's maintenance until one of them swept it.
func killAndSweep(t *testing.T, b, a, c *Ledger) {
	t.Helper()
	b.halt()
	if err := b.rdb.Del(context.Background(), b.aliveKey(b.coord)).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); a.Swept+c.Swept == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("b not swept: %v %v", a.err, c.err)
		}
		a.Maintain(time.Now())
		c.Maintain(time.Now())
	}
}
