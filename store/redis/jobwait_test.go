package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// The cluster's rows carry the wait Redis knows, and a wait= filter
// finds them: the shared queue's jobs of a host backed off wait
// host-backoff, the polite ones of a host whose next polite claim is due
// later wait polite, the others none; a job another coordinator claimed
// carries the wait that coordinator published for it; a key's detail
// (Locate) says the same.
func TestJobViewWaits(t *testing.T) {
	rdb := client(t)
	ls := peers(t, rdb, 2, ledger.Config{})
	a, b := ls[0], ls[1]
	qa, qb := a.Jobs(), b.Jobs()
	policy := coord.SharedPolicy{
		Applies: func(p string) bool { return p == "fetch" },
		Limits:  func(string) broker.Limits { return broker.Limits{PerHost: 1, MinDelay: time.Hour} },
	}
	qa.HoldPoliteness(policy)
	qb.HoldPoliteness(policy)
	job := func(host, proc string, i int) broker.Spec {
		k := id.Key{Crawler: "c", Processor: proc, URL: fmt.Sprintf("http://%s/%s/%d", host, proc, i)}
		return broker.Spec{Key: k, FP: k.Fingerprint(), Host: id.Host(k.URL)}
	}
	now := time.Now()
	for i := range 3 {
		for _, sp := range []broker.Spec{job("slow.example", "exec", i), job("polite.example", "fetch", i), job("plain.example", "exec", i)} {
			if _, err := qa.Push(now, sp); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A host is backed off; b claims one polite fetch (the host's next
	// is then an hour away) and finishes it.
	qa.BackOff(time.Now(), []broker.HostBackoff{{Host: "slow.example", Until: time.Now().Add(time.Hour), Level: 1, Forgiven: time.Now().Add(2 * time.Hour)}})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	var fetched, others []broker.Spec
	for deadline := time.Now().Add(20 * time.Second); len(fetched) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("b claimed no fetch")
		}
		specs, err := qb.Claim(time.Now(), 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range specs {
			if sp.Key.Processor == "fetch" {
				fetched = append(fetched, sp)
			} else {
				others = append(others, sp)
			}
		}
	}
	qb.Finish(time.Now(), []ledger.Item{{Key: fetched[0].Key, FP: fetched[0].FP}}, nil)
	byWait := func(filter string) map[string]admin.Wait {
		t.Helper()
		m := make(map[string]admin.Wait)
		for _, r := range walkAll(t, a.JobView(), "q", filter, 100) {
			m[r.URL] = r.Wait
			switch r.Wait {
			case admin.WaitHostBackoff:
				if !strings.HasPrefix(r.Reason, "host back-off until ") {
					t.Fatalf("row %+v: wait host-backoff, reason not beginning so", r)
				}
			case admin.WaitPolite:
				if !strings.HasPrefix(r.Reason, "polite: ") {
					t.Fatalf("row %+v: wait polite, reason not beginning so", r)
				}
			}
		}
		return m
	}
	for u, w := range byWait("") {
		want := admin.Wait("")
		switch id.Host(u) {
		case "slow.example":
			want = admin.WaitHostBackoff
		case "polite.example":
			want = admin.WaitPolite
		}
		if w != want {
			t.Fatalf("%s waits %q; want %q", u, w, want)
		}
	}
	if m := byWait("wait=host-backoff"); len(m) != 3 || len(byWait("")) != 3+2+3-len(others) {
		t.Fatalf("wait=host-backoff lists %v; want slow.example's 3 jobs", m)
	}
	if m := byWait("wait=polite"); len(m) < 2 {
		t.Fatalf("wait=polite lists %v; want polite.example's jobs left in the queue", m)
	}
	if row, ok, err := a.JobView().Locate(job("slow.example", "exec", 1).FP, "slow.example"); err != nil || !ok || row.Wait != admin.WaitHostBackoff {
		t.Fatalf("Locate of a job of the backed-off host: %+v %v %v; want it waiting host-backoff", row, ok, err)
	}

	// A job b claimed carries the wait b published.
	for deadline := time.Now().Add(20 * time.Second); len(others) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("b claimed no job of plain.example")
		}
		specs, err := qb.Claim(time.Now(), 1)
		if err != nil {
			t.Fatal(err)
		}
		others = append(others, specs...)
	}
	mine := others[0]
	b.JobView().NoteJobs([]admin.JobRow{{JobID: 9, Key: mine.FP.String(), URL: mine.Key.URL, State: "queued", Wait: admin.WaitUnroutable,
		Reason: "unroutable: no live worker has threads=64", Created: now, Updated: now}})
	if err := b.PublishSummary(context.Background(), admin.ClusterCoordinator{Heartbeat: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rows := walkAll(t, a.JobView(), "c", "wait=unroutable", 100)
	if len(rows) != 1 || rows[0].URL != mine.Key.URL || rows[0].Coordinator != b.coord || !strings.HasSuffix(rows[0].Reason, ": unroutable: no live worker has threads=64") {
		t.Fatalf("wait=unroutable over b's claimed jobs: %+v; want b's job of %s", rows, mine.Key.URL)
	}
}
