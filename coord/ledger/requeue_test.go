package ledger

import (
	"testing"
	"time"

	"drover/coord/id"
)

func TestRequeue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		prepare func(l *Ledger, k id.Key, fp id.Fingerprint)
		answers int // deferred answers Requeue produces
	}{
		{"absent", func(*Ledger, id.Key, id.Fingerprint) {}, 0},
		{"done", func(l *Ledger, k id.Key, fp id.Fingerprint) { l.Done(t0, k, fp, DoneOK) }, 0},
		{"failed", func(l *Ledger, k id.Key, fp id.Fingerprint) { l.Done(t0, k, fp, DoneFailed) }, 0},
		{"queued", func(l *Ledger, k id.Key, fp id.Fingerprint) {
			l.Request(t0, 1, 1, k, fp)
			l.Queue(t0, 1, fp)
		}, 0},
		{"requested with a waiter", func(l *Ledger, k id.Key, fp id.Fingerprint) {
			l.Request(t0, 1, 1, k, fp)
			l.Request(t0, 2, 9, k, fp)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := New(Config{DoneTTL: time.Hour, FailedTTL: time.Hour, Persist: true})
			if err != nil {
				t.Fatal(err)
			}
			k := id.Key{Crawler: "c", Processor: "p", URL: "http://a.test/"}
			fp := k.Fingerprint()
			tc.prepare(l, k, fp)
			l.TakeAnswers(nil)
			l.Requeue(t0.Add(time.Second), k, fp)
			rec, ok := l.Lookup(t0.Add(time.Second), fp)
			if !ok || rec.State != Queued {
				t.Fatalf("after requeue: %+v %v, want queued", rec, ok)
			}
			if got := len(l.TakeAnswers(nil)); got != tc.answers {
				t.Fatalf("%d deferred answers, want %d", got, tc.answers)
			}
			if v, r := l.Request(t0.Add(2*time.Second), 3, 1, k, fp); v != No || r != ReasonQueued {
				t.Fatalf("request after requeue: %v %v, want no (queued)", v, r)
			}
			if err := l.check(); err != nil {
				t.Fatal(err)
			}
			writes := l.TakeWrites(nil)
			if len(writes) == 0 || writes[len(writes)-1].Op != PutQueued {
				t.Fatalf("writes %+v: want a final put-queued", writes)
			}
		})
	}
}
