package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"drover/admin"
	"drover/net/worker"
	"drover/store/redis/redistest"
)

// runWorkerOn runs an in-process worker named id with 3 slots on the
// coordinator at peers until the test ends (or stop is called); ended
// gets what Run returned. A Run that does not return within a minute of
// its stop fails the test rather than hanging it.
func runWorkerOn(t *testing.T, peers, id string, h worker.Handler) (ended chan error, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ended, exited := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(exited)
		ended <- worker.Run(ctx, worker.Options{Connect: peers, ID: id, Slots: 3, Heartbeat: time.Second, StopTimeout: time.Second}, h)
	}()
	stop = func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("in-process worker %s of %s: Run still running a minute after it was stopped", id, peers)
		}
	}
	t.Cleanup(stop)
	return ended, stop
}

// Three `drover serve` on one Redis Cluster: actions posted to a
// coordinator that dies are carried out where their workers went, and a
// drain outlives the coordinator that carried it out. Worker mover is on
// b; b stops (SIGSTOP) with an evict of mover posted to it by a, and is
// SIGKILLed; mover connects to a; a's sweep of b forwards the evict to a,
// which evicts mover there. Worker drainee, drained from a while running
// jobs on b, connects after b's death to c, started after the drain: c
// drains it as it says HELLO and lets it go (DISCONNECT 200); its drain
// is then forgotten, and drainee connecting again takes jobs.
func TestClusterActionsOutliveCoordinatorOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	// b beats every 10 s: taken for dead 30 s after its last beat (20 to
	// 30 s after it stops), time for mover to connect to a first (the
	// evict's wait for b's answer, the store timeout, comes between).
	b := startRedisServe(t, cl.URL(), "--heartbeat-interval", "10s")
	bID := clusterID(t, b)
	t.Logf("a: peers %s; b: peers %s, coordinator %s", a.peers, b.peers, bID)
	adm := dialAdminT(t, a, true)
	act := actOn(t, adm, "a")
	urls := func(phase string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("http://10.9.%d.1/%s/%d", i%3, phase, i)
		}
		return out
	}
	if acc, _ := submitTo(t, a.peers, urls("first", 6)); acc != 6 {
		t.Fatalf("a accepted %d of 6", acc)
	}
	hold := func(ctx context.Context, _ worker.Job) worker.Result { <-ctx.Done(); return worker.OK(nil) }
	_, stopMover := runWorkerOn(t, b.peers, "mover", hold)
	runWorkerOn(t, b.peers, "drainee", hold)
	for _, w := range []string{"mover", "drainee"} {
		eventually(t, "a lists b's 3 jobs running on worker "+w, 60*time.Second, func() bool {
			p := queryT(t, adm, admin.Query{View: admin.ViewJobs, Filter: "state=claimed worker=" + w, Limit: 100})
			return len(p.Jobs) == 3
		})
		eventually(t, "a finds worker "+w+" on b", 60*time.Second, func() bool {
			return act(admin.ActUndrain, w).Affected == 1 // a no-op on a live worker: answered by b
		})
	}

	// drainee is drained by b, with its 3 jobs running: it stays.
	if res := act(admin.ActDrain, "drainee"); res.Affected != 1 || len(res.Errors) != 0 {
		t.Fatalf("drain drainee on a: %+v; want it drained by coordinator %s", res, bID)
	}

	// b stops with an evict of mover posted to it, then dies.
	stopProcess(t, b.proc)
	if res := act(admin.ActEvict, "mover"); res.Affected != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "posted there: redis control: coordinator "+bID+" did not answer evict") {
		t.Fatalf("evict of mover on a, b stopped: %+v; want one line saying b did not answer", res)
	}
	if err := b.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	// mover connects to a, and runs jobs there.
	stopMover()
	running, causes := make(chan struct{}, 8), make(chan error, 8)
	runWorkerOn(t, a.peers, "mover", func(ctx context.Context, _ worker.Job) worker.Result {
		select {
		case running <- struct{}{}:
		default:
		}
		<-ctx.Done()
		select {
		case causes <- context.Cause(ctx):
		default:
		}
		return worker.OK(nil)
	})
	if acc, _ := submitTo(t, a.peers, urls("second", 3)); acc != 3 {
		t.Fatalf("a accepted %d of 3", acc)
	}
	select {
	case <-running:
	case <-time.After(60 * time.Second):
		t.Fatalf("mover, connecting to a after b stopped, ran no job there within 60s")
	}
	// a's sweep of b settles the evict left there: forwarded to a, where
	// mover is now (answered as not done if a did not list mover yet).
	var settled string
	eventually(t, "a sweeps b and settles the evict it left", 90*time.Second, func() bool {
		log := a.serve.String()
		switch {
		case strings.Contains(log, "forwarded to the live coordinators their workers are on now"):
			settled = "forwarded"
		case strings.Contains(log, "taken for dead answered as not done by it"):
			settled = "answered"
		}
		return settled != ""
	})
	if settled != "forwarded" {
		t.Fatalf("a's sweep of b answered the evict of mover as not done instead of forwarding it to a, where mover runs jobs")
	}
	select {
	case err := <-causes:
		if !errors.Is(err, worker.ErrEvicted) {
			t.Fatalf("a job of mover on a ended with %v; want ErrEvicted (the evict b left, forwarded)", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("mover on a was not evicted after a's sweep of b forwarded the evict")
	}

	// drainee connects to c, which joined after the drain: drained at
	// once, and let go.
	c := startRedisServe(t, cl.URL())
	t.Logf("c: peers %s", c.peers)
	ended, _ := runWorkerOn(t, c.peers, "drainee", hold)
	select {
	case err := <-ended:
		if !errors.Is(err, worker.ErrDrained) {
			t.Fatalf("drainee on c: Run returned %v; want ErrDrained (its drain outlived b)", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("drainee on c was not drained")
	}
	eventually(t, "drainee's drain forgotten once let go", 60*time.Second, func() bool {
		out, err := cl.Cli(0, "-c", "hexists", "drover:drained", "drainee")
		return err == nil && strings.TrimSpace(out) == "0"
	})
	ran := make(chan struct{}, 16)
	runWorkerOn(t, c.peers, "drainee", func(ctx context.Context, _ worker.Job) worker.Result {
		ran <- struct{}{}
		return worker.OK(nil)
	})
	select {
	case <-ran:
	case <-time.After(60 * time.Second):
		t.Fatalf("drainee, let go and connecting again to c, ran no job")
	}
}
