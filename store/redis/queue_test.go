package redis

import (
	"fmt"
	"testing"
	"time"

	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

func jobSpec(i int) broker.Spec {
	k := id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://h%d.example/page/%d", i%10, i)}
	return broker.Spec{Key: k, FP: k.Fingerprint(), Host: id.Host(k.URL),
		Headers: map[string]string{"n": fmt.Sprint(i)}, Payload: []byte{byte(i), 0, 1}}
}

// Jobs pushed by one coordinator are claimed by two, each exactly once,
// with their headers and payloads; the jobs a coordinator leased when it
// died go back to the queue when a peer sweeps it, and the peer claims
// them; finished jobs do not come back.
func TestSharedQueueClaimAndSweep(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0].Jobs(), ls[1].Jobs()
	now := time.Now()
	const n = 200
	ids := make(map[uint64]bool)
	for i := range n {
		j, err := a.Push(now, jobSpec(i))
		if err != nil {
			t.Fatal(err)
		}
		if j == 0 || ids[j] {
			t.Fatalf("push %d: job id %d; want a new id >= 1", i, j)
		}
		ids[j] = true
	}
	seen := make(map[string]int)
	claim := func(q *Queue, want int) []broker.Spec {
		t.Helper()
		var got []broker.Spec
		deadline := time.Now().Add(30 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			specs, err := q.Claim(time.Now(), want-len(got))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, specs...)
		}
		if len(got) != want {
			t.Fatalf("claimed %d jobs; want %d", len(got), want)
		}
		for _, sp := range got {
			seen[sp.Key.URL]++
			var i int
			fmt.Sscanf(sp.Headers["n"], "%d", &i)
			if w := jobSpec(i); sp.FP != w.FP || sp.Host != w.Host || string(sp.Payload) != string(w.Payload) {
				t.Fatalf("claimed %+v; want %+v", sp, w)
			}
		}
		return got
	}
	onB := claim(b, 50)
	onA := claim(a, n-50)
	if specs, err := a.Claim(now, 10); err != nil || len(specs) != 0 {
		t.Fatalf("claim from an empty queue: %d jobs, %v; want none", len(specs), err)
	}
	for _, sp := range onA {
		a.Finish(now, sp.Key, sp.FP)
	}
	// b dies; a sweeps it and claims its 50 jobs again.
	ls[1].halt()
	deadline := time.Now().Add(time.Minute)
	for ls[0].Swept == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("b was not swept within a minute (alive TTL 3s)")
		}
		ls[0].Maintain(time.Now())
		time.Sleep(200 * time.Millisecond) // polling the sweep, whose TTL is Redis's
	}
	if a.Returned != 50 {
		t.Fatalf("the sweep returned %d jobs; want b's 50", a.Returned)
	}
	again := claim(a, 50)
	for _, sp := range onB {
		seen[sp.Key.URL]-- // claimed twice: by b, and by a after b's death
	}
	for i := range n {
		if c := seen[jobSpec(i).Key.URL]; c != 1 {
			in := func(xs []broker.Spec) int {
				k := 0
				for _, x := range xs {
					if x.Key.URL == jobSpec(i).Key.URL {
						k++
					}
				}
				return k
			}
			t.Fatalf("job %d claimed %d times net of b's; want 1 (a %d, b %d, again %d)", i, c, in(onA), in(onB), in(again))
		}
	}
	for _, sp := range again {
		a.Finish(now, sp.Key, sp.FP)
	}
	st, err := a.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st != (QueueStats{}) {
		t.Fatalf("after every job finished: %v; want 0 queued, 0 leased", st)
	}
}
