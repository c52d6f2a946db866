package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/admin"
	"drover/net/worker"
	"drover/store/redis/redistest"
)

// Two `drover serve` on one Redis Cluster: worker holder on b runs 3
// jobs submitted to a and is evicted; b requeues them with no worker
// left. A worker connected to a must run all 3, each once: a coordinator
// with no worker left hands the jobs it claimed back to the shared queue
// (and says so in its log) rather than keep them unroutable.
func TestWorkerlessCoordinatorHandsJobsBackOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	b := startRedisServe(t, cl.URL())
	adm := dialAdminT(t, a, true)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hold := func(context.Context, worker.Job) worker.Result { <-release; return worker.OK(nil) }
	_, stopHolder := runWorkerOn(t, b.peers, "holder", hold)
	urls := make([]string, 3)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://10.8.%d.1/handback/%d", i, i)
	}
	if acc, _ := submitTo(t, a.peers, urls); acc != 3 {
		t.Fatalf("a accepted %d of 3", acc)
	}
	eventually(t, "a lists the 3 jobs running on b's worker holder", 60*time.Second, func() bool {
		p := queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=claimed worker=holder", Limit: 100})
		return len(p.Jobs) == 3
	})
	// evicted through a (carried out by b): its 3 jobs are requeued on
	// b, which has no worker left.
	act := actOn(t, adm, "a")
	if res := act(admin.ActEvict, "holder"); res.Affected != 1 || len(res.Errors) != 0 {
		t.Fatalf("evict holder on a: %+v; want it evicted by b", res)
	}
	stopHolder()

	var mu sync.Mutex
	got := make(map[string]int)
	take := func(_ context.Context, j worker.Job) worker.Result {
		mu.Lock()
		got[j.Key.URL]++
		mu.Unlock()
		return worker.OK(nil)
	}
	runWorkerOn(t, a.peers, "taker", take)
	eventually(t, "a's worker taker runs the 3 jobs b's lost worker held", 90*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, u := range urls {
			if got[u] == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	for _, u := range urls {
		if got[u] != 1 {
			t.Errorf("taker ran %s %d times, want once", u, got[u])
		}
	}
	mu.Unlock()
	if !strings.Contains(b.serve.String(), "jobs handed back to the cluster's queue") {
		t.Errorf("b's log does not say it handed the jobs back")
	}
	eventually(t, "the cluster counts the 3 jobs done, none queued", 30*time.Second, func() bool {
		tot, _, ok := statusJSON(t, a.adm)
		return ok && tot.Done == 3 && tot.Queued == 0 && tot.Unroutable == 0
	})
}
