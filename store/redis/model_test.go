package redis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"drover/coord/id"
	"drover/coord/ledger"
)

// The differential test: random operations applied to the in-memory
// ledger and to the Redis one must give the same verdicts, deferred
// answers, events, writes, lookups, waiter queues, counts and deadlines
// after every step (coord/ledger's model test holds the in-memory one to
// the rules).
func TestSameAsMemory(t *testing.T) {
	rdb := client(t)
	seeds := []uint64{1, 2, 3, 4}
	steps := 300
	if testing.Short() {
		seeds, steps = seeds[:2], 150
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := ledger.Config{RequestTTL: 30 * time.Second, DoneTTL: time.Minute, FailedTTL: 20 * time.Second, Persist: true, SweepLimit: 3}
			mem, err := ledger.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			red, err := newTestLedger(t, rdb, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 19))
			labels := []string{"a", "b", "c", "d", "e", "f"}
			now := base
			for step := 0; step < steps; step++ {
				s := id.Session(1 + rng.IntN(4))
				lab := labels[rng.IntN(len(labels))]
				var what string
				var gotM, gotR any
				switch op := rng.IntN(10); op {
				case 0, 1:
					req := uint64(rng.IntN(100))
					what = fmt.Sprintf("request s=%d req=%d %s", s, req, lab)
					v1, r1 := mem.Request(now, s, req, key(lab), fpOf(lab))
					v2, r2 := red.Request(now, s, req, key(lab), fpOf(lab))
					gotM, gotR = []any{v1, r1}, []any{v2, r2}
				case 2:
					var items []ledger.Item
					for range 1 + rng.IntN(4) {
						l := labels[rng.IntN(len(labels))]
						items = append(items, ledger.Item{Key: key(l), FP: fpOf(l)})
					}
					what = fmt.Sprintf("request-batch s=%d %d items", s, len(items))
					gotM, gotR = mem.RequestBatch(now, s, 7, items, nil), red.RequestBatch(now, s, 7, items, nil)
				case 3, 4:
					what = fmt.Sprintf("queue s=%d %s", s, lab)
					v1, r1 := mem.Queue(now, s, fpOf(lab))
					v2, r2 := red.Queue(now, s, fpOf(lab))
					if r2 == ledger.ReasonUnknown && r1 == ledger.ReasonUnknown {
						r2 = r1
					}
					gotM, gotR = []any{v1, r1}, []any{v2, r2}
				case 5:
					o := ledger.Outcome(rng.IntN(2))
					what = fmt.Sprintf("done %s %v", lab, o)
					mem.Done(now, key(lab), fpOf(lab), o)
					red.Done(now, key(lab), fpOf(lab), o)
				case 6:
					what = fmt.Sprintf("release s=%d", s)
					mem.Release(now, s)
					red.Release(now, s)
				case 7:
					what = "requeue " + lab
					mem.Requeue(now, key(lab), fpOf(lab))
					red.Requeue(now, key(lab), fpOf(lab))
				case 8:
					what = "tick"
					mem.Tick(now)
					red.Tick(now)
				case 9:
					d := time.Duration(1+rng.IntN(20)) * time.Second
					what = "advance " + d.String()
					now = now.Add(d)
				}
				if err := red.Err(); err != nil {
					t.Fatalf("step %d (%s): store error: %v", step, what, err)
				}
				diff := func(part string, a, b any) {
					t.Helper()
					if d := cmp.Diff(a, b); d != "" {
						t.Fatalf("step %d (%s): %s differ (-memory +redis):\n%s", step, what, part, d)
					}
				}
				diff("results", gotM, gotR)
				diff("answers", mem.TakeAnswers(nil), red.TakeAnswers(nil))
				diff("events", mem.TakeEvents(nil), red.TakeEvents(nil))
				diff("writes", mem.TakeWrites(nil), red.TakeWrites(nil))
				for _, l := range labels {
					r1, ok1 := mem.Lookup(now, fpOf(l))
					r2, ok2 := red.LookupKey(now, key(l), fpOf(l))
					if r1.State == ledger.Done {
						r1.Key = id.Key{}
					}
					diff("lookup "+l, []any{r1, ok1}, []any{r2, ok2})
					diff("waiters "+l, mem.Waiters(fpOf(l)), red.Waiters(fpOf(l)))
				}
				diff("counts", mem.Counts(), red.Counts())
				d1, ok1 := mem.NextDeadline()
				d2, ok2 := red.NextDeadline()
				if ok1 && ok2 && d2.Before(d1) { // the Redis ledger may know a stale, earlier one: harmless, never later
					d2 = d1
				}
				diff("deadline", []any{d1, ok1}, []any{d2, ok2})
				diff("queued", slices.Collect(fpsOf(mem.Queued(0, 100))), slices.Collect(fpsOf(red.Queued(0, 100))))
				diff("requested", slices.Collect(fpsOf(mem.Requested(0, 100))), slices.Collect(fpsOf(red.Requested(0, 100))))
			}
		})
	}
}

func fpsOf(rs []ledger.Record) func(func(id.Fingerprint) bool) {
	return func(yield func(id.Fingerprint) bool) {
		for _, r := range rs {
			if !yield(r.FP) {
				return
			}
		}
	}
}
