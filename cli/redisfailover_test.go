package cli

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"drover/store/redis/redistest"
)

// failoverSettle bounds how long after a replica took over from a killed
// master both coordinators may take to accept every URL submitted to
// them: a round trip or two when idle, with a margin for a loaded machine
// (load 20 on 2 cores); the cluster client's periodic topology reload,
// which used to be the only way to learn of the new master, comes a
// minute after the last one.
const failoverSettle = 25 * time.Second

// Two `drover serve` on one Redis Cluster with a worker each; a master is
// SIGKILLed and its replica takes over. From then on each coordinator
// accepts at once URLs on 30 hosts (so on every shard, the failed-over
// one included), and every job runs. A dial to the dead master is no
// redirection, so the coordinators' cluster client kept sending that
// shard's calls to it until its periodic topology reload, a minute after
// the last: until then their URLs were rejected (unavailable) and the
// stalled calls cost the coordinator's workers their sessions. The
// client's complaints about the dead node are in the log's format.
func TestMasterFailoverServedAtOnceOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	dir := t.TempDir()
	a := startRedisCoordinator(t, cl.URL(), dir, "a")
	b := startRedisCoordinator(t, cl.URL(), dir, "b")
	a.awaitWorkers(t, 1)
	b.awaitWorkers(t, 1)
	before := failoverURLs("before", 30)
	if acc, _ := submitTo(t, a.peers, before); acc != len(before) {
		t.Fatalf("a accepted %d of %d before the fault", acc, len(before))
	}

	victim := cl.Masters()[0]
	replica := cl.ReplicaOf(victim)
	if replica < 0 {
		t.Fatalf("master %d has no replica", victim)
	}
	cl.Kill(victim)
	eventually(t, "the killed master's replica takes over", 90*time.Second, func() bool {
		return cl.Info(replica, "replication", "role") == "master" && cl.State(replica) == "ok"
	})
	promoted := time.Now()
	want := map[string]bool{}
	for _, u := range before {
		want[u] = true
	}
	for _, c := range []struct {
		name string
		rc   *redisCoordinator
	}{{"a", a}, {"b", b}} {
		urls := failoverURLs("after-"+c.name, 30)
		for _, u := range urls {
			want[u] = true
		}
		var out string
		for {
			var ok bool
			if out, ok = acceptedAll(t, c.rc.peers, urls); ok {
				t.Logf("%s accepted every URL %v after the replica took over", c.name, time.Since(promoted).Round(time.Millisecond))
				break
			}
			if time.Since(promoted) > failoverSettle {
				t.Fatalf("%v after the replica took over, %s still does not accept every URL: %s\nthe cluster: %s", failoverSettle, c.name, out, cl.URL())
			}
		}
	}
	// The client's own messages about the dead node are in the log's
	// format, not go-redis's default logger's ("redis: DATE TIME
	// pool.go:N: ...").
	for _, c := range []*redisCoordinator{a, b} {
		n := 0
		for _, l := range strings.Split(c.serve.String(), "\n") {
			if strings.HasPrefix(l, "redis: ") {
				t.Fatalf("a line of the Redis client's own logger in the coordinator's log: %q; want it in the log's format", l)
			}
			if strings.Contains(l, `msg="redis client: `) {
				n++
			}
		}
		t.Logf("%d warnings of the Redis client in a coordinator's log", n)
	}
	eventually(t, "every job runs", 2*time.Minute, func() bool {
		seen := ran(t, a, b)
		for u := range want {
			if seen[u] == 0 {
				return false
			}
		}
		return true
	})
}

// failoverURLs are n URLs of phase on n private hosts (no politeness
// delay), so spread over every shard.
func failoverURLs(phase string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://10.7.%d.%d/%s", i/200, i%200+1, phase)
	}
	return urls
}

// acceptedAll submits urls to peers and reports whether each was accepted
// (or a duplicate of one accepted earlier), with the command's output.
func acceptedAll(t *testing.T, peers string, urls []string) (string, bool) {
	t.Helper()
	out, code := run(t, strings.Join(urls, "\n")+"\n", "submit", "-", "--connect", peers, "--timeout", "20s")
	m := submitCounts.FindStringSubmatch(out)
	if m == nil {
		return out, false
	}
	rejected, _ := strconv.Atoi(m[5])
	return out, code == 0 && rejected == 0
}

// A coordinator asked to have every batch held by 2 replicas of a shard
// that has 1 (store.redis.wait_replicas): each URL submitted is rejected
// (unavailable, exit 1), as the README says, and the coordinator's log
// says why, naming the replicas wanted, once for many rejections. The log
// used to be silent: the operator saw nothing of it.
func TestUnavailableStoreIsLoggedOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL(), "--store-redis-wait-replicas", "2")
	t0 := time.Now()
	for i := range 3 {
		out, code := run(t, strings.Join(failoverURLs(fmt.Sprint("unconfirmed-", i), 10), "\n")+"\n", "submit", "-", "--connect", a.peers)
		if code != 1 || !strings.Contains(out, "10 rejected") || !strings.Contains(out, "(unavailable)") {
			t.Fatalf("submit %d with 2 replicas wanted of 1: exit %d, %q; want exit 1, every URL rejected unavailable", i, code, out)
		}
	}
	var lines []string
	eventually(t, "the coordinator logs why it refused the keys", 30*time.Second, func() bool {
		lines = lines[:0]
		for _, l := range strings.Split(a.serve.String(), "\n") {
			if strings.Contains(l, "keys refused as unavailable") {
				lines = append(lines, l)
			}
		}
		return len(lines) > 0
	})
	most := 1 + int(time.Since(t0)/(10*time.Second)) // one per 10 s
	if len(lines) > most || !strings.Contains(lines[0], "replicas") || !strings.Contains(lines[0], "WAIT") {
		t.Fatalf("the coordinator's log says of the refused keys:\n%s\nwant at most %d lines (one per 10 s) naming the replicas wanted and WAIT", strings.Join(lines, "\n"), most)
	}
	t.Logf("the coordinator's log: %s", lines[0])
}
