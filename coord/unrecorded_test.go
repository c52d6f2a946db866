package coord

import (
	"slices"
	"strings"
	"testing"
	"time"

	"drover/coord/broker"
)

// TestUnrecordedAttempts: after a restore, a run one attempt past a job's
// restored attempt (dispatched before the crash, unrecorded) is adopted by
// the worker that re-announces it, superseding the restored attempt and
// cancelling it on its connected worker; a job dispatched before any such
// claim skips that attempt number, and a late claim of it is dropped and
// named in the skipped entry.
func TestUnrecordedAttempts(t *testing.T) {
	st, _, now := crashed(t, persistCfg(), twoHeld) // w1 holds jobs 1 and 2 (attempt 1), job 3 queued
	c, _ := restoreFrom(t, persistCfg(), st, now)
	later := now.Add(time.Second)

	// w1 reclaims both runs; then w2 re-announces job 1's attempt 2.
	wel := must2[Welcome](t)(c.Hello(later, 11, Hello{Role: RoleWorker, ID: "w1", Slots: 2, Held: []broker.Run{{Job: 1, Attempt: 1}, {Job: 2, Attempt: 1}}}))
	if len(wel.Cancel) != 0 {
		t.Fatalf("w1 welcome cancels %v, want none", wel.Cancel)
	}
	wel = must2[Welcome](t)(c.Hello(later, 12, Hello{Role: RoleWorker, ID: "w2", Slots: 1, Held: []broker.Run{{Job: 1, Attempt: 2}, {Job: 2, Attempt: 3}}}))
	if want := []broker.Run{{Job: 2, Attempt: 3}}; !slices.Equal(wel.Cancel, want) {
		t.Fatalf("w2 welcome cancels %v, want %v (job 1's attempt 2 adopted; attempt 3 never existed)", wel.Cancel, want)
	}
	out := c.Ready(later)
	if len(out.Cancels) != 1 || out.Cancels[0].Session != 11 || out.Cancels[0].Run != (broker.Run{Job: 1, Attempt: 1}) {
		t.Fatalf("cancels %+v, want w1 (session 11) told to drop job 1's attempt 1", out.Cancels)
	}
	// w1's freed slot takes job 3, whose attempt 1 may be running
	// unrecorded somewhere: skipped.
	if len(out.Jobs) != 1 || out.Jobs[0].Job != 3 || out.Jobs[0].Worker != "w1" || out.Jobs[0].Attempt != 2 || !out.Jobs[0].AfterRestore {
		t.Fatalf("dispatched %+v, want job 3 to w1 as attempt 2 after a restore", out.Jobs)
	}
	row := jobState(t, c, 1)
	if row.Worker != "w2" || row.Attempts != 2 || len(row.History) != 2 || row.History[0].Outcome != "requeued" || row.History[1].Worker != "w2" {
		t.Fatalf("job 1 %+v: want attempt 2 on w2, attempt 1 requeued", row)
	}

	// A late claim of the skipped run is dropped and named.
	wel = must2[Welcome](t)(c.Hello(later, 14, Hello{Role: RoleWorker, ID: "w4", Slots: 1, Held: []broker.Run{{Job: 3, Attempt: 1}}}))
	if want := []broker.Run{{Job: 3, Attempt: 1}}; !slices.Equal(wel.Cancel, want) {
		t.Fatalf("w4 welcome cancels %v, want %v", wel.Cancel, want)
	}
	row = jobState(t, c, 3)
	if h := row.History; row.Worker != "w1" || len(h) != 2 || h[0].Outcome != broker.OutcomeSkipped || h[0].Worker != "w4" || h[1].Worker != "w1" {
		t.Fatalf("job 3 %+v: want attempt 1 skipped naming w4, attempt 2 on w1", row)
	}
	// Writes carry the changes: the next restore sees them.
	var n int
	for _, w := range c.Ready(later).Writes {
		if w.Kind == RecordJob && w.Job.ID == 3 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d records of job 3 after the claim was named, want 1", n)
	}
}

// must2 fails the test when a call returns an error, else returns its value.
func must2[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestRestoreClean: a restore told that the store was closed cleanly
// (RestoreClean) supposes no unrecorded attempt: a queued job's next
// dispatch is the attempt after its recorded one, not marked AfterRestore,
// with nothing skipped; a worker's claim of a later attempt is dropped.
// RestoreClean after the first record is refused.
func TestRestoreClean(t *testing.T) {
	st, _, now := crashed(t, persistCfg(), twoHeld)
	c, err := New(persistCfg())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RestoreClean(); err != nil {
		t.Fatal(err)
	}
	stats, err := c.Restore(now, st.records())
	if err != nil {
		t.Fatal(err)
	}
	if !stats.Clean || !strings.Contains(stats.String(), "after a clean shutdown") {
		t.Fatalf("stats %+v (%s): want Clean, said", stats, stats)
	}
	later := now.Add(time.Second)
	wel := must2[Welcome](t)(c.Hello(later, 12, Hello{Role: RoleWorker, ID: "w2", Slots: 1, Held: []broker.Run{{Job: 3, Attempt: 1}}}))
	if want := []broker.Run{{Job: 3, Attempt: 1}}; !slices.Equal(wel.Cancel, want) {
		t.Fatalf("w2 welcome cancels %v, want %v: after a clean stop no attempt ran unrecorded", wel.Cancel, want)
	}
	out := c.Ready(later)
	if len(out.Jobs) != 1 || out.Jobs[0].Job != 3 || out.Jobs[0].Attempt != 1 || out.Jobs[0].AfterRestore {
		t.Fatalf("dispatched %+v, want job 3 as attempt 1, not after-restore", out.Jobs)
	}
	if h := jobState(t, c, 3).History; len(h) != 1 || h[0].Worker != "w2" {
		t.Fatalf("job 3 history %+v, want one attempt on w2 (none skipped)", h)
	}

	c2, err := New(persistCfg())
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.RestoreRecord(st.records()[0]); err != nil {
		t.Fatal(err)
	}
	if err := c2.RestoreClean(); err == nil {
		t.Fatal("RestoreClean after a record: no error, want one")
	}
}
