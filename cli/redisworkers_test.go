package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"drover/admin"
	"drover/coord/id"
	"drover/net/worker"
	"drover/store/redis/redistest"
)

// Two `drover serve` on one Redis Cluster, the workers on b: an operator
// attached to a evicts one of b's workers and drains another; b carries
// out both (the evicted worker's jobs are cancelled and, b having no
// worker left, handed back to the cluster's queue; the drained one
// finishes its jobs, takes no more and is let go), a's ACTED says so,
// and every URL still runs exactly once. An evict from a of a
// worker no coordinator has, of a worker of a coordinator stopped
// (SIGSTOP) and then killed, and of one of a coordinator that died, is
// refused with a line saying which.
func TestClusterEvictDrainOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	b := startRedisServe(t, cl.URL())
	bID := clusterID(t, b)
	adm := dialAdminT(t, a, true)
	act := actOn(t, adm, "a")

	const n = 40
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://10.8.%d.1/evict/%d", i%4, i)
	}
	if acc, _ := submitTo(t, a.peers, urls); acc != n {
		t.Fatalf("a accepted %d of %d", acc, n)
	}

	// b's workers: "held" keeps its jobs until its session ends, and says
	// why it ended; "drained" keeps them until released, then finishes
	// them.
	var mu sync.Mutex
	finished := map[string]int{} // URL -> runs finished by the in-process workers
	causes := make(chan error, 16)
	release := make(chan struct{})
	runWorker := func(name string, handler worker.Handler) chan error {
		ended, _ := runWorkerOn(t, b.peers, name, handler)
		return ended
	}
	runWorker("held", func(ctx context.Context, _ worker.Job) worker.Result {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return worker.OK(nil)
	})
	var held admin.Page
	eventually(t, "a lists b's 3 jobs running on worker held", 30*time.Second, func() bool {
		held = queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=claimed worker=held", Limit: 100})
		return len(held.Jobs) == 3
	})

	// Evict from a: carried out by b.
	if res := act(admin.ActEvict, "held"); res.Affected != 1 || len(res.Errors) != 0 {
		t.Fatalf("evict held on a: %+v; want it evicted by coordinator %s", res, bID)
	}
	for range 3 {
		select {
		case err := <-causes:
			if !errors.Is(err, worker.ErrEvicted) {
				t.Fatalf("an evicted worker's job ended with %v; want ErrEvicted", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the evicted worker's jobs were not cancelled")
		}
	}
	// b has no worker left: it hands the 3 jobs back to the cluster's
	// queue, where a finds them.
	for _, r := range held.Jobs {
		eventually(t, "a finds the job of "+r.URL+" back in the cluster's queue", 30*time.Second, func() bool {
			p := queryT(t, adm, admin.Query{View: admin.ViewJobs, Key: r.Key, Filter: "host=" + id.Host(r.URL)})
			return len(p.Jobs) == 1 && p.Jobs[0].State == "queued" && strings.Contains(p.Jobs[0].Reason, "in the cluster's queue")
		})
	}
	if !strings.Contains(b.serve.String(), "jobs handed back to the cluster's queue") {
		t.Fatal("b's log does not say it handed the evicted worker's jobs back")
	}

	drainedEnded := runWorker("drained", func(ctx context.Context, j worker.Job) worker.Result {
		select {
		case <-release:
		case <-ctx.Done():
			return worker.OK(nil)
		}
		mu.Lock()
		finished[j.Key.URL]++
		mu.Unlock()
		return worker.OK(nil)
	})
	eventually(t, "a lists b's 3 jobs running on worker drained", 30*time.Second, func() bool {
		p := queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=claimed worker=drained", Limit: 100})
		return len(p.Jobs) == 3
	})
	if res := act(admin.ActDrain, "drained"); res.Affected != 1 || len(res.Errors) != 0 {
		t.Fatalf("drain drained on a: %+v; want it drained by coordinator %s", res, bID)
	}
	_, workers, _ := statusJSON(t, b.adm)
	var state string
	for _, w := range workers {
		if w.ID == "drained" {
			state = w.State
		}
	}
	if state != "draining" {
		t.Fatalf("b's worker drained after a's drain: state %q; want draining", state)
	}
	close(release)
	select {
	case err := <-drainedEnded:
		if !errors.Is(err, worker.ErrDrained) {
			t.Fatalf("the drained worker's Run returned %v; want ErrDrained", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the drained worker was not let go after its jobs finished")
	}
	mu.Lock()
	if len(finished) != 3 {
		t.Fatalf("the drained worker finished %v; want its 3 jobs and no more", finished)
	}
	mu.Unlock()

	// Truthful refusals: a worker nobody has.
	if res := act(admin.ActEvict, "nobody"); res.Affected != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "nor on any other coordinator") {
		t.Fatalf("evict nobody on a: %+v; want one line saying no coordinator has it", res)
	}

	// The rest run on a worker process of b's: every URL once.
	b.workerFile = filepath.Join(t.TempDir(), "b.ran")
	b.startWorker(t, "finisher", 8, "--exec", `echo "$DROVER_URL" >> `+b.workerFile)
	eventually(t, "every URL ran", time.Minute, func() bool {
		return len(ran(t, b))+len(finished) == n
	})
	seen := ran(t, b)
	for u, k := range finished {
		seen[u] += k
	}
	for _, u := range urls {
		if seen[u] != 1 && clusterFaults(a, b) == "" {
			t.Fatalf("%s ran %d times; want once", u, seen[u])
		}
	}

	// b dies with a worker connected: a's evict of it says so.
	runWorker("orphan", func(ctx context.Context, _ worker.Job) worker.Result { <-ctx.Done(); return worker.OK(nil) })
	eventually(t, "a finds worker orphan on b", 30*time.Second, func() bool {
		res := act(admin.ActUndrain, "orphan") // a no-op on a live worker: answered by b
		return res.Affected == 1
	})
	// b stops (SIGSTOP) with an evict posted to it and not carried out,
	// then dies: the action is answered, never dropped: by b's silence
	// (a's wait ends) or by a's sweep of b, which answers what b left.
	stopProcess(t, b.proc)
	if res := act(admin.ActEvict, "orphan"); res.Affected != 0 || len(res.Errors) != 1 ||
		!strings.Contains(res.Errors[0], "posted there: redis control: coordinator "+bID+" did not answer evict") &&
			!strings.Contains(res.Errors[0], "not done: coordinator "+bID+" died before carrying it out") {
		t.Fatalf("evict on a of a worker of b, stopped: %+v; want one line saying b did not answer, or died first", res)
	}
	if err := b.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's sweep of b answers the evict b left", 30*time.Second, func() bool {
		return strings.Contains(a.serve.String(), "actions posted to a coordinator taken for dead answered as not done by it")
	})
	eventually(t, "a sees b dead", 30*time.Second, func() bool {
		tot, _, ok := statusJSON(t, a.adm)
		if !ok || tot.Cluster == nil {
			return false
		}
		for _, c := range tot.Cluster.Coordinators {
			if c.ID == bID {
				return !c.Alive
			}
		}
		return false
	})
	res := act(admin.ActEvict, "orphan")
	if res.Affected != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "coordinator "+bID+" ("+b.peers+"), which is dead") {
		t.Fatalf("evict on a of a dead coordinator's worker: %+v; want one line saying coordinator %s is dead", res, bID)
	}
}
