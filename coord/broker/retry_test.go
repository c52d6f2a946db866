package broker

import (
	"strconv"
	"testing"

	"drover/coord/id"
)

// TestAvoidScanBound: a worker passes over at most avoidScan jobs that just
// failed on it at the head of a lane while another worker is ready;
// with none other ready it takes the head itself.
func TestAvoidScanBound(t *testing.T) {
	for _, c := range []struct {
		name    string
		failed  int  // jobs at the head that failed on worker a
		other   bool // worker b is ready
		wantNew bool // a picks the fresh job behind them (else nil, or the head without b)
	}{
		{"within the bound: the fresh job", avoidScan, true, true},
		{"past the bound: none", avoidScan + 1, true, false},
		{"no other worker: the head", avoidScan + 1, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := New(Config{Jitter: -1, RetryStart: -1, MaxRequestFailures: 2})
			if err != nil {
				t.Fatal(err)
			}
			now := epoch
			if err := b.Register(now, 1, WorkerInfo{ID: "a", Slots: c.failed}, nil); err != nil {
				t.Fatal(err)
			}
			for i := range c.failed {
				key := id.Key{URL: "http://h/" + strconv.Itoa(i)}
				b.Submit(now, Spec{Key: key, Host: "h"})
			}
			if as := b.Dispatch(now, nil); len(as) != c.failed {
				t.Fatalf("dispatched %d, want %d", len(as), c.failed)
			}
			for i := range c.failed {
				if err := result(b, now, 1, JobID(i+1), Outcome{Kind: Internal, Error: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			fresh := b.Submit(now, Spec{Key: id.Key{URL: "http://h/fresh"}, Host: "h"})
			if c.other {
				if err := b.Register(now, 2, WorkerInfo{ID: "b"}, nil); err != nil {
					t.Fatal(err)
				}
			}
			_, got, _ := b.pick(b.workers["a"])
			switch {
			case c.wantNew && (got == nil || got.jobID() != fresh):
				t.Fatalf("a picked %v, want the fresh job %d", got, fresh)
			case !c.wantNew && c.other && got != nil:
				t.Fatalf("a picked job %d, want none (b takes them)", got.id)
			case !c.wantNew && !c.other && (got == nil || got.id != 1):
				t.Fatalf("a picked %v, want the head, job 1 (no other worker)", got)
			}
			if c.other {
				if _, j, _ := b.pick(b.workers["b"]); j == nil || j.id != 1 {
					t.Fatalf("b picked %v, want the head, job 1", j)
				}
			}
			if err := checkInvariants(b); err != nil {
				t.Fatal(err)
			}
		})
	}
}
