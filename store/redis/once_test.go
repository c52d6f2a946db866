package redis

import (
	"context"
	"io"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/coord/ledger"
)

// refusal is an error reply of Redis (it did not run the command).
type refusal string

func (r refusal) Error() string { return string(r) }
func (refusal) RedisError()     {}

// A command of a call marked by once goes to a node again only after
// Redis refused it (MOVED, TRYAGAIN: not run); one whose reply was cut or
// which was answered does not; an unmarked call is not held back.
func TestSendOnce(t *testing.T) {
	ctx := once(context.Background())
	var sent []string
	next := func(_ context.Context, cmds []goredis.Cmder) error {
		for _, c := range cmds {
			sent = append(sent, c.Args()[1].(string))
		}
		return nil
	}
	pipe := sendOnce{}.ProcessPipelineHook(next)
	moved, cut, answered := goredis.NewCmd(ctx, "get", "moved"), goredis.NewCmd(ctx, "get", "cut"), goredis.NewCmd(ctx, "get", "answered")
	cmds := []goredis.Cmder{moved, cut, answered}
	pipe(ctx, cmds)
	moved.SetErr(refusal("MOVED 3999 127.0.0.1:6381"))
	cut.SetErr(io.EOF)
	sent = nil
	if err := pipe(ctx, cmds); err != nil || len(sent) != 1 || sent[0] != "moved" {
		t.Fatalf("sent again %v, %v; want the refused command alone", sent, err)
	}
	moved.SetErr(refusal("ERR user_script:1: Script attempted to access a non local key"))
	sent = nil
	if err := pipe(ctx, cmds); err == nil || len(sent) != 0 {
		t.Fatalf("sent again %v, %v; want nothing after a script's own error (it may have written)", sent, err)
	}
	moved.SetErr(io.EOF)
	sent = nil
	if err := pipe(ctx, cmds); err != io.EOF || len(sent) != 0 {
		t.Fatalf("sent again %v, %v; want nothing and the cut's error", sent, err)
	}
	sent = nil
	pipe(context.Background(), cmds)
	if len(sent) != 3 {
		t.Fatalf("an unmarked call: sent %v; want all 3", sent)
	}
	one := sendOnce{}.ProcessHook(func(context.Context, goredis.Cmder) error { sent = append(sent, "one"); return nil })
	cmd := goredis.NewCmd(ctx, "incr", "n")
	sent = nil
	one(ctx, cmd)
	cmd.SetErr(io.ErrUnexpectedEOF)
	if err := one(ctx, cmd); err != io.ErrUnexpectedEOF || len(sent) != 1 {
		t.Fatalf("a command whose reply was cut, again: sent %d times, %v; want once, and its error", len(sent), err)
	}
}

// A ledger call whose reply was cut after Redis ran it is not run again
// by the client. Queue is not idempotent: run again, it answered
// wrong-state for the key the first run had queued, and the submit
// rejected a job whose key was queued for good (a submit again was a
// duplicate: the job never ran). The ledger reads back what a call whose
// reply was lost did: the key is queued, so the answer is OK.
func TestLedgerCallNotResentAfterCutReply(t *testing.T) {
	client(t) // the cluster, or skip
	cut := cutReply{marker: []byte("\r\nqueue\r\n")}
	cutting := newClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs(), Dialer: cut.dial})
	t.Cleanup(func() { cutting.Close() })
	l, err := newTestLedger(t, cutting, ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	items := []ledger.Item{webKey(0), webKey(1), webKey(50)} // two hosts
	for i, r := range l.RequestBatch(now, 1, 1, items, nil) {
		if r.Verdict != ledger.OK {
			t.Fatalf("request %d: %+v; want OK", i, r)
		}
	}
	fps := []id.Fingerprint{items[0].FP, items[1].FP, items[2].FP}
	cut.armed.Store(true)
	res := l.QueueBatch(now, 1, fps, nil)
	if cut.armed.Load() {
		t.Fatal("the queue call did not meet the cut")
	}
	for i, r := range res {
		rec, ok := l.Lookup(now, fps[i])
		if r.Verdict != ledger.OK || !ok || rec.State != ledger.Queued {
			t.Fatalf("queue %d after its reply was cut: %+v, record %+v (%v); want OK and the key queued", i, r, rec, ok)
		}
	}
}
