package coord

import (
	"fmt"
	"testing"
	"time"

	"drover/coord/broker"
	"drover/coord/id"
)

// TestChurnFailsNoHealthyJob: 10,000 throwaway workers each connect, take
// a job and vanish (liveness lost) without reporting anything, while two
// healthy workers complete what they are given. With the death policy no
// job is charged for those deaths, so every job ends done and none fails;
// the throwaway ids are never reused, so none is held back.
func TestChurnFailsNoHealthyJob(t *testing.T) {
	const churn, jobs = 10000, 200
	c := newCoord(t, Config{Heartbeat: time.Second, Liveness: 3, Broker: broker.Config{Jitter: -1, RetryJitter: -1, MaxRequestFailures: 3}})
	now := t0
	hello(t, c, 1, Hello{Role: RoleProducer, ID: "p"})
	var js []JobSpec
	for i := range jobs {
		js = append(js, JobSpec{Key: id.Key{Crawler: "c", Processor: "p", URL: fmt.Sprintf("http://churn.test/%d", i)}})
	}
	if _, err := c.Submit(now, 1, 1, js, nil); err != nil {
		t.Fatal(err)
	}
	next := id.Session(2)
	healthy := map[id.Session]bool{}
	for _, name := range []string{"h1", "h2"} {
		if _, err := c.Hello(now, next, Hello{Role: RoleWorker, ID: name, Slots: 1}); err != nil {
			t.Fatal(err)
		}
		healthy[next] = true
		next++
	}
	dispatchedToChurn := 0
	for i := 0; i < churn; i++ {
		s := next
		next++
		if _, err := c.Hello(now, s, Hello{Role: RoleWorker, ID: fmt.Sprintf("throwaway-%d", i), Slots: 1}); err != nil {
			t.Fatal(err)
		}
		out := c.Ready(now)
		results := map[id.Session][]Result{}
		for _, a := range out.Jobs {
			switch {
			case a.Session == s:
				dispatchedToChurn++
			case healthy[a.Session]:
				results[a.Session] = append(results[a.Session], Result{Run: broker.Run{Job: a.Job, Attempt: a.Attempt}, Outcome: broker.Outcome{Kind: broker.OK}})
			}
		}
		// The producer and the healthy workers beat; the throwaway one
		// goes silent and is declared dead after heartbeat × liveness.
		now = now.Add(2 * time.Second)
		for h := range healthy {
			c.Touch(now, h)
		}
		c.Touch(now, 1)
		for from, rs := range results {
			if _, err := c.Results(now, from, rs, nil); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(2 * time.Second)
		for h := range healthy {
			c.Touch(now, h)
		}
		c.Touch(now, 1)
		c.Tick(now)
		if c.Known(s) {
			t.Fatalf("throwaway session %d still alive after 4 s of silence", s)
		}
	}
	// Drain what is left through the healthy workers.
	for range 10 * jobs {
		out := c.Ready(now)
		for _, a := range out.Jobs {
			if _, err := c.Results(now, a.Session, []Result{{Run: broker.Run{Job: a.Job, Attempt: a.Attempt}, Outcome: broker.Outcome{Kind: broker.OK}}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if tt := c.Totals(now); tt.Done+tt.Failed == jobs {
			break
		}
	}
	tt := c.Totals(now)
	if tt.Failed != 0 || tt.Done != jobs || tt.Failures != 0 {
		t.Fatalf("after %d throwaway workers: done %d, failed %d, failures charged %d; want all %d done, none failed or charged",
			churn, tt.Done, tt.Failed, tt.Failures, jobs)
	}
	if dispatchedToChurn < churn/2 {
		t.Fatalf("only %d dispatches to throwaway workers, want most of %d (the test must exercise churn)", dispatchedToChurn, churn)
	}
	if tt.WorkersHeld != 0 {
		t.Fatalf("%d workers held back, want none (every throwaway id died once)", tt.WorkersHeld)
	}
	t.Logf("%d dispatches to %d vanishing workers, %d jobs done, 0 failed", dispatchedToChurn, churn, tt.Done)
}
