package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/coord/ledger"
)

// The jobs coordinator b holds, noted and published with its summary,
// are what a's walk and Locate show of b's claimed jobs: the worker,
// since when, attempts, and in the reason what b does with it and its job
// id there. A job b no longer notes loses its detail at the next publish;
// one b never noted is listed plain.
func TestJobViewHeldJobs(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	qb := b.Jobs()
	now := time.Now().UTC().Truncate(time.Second)
	for i := range 3 {
		if _, err := qb.Push(now, jobSpec(i)); err != nil {
			t.Fatal(err)
		}
	}
	var keys []id.Key
	for len(keys) < 3 {
		specs, err := qb.Claim(now, 3-len(keys))
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range specs {
			keys = append(keys, sp.Key)
		}
	}
	since := now.Add(-time.Minute)
	rows := []admin.JobRow{
		{JobID: 7, Key: keys[0].Fingerprint().String(), URL: keys[0].URL, State: "dispatched", Worker: "w1", Attempts: 2, Failures: 1,
			LastError: strings.Repeat("e", 300), Created: since, Updated: now},
		{JobID: 8, Key: keys[1].Fingerprint().String(), URL: keys[1].URL, State: "backoff", Attempts: 1, Failures: 1, RetryAt: now.Add(time.Minute),
			Created: since, Updated: now},
	}
	publish := func() {
		t.Helper()
		if err := b.PublishSummary(context.Background(), admin.ClusterCoordinator{Heartbeat: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	b.JobView().NoteJobs(rows)
	publish()
	byURL := func() map[string]admin.JobRow {
		m := make(map[string]admin.JobRow)
		for _, r := range walkAll(t, a.JobView(), "c", "", 100) {
			m[r.URL] = r
		}
		return m
	}
	got := byURL()
	if len(got) != 3 {
		t.Fatalf("a lists %d of b's claimed jobs; want 3: %+v", len(got), got)
	}
	r := got[keys[0].URL]
	if r.State != "claimed" || r.Coordinator != b.coord || r.Worker != "w1" || r.Attempts != 2 || r.Failures != 1 || !r.Updated.Equal(now) ||
		!strings.Contains(r.Reason, "running on worker w1 since "+now.Format(time.RFC3339)) || !strings.Contains(r.Reason, "its job 7") ||
		len(r.LastError) > maxPublishedError+len("…") || r.JobID != 0 {
		t.Fatalf("b's dispatched job as a lists it: %+v; want claimed by %s, worker w1 since %v, 2 attempts, b's job 7 in the reason, no job id", r, b.coord, now)
	}
	if r := got[keys[1].URL]; !r.RetryAt.Equal(now.Add(time.Minute)) || !strings.Contains(r.Reason, "backing off until") {
		t.Fatalf("b's backing-off job as a lists it: %+v; want its retry time", r)
	}
	if r := got[keys[2].URL]; r.Worker != "" || !strings.Contains(r.Reason, "queued, running or backing off there") {
		t.Fatalf("a job b did not note: %+v; want it plain", r)
	}
	// By worker: the filter sees the published worker.
	if w := walkAll(t, a.JobView(), "c", "worker=w1", 100); len(w) != 1 || w[0].URL != keys[0].URL {
		t.Fatalf("worker=w1: %+v; want b's dispatched job only", w)
	}
	if loc, ok, err := a.JobView().Locate(keys[0].Fingerprint(), id.Host(keys[0].URL)); err != nil || !ok || loc.Worker != "w1" {
		t.Fatalf("locate %s: %+v ok %v err %v; want worker w1", keys[0].URL, loc, ok, err)
	}

	// The job finished: b notes the other one only; its detail is gone.
	b.JobView().NoteJobs(rows[1:])
	publish()
	if r := byURL()[keys[0].URL]; r.Worker != "" {
		t.Fatalf("a job b no longer notes: %+v; want it plain", r)
	}
	if n, err := rdb.HLen(context.Background(), b.heldJobsKey(b.coord)).Result(); err != nil || n != 1 {
		t.Fatalf("b's published jobs: %d fields, err %v; want 1", n, err)
	}
	// The hash lost (a failover): written whole at the next publish,
	// though nothing changed.
	if err := rdb.Del(context.Background(), b.heldJobsKey(b.coord)).Err(); err != nil {
		t.Fatal(err)
	}
	b.JobView().NoteJobs(rows[1:])
	publish()
	if r := byURL()[keys[1].URL]; r.RetryAt.IsZero() {
		t.Fatalf("after the hash was lost: %+v; want b's backing-off job's detail again", r)
	}
}
