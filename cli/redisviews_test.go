package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/net/client"
	"drover/net/worker"
	"drover/store/redis/redistest"
)

// clusterOf reads coordinator c's id in the cluster from its status.
func clusterID(t *testing.T, c *redisCoordinator) string {
	t.Helper()
	var self string
	eventually(t, "the coordinator in its cluster view", 20*time.Second, func() bool {
		tot, _, ok := statusJSON(t, c.adm)
		if !ok || tot.Cluster == nil {
			return false
		}
		for _, r := range tot.Cluster.Coordinators {
			if r.Peers == c.peers {
				self = r.ID
			}
		}
		return self != ""
	})
	return self
}

// dialAdminT attaches an admin client (read-only unless operator) to c.
func dialAdminT(t *testing.T, c *redisCoordinator, operator bool) *client.Admin {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := client.DialAdmin(ctx, client.AdminOptions{Connect: c.adm, ReadOnly: !operator})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// actOn runs actions through adm, an admin client of the coordinator
// named name, failing t on an error.
func actOn(t *testing.T, adm *client.Admin, name string) func(kind admin.ActionKind, targets ...string) admin.ActionResult {
	return func(kind admin.ActionKind, targets ...string) admin.ActionResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := adm.Act(ctx, admin.Action{Kind: kind, Targets: targets})
		if err != nil {
			t.Fatalf("%s %v on %s: %v", kind, targets, name, err)
		}
		return res
	}
}

func queryT(t *testing.T, a *client.Admin, q admin.Query) admin.Page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := a.Query(ctx, q)
	if err != nil {
		t.Fatalf("query %+v: %v", q, err)
	}
	return p
}

// Two `drover serve` on one Redis Cluster: the jobs, waiters and
// per-key views of coordinator b list what coordinator a holds (jobs in
// the shared queue submitted to a, jobs a's worker runs, keys a's
// producers hold and wait on), through b's admin socket, with the one
// filter grammar, paged by offset and by cursor, a's claimed jobs with
// their worker; a requeue on b of a job a holds is carried out by a; b's
// retries view lists a's failed jobs, and a requeue on b of one of them is
// carried out by a.
func TestClusterViewsOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	b := startRedisServe(t, cl.URL())
	aID := clusterID(t, a)
	adm := dialAdminT(t, b, true)

	// 60 URLs to a, which has no worker: they wait in the shared queue.
	const n = 60
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://10.9.%d.1/views/%d", i%3, i)
	}
	if acc, _ := submitTo(t, a.peers, urls); acc != n {
		t.Fatalf("a accepted %d of %d", acc, n)
	}

	t.Run("jobs", func(t *testing.T) {
		p := queryT(t, adm, admin.Query{View: admin.ViewJobs, Limit: 1000})
		keyOf := map[string]string{}
		for _, r := range p.Jobs {
			keyOf[r.URL] = r.Key
		}
		if p.Total != n || len(p.Jobs) != n {
			t.Fatalf("b's jobs view: total %d, %d rows; want a's %d queued jobs", p.Total, len(p.Jobs), n)
		}
		for _, r := range p.Jobs {
			if r.State != "queued" || r.QueueID == 0 || r.JobID != 0 || r.Coordinator != "" || !strings.Contains(r.Reason, "cluster's queue") {
				t.Fatalf("row %+v: want queued in the cluster's queue with its queue id", r)
			}
		}
		// The filter grammar: one host of three, queued.
		p = queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "host=10.9.1.1 state=queued views", Limit: 1000})
		if len(p.Jobs) != n/3 || p.Total != n/3 {
			t.Fatalf("host=10.9.1.1: %d rows, total %d; want %d", len(p.Jobs), p.Total, n/3)
		}
		for _, r := range p.Jobs {
			if id.Host(r.URL) != "10.9.1.1" {
				t.Fatalf("host=10.9.1.1 listed %s", r.URL)
			}
		}
		if p := queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=failed"}); len(p.Jobs) != 0 || p.Total != 0 {
			t.Fatalf("state=failed: %d rows, total %d; want none", len(p.Jobs), p.Total)
		}
		// Paged by offset (as the console scrolls) and by cursor: every
		// job once.
		seen := map[string]bool{}
		for off := 0; off < n; off += 7 {
			p := queryT(t, adm, admin.Query{View: admin.ViewJobs, Offset: off, Limit: 7})
			for _, r := range p.Jobs {
				if seen[r.URL] {
					t.Fatalf("offset %d: %s listed again", off, r.URL)
				}
				seen[r.URL] = true
			}
		}
		if len(seen) != n {
			t.Fatalf("paging by offset listed %d jobs; want %d", len(seen), n)
		}
		clear(seen)
		q := admin.Query{View: admin.ViewJobs, Limit: 9}
		for pages := 0; ; pages++ {
			p := queryT(t, adm, q)
			for _, r := range p.Jobs {
				seen[r.URL] = true
			}
			if p.After == "" || pages > n {
				break
			}
			q.After = p.After
		}
		if len(seen) != n {
			t.Fatalf("paging by cursor listed %d jobs; want %d", len(seen), n)
		}
		// A key's detail: where its job is.
		fp := keyOf[urls[5]]
		p = queryT(t, adm, admin.Query{View: admin.ViewJobs, Key: fp})
		if len(p.Jobs) != 1 || p.Jobs[0].URL != urls[5] || p.Jobs[0].State != "queued" {
			t.Fatalf("detail of %s: %+v; want it queued", urls[5], p.Jobs)
		}
		// Requeue on b of a job in the shared queue: refused, saying so.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := adm.Act(ctx, admin.Action{Kind: admin.ActRequeue, Targets: []string{fp}})
		if err != nil || res.Affected != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "already waiting in the cluster's queue") {
			t.Fatalf("requeue of a queued job on b: %+v, %v; want it refused as already queued", res, err)
		}
	})

	t.Run("claimed", func(t *testing.T) {
		// A worker of a's that holds its jobs until the test ends.
		runWorkerOn(t, a.peers, "holder", func(ctx context.Context, _ worker.Job) worker.Result { <-ctx.Done(); return worker.OK(nil) })
		var p admin.Page
		eventually(t, "b lists 3 jobs claimed by a", 30*time.Second, func() bool {
			p = queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=claimed", Limit: 100})
			return len(p.Jobs) == 3
		})
		for _, r := range p.Jobs {
			if r.Coordinator != aID || !strings.Contains(r.Reason, "coordinator "+aID+" ("+a.peers+")") {
				t.Fatalf("claimed row %+v: want coordinator %s and its peers endpoint %s", r, aID, a.peers)
			}
		}
		// What a does with them, as it publishes it: running on its
		// worker, since when, the attempt.
		eventually(t, "b shows the worker of a's claimed jobs", 30*time.Second, func() bool {
			p = queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=claimed worker=holder", Limit: 100})
			return len(p.Jobs) == 3
		})
		for _, r := range p.Jobs {
			if r.Attempts != 1 || r.Updated.IsZero() || !strings.Contains(r.Reason, "running on worker holder since") {
				t.Fatalf("claimed row %+v: want running on worker holder, attempt 1, since when", r)
			}
		}
		if q := queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=queued", Limit: 100}); len(q.Jobs) != n-3 {
			t.Fatalf("state=queued: %d rows; want %d", len(q.Jobs), n-3)
		}
		// Requeue on b of a job a holds: asked of a, which requeues it
		// (its worker is told CANCEL and the attempt ends "requeued").
		actx, acancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer acancel()
		key0 := p.Jobs[0].Key
		res, err := adm.Act(actx, admin.Action{Kind: admin.ActRequeue, Targets: []string{key0}})
		if err != nil || res.Affected != 1 || len(res.Errors) != 0 {
			t.Fatalf("requeue on b of a job a holds: %+v, %v; want it requeued by a", res, err)
		}
		admA := dialAdminT(t, a, false)
		requeued := func(key string) bool {
			pg := queryT(t, admA, admin.Query{View: admin.ViewJobs, Key: key})
			if len(pg.Jobs) != 1 || pg.Jobs[0].JobID == 0 {
				return false
			}
			for _, h := range pg.Jobs[0].History {
				if h.Outcome == "requeued" {
					return true
				}
			}
			return false
		}
		if !requeued(key0) {
			t.Fatalf("a's job of key %s: no attempt ended requeued after b's requeue", key0)
		}
		// The same from the command line, by filter: every job a holds.
		out, code := run(t, "", "requeue", "--connect", b.adm, "--filter", "state=claimed", "--yes")
		if code != 0 {
			t.Fatalf("drover requeue --filter state=claimed on b: exit %d, output %q; want a's 3 jobs requeued", code, out)
		}
		t.Logf("requeue on b by filter: %s", strings.TrimSpace(out))
		for _, r := range p.Jobs {
			if !requeued(r.Key) {
				t.Fatalf("a's job of key %s (%s): no attempt ended requeued after b's requeue by filter", r.Key, r.URL)
			}
		}
	})

	t.Run("waiters", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dial := func(name string) *client.Client {
			c, err := client.Dial(ctx, client.Options{Connect: a.peers, ID: name, Heartbeat: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		holder, waiter := dial("holder-producer"), dial("waiting-producer")
		k := id.Key{Crawler: "c", Processor: "p", URL: "http://10.9.7.1/held"}
		if v, err := holder.Request(ctx, []id.Key{k}); err != nil || len(v) != 1 {
			t.Fatalf("request: %v %v", v, err)
		}
		go waiter.Request(ctx, []id.Key{k}) // waits on holder's key
		var p admin.Page
		eventually(t, "b lists a's requested key with its waiter", 20*time.Second, func() bool {
			p = queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=requested host=10.9.7.1", Limit: 10})
			return len(p.Jobs) == 1 && p.Jobs[0].Waiters == 1
		})
		if r := p.Jobs[0]; r.URL != k.URL || !strings.HasSuffix(r.Owner, " on coordinator "+aID) {
			t.Fatalf("requested row %+v: want %s held by a session on coordinator %s", r, k.URL, aID)
		}
		w := queryT(t, adm, admin.Query{View: admin.ViewWaiters, Key: k.Fingerprint().String()})
		if w.Total != 1 || len(w.Waiters) != 1 || w.Waiters[0].Position != 1 || !strings.HasSuffix(w.Waiters[0].Session, " on coordinator "+aID) {
			t.Fatalf("b's waiters of %s: %+v; want one session on coordinator %s", k.URL, w.Waiters, aID)
		}
	})

	t.Run("retries", func(t *testing.T) {
		// A worker of a's that fails every job for good (EX_DATAERR):
		// a's failed jobs show in b's retries view, naming a.
		a.startWorker(t, "failer", 4, "--exec", "exit 65")
		var p admin.Page
		eventually(t, "b's retries view lists a's failed jobs", 60*time.Second, func() bool {
			p = queryT(t, adm, admin.Query{View: admin.ViewRetries, Filter: "state=failed host=10.9.0.1", Limit: 1000})
			return len(p.Jobs) >= 5
		})
		for _, r := range p.Jobs {
			if r.Coordinator != aID || r.JobID != 0 || r.State != "failed" || id.Host(r.URL) != "10.9.0.1" || !strings.Contains(r.LastError, "EX_DATAERR") {
				t.Fatalf("retries row %+v: want a job of 10.9.0.1 failed on coordinator %s with its error", r, aID)
			}
		}
		if q := queryT(t, adm, admin.Query{View: admin.ViewRetries, Filter: "state=backoff"}); len(q.Jobs) != 0 {
			t.Fatalf("state=backoff lists %+v; want none", q.Jobs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := adm.Act(ctx, admin.Action{Kind: admin.ActRequeue, Targets: []string{p.Jobs[0].Key}})
		if err != nil || res.Affected != 1 || len(res.Errors) != 0 {
			t.Fatalf("requeue on b of a job failed on a: %+v, %v; want it requeued by coordinator %s", res, err, aID)
		}
	})
}
