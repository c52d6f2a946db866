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

// Two `drover serve` on one Redis Cluster: a's only worker has no
// headers, b's has hw=gpu. Jobs that need hw=gpu, submitted to a, all
// run on b's worker, each once: a returns a claimed job none of its
// workers can take at once (and leaves its host to the others for a
// while) rather than keep it unroutable; plain jobs run on either.
func TestUnroutableJobsGoToCapableCoordinatorOnRedis(t *testing.T) {
	drover(t)
	var tot admin.Totals
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("a's status: %+v, cluster %+v", tot, tot.Cluster)
		}
	})
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	b := startRedisServe(t, cl.URL())
	var mu sync.Mutex
	ranOn := make(map[string][]string) // URL -> workers that ran it
	handler := func(name string) worker.Handler {
		return func(_ context.Context, j worker.Job) worker.Result {
			mu.Lock()
			ranOn[j.Key.URL] = append(ranOn[j.Key.URL], name)
			mu.Unlock()
			return worker.OK(nil)
		}
	}
	work := func(peers, name string, headers map[string]string) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			worker.Run(ctx, worker.Options{Connect: peers, ID: name, Slots: 2, Headers: headers, Heartbeat: time.Second, StopTimeout: time.Second}, handler(name))
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	work(a.peers, "plain", nil)
	work(b.peers, "gpu", map[string]string{"hw": "gpu"})
	a.awaitWorkers(t, 1)
	b.awaitWorkers(t, 1)
	gpuURLs := make([]string, 6)
	for i := range gpuURLs {
		gpuURLs[i] = fmt.Sprintf("http://10.7.%d.1/gpu/%d", i%3, i)
	}
	out, code := run(t, strings.Join(gpuURLs, "\n")+"\n", "submit", "-", "--connect", a.peers, "--header", "hw=gpu")
	if code != 0 || !strings.Contains(out, "6 accepted") {
		t.Fatalf("submit of the gpu jobs to a: exit %d, %q", code, out)
	}
	plainURLs := make([]string, 6)
	for i := range plainURLs {
		plainURLs[i] = fmt.Sprintf("http://10.7.%d.1/plain/%d", i%3, i)
	}
	if acc, _ := submitTo(t, a.peers, plainURLs); acc != 6 {
		t.Fatalf("a accepted %d of 6 plain jobs", acc)
	}
	eventually(t, "every job ran", 90*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ranOn) == 12
	})
	mu.Lock()
	for _, u := range gpuURLs {
		if r := ranOn[u]; len(r) != 1 || r[0] != "gpu" {
			t.Errorf("%s ran on %v; want once, on b's worker gpu", u, r)
		}
	}
	for _, u := range plainURLs {
		if r := ranOn[u]; len(r) != 1 {
			t.Errorf("%s ran on %v; want once", u, r)
		}
	}
	mu.Unlock()
	eventually(t, "the cluster counts 12 done, none queued or claimed, none unroutable on a", 30*time.Second, func() bool {
		var ok bool
		tot, _, ok = statusJSON(t, a.adm)
		c := tot.Cluster
		return ok && c != nil && c.Done == 12 && c.Queued == 0 && c.Claimed == 0 && tot.Unroutable == 0
	})
	if !strings.Contains(a.serve.String(), "no worker on this coordinator has the headers they need") {
		t.Error("a's log does not say it handed the gpu jobs back")
	}
}
