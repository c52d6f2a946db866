package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"drover/coord/id"
	"drover/store/redis/redistest"
)

// The README's "drover evict w-12 on any coordinator", through the
// commands: two `drover serve` on one Redis Cluster, two worker processes
// on b; `drover drain`, `drover drain --undo` and `drover evict` given
// a's admin endpoint act on b's workers (b carries them out, exit 0), the
// drained worker finishes and exits 0, and an id no coordinator knows is
// refused, named, exit 1. (The commands used to refuse every worker of
// another coordinator as unknown before asking.)
func TestClusterWorkerCommandsOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	b := startRedisServe(t, cl.URL())
	idle, _ := start(t, "worker", "--connect", b.peers, "--id", "w-idle", "--heartbeat-interval", "1s", "--exec", "true")
	b.startWorker(t, "w-other", 1, "--exec", "true")
	b.awaitWorkers(t, 2)

	// An undrain of a live worker is a no-op b answers: once a finds b's
	// workers (published with b's summary), it says so.
	var out string
	eventually(t, "drover drain --undo on a of b's worker w-idle", 30*time.Second, func() bool {
		var code int
		out, code = run(t, "", "drain", "--undo", "--connect", a.adm, "w-idle")
		return code == 0
	})
	if !strings.Contains(out, "undrained 1 worker") {
		t.Fatalf("drover drain --undo on a: %q; want it undrained by b", out)
	}
	if out, code := run(t, "", "drain", "--connect", a.adm, "w-idle"); code != 0 || !strings.Contains(out, "draining 1 worker") {
		t.Fatalf("drover drain on a of b's worker: exit %d, %q; want exit 0, draining 1 worker", code, out)
	}
	if exited, err := waitWithin(idle, 30*time.Second); !exited || err != nil {
		t.Fatalf("the drained worker (idle) after the drain: exited %v, %v; want it let go, exit 0", exited, err)
	}
	if out, code := run(t, "", "evict", "--yes", "--connect", a.adm, "w-other"); code != 0 || !strings.Contains(out, "evicted 1 worker") {
		t.Fatalf("drover evict on a of b's worker: exit %d, %q; want exit 0, evicted 1 worker", code, out)
	}
	out, code := run(t, "", "evict", "--yes", "--connect", a.adm, "w-nobody")
	if code != 1 || !strings.Contains(out, `"w-nobody": unknown worker (nor on any other coordinator of the cluster)`) {
		t.Fatalf("drover evict on a of a worker no coordinator has: exit %d, %q; want exit 1 naming it", code, out)
	}
}

// A --store that is a URL of another scheme than redis or rediss, and a
// Redis URL whose port is not a number, exit 2 naming the key (as the
// README says of a URL that does not parse), without the password: the
// first is not made a directory of that name, the second is not dialled.
func TestStoreURLSchemeAndPortExitTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		key  string
	}{
		{[]string{"--store", "http://ops:s3cret@h:1"}, "store.path"},
		{[]string{"--store", "redis://ops:s3cret@h:notaport"}, "store.path"},
		{[]string{"--store-url", "redis://h:1,h:70000"}, "store.url"},
	} {
		out, code := run(t, "", append([]string{"serve", "--bind", "tcp://127.0.0.1:0", "--admin", "tcp://127.0.0.1:0",
			"--events", "tcp://127.0.0.1:0", "--metrics", ""}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.key) || strings.Contains(out, "s3cret") {
			t.Errorf("serve %v: exit %d, output %q; want exit 2 naming %s, without the password", c.args, code, out, c.key)
		}
	}
	if _, err := os.Stat("http:"); err == nil {
		os.RemoveAll("http:")
		t.Errorf("serve --store http://... made a directory http:")
	}
}

// `drover requeue FINGERPRINT` on any coordinator, as its help says: a job
// a's worker failed (exit 65: no retry) is requeued through b, named by
// its key's fingerprint (upper case is the same key); a carries it out
// and its worker runs the job again. (The command used to refuse every
// target but a decimal job id, exit 2.)
func TestRequeueByFingerprintOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	a := startRedisServe(t, cl.URL())
	b := startRedisServe(t, cl.URL())
	ranFile := filepath.Join(t.TempDir(), "a.ran")
	a.startWorker(t, "w-fail", 1, "--exec", `echo "$DROVER_URL" >> `+ranFile+`; exit 65`)
	a.awaitWorkers(t, 1)
	const url = "http://10.9.1.1/requeue-fp"
	if acc, _ := submitTo(t, a.peers, []string{url}); acc != 1 {
		t.Fatalf("a accepted %d of 1", acc)
	}
	runs := func() int {
		b, err := os.ReadFile(ranFile)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	eventually(t, "a's worker fails the job", 60*time.Second, func() bool {
		tot, _, ok := statusJSON(t, a.adm)
		return ok && tot.Failed == 1
	})
	k, err := id.NewKey("crawl", "fetch", url)
	if err != nil {
		t.Fatal(err)
	}
	fp := strings.ToUpper(k.Fingerprint().String())
	// b finds the failed job in a's retries, published once a heartbeat.
	var out string
	eventually(t, "drover requeue FINGERPRINT on b of the job a failed", 30*time.Second, func() bool {
		var code int
		out, code = run(t, "", "requeue", "--connect", b.adm, fp)
		if code == 2 {
			t.Fatalf("drover requeue %s on b: exit 2, %q; want the fingerprint taken", fp, out)
		}
		return code == 0
	})
	if !strings.Contains(out, "requeued 1 job") {
		t.Fatalf("drover requeue %s on b: %q; want it requeued by a", fp, out)
	}
	eventually(t, "a's worker runs the requeued job again", 60*time.Second, func() bool { return runs() == 2 })
	if out, code := run(t, "", "requeue", "--connect", b.adm, "not-a-job"); code != 2 || !strings.Contains(out, "32 hex digits") {
		t.Fatalf("drover requeue not-a-job: exit %d, %q; want exit 2 saying what a target is", code, out)
	}
}

// A store URL whose password holds '/', '?' and '#' unescaped (as
// generated passwords do) logs in, and no part of the password is shown:
// serve starts, logs the URL with the password hidden, and a submit runs.
// The URL used to be cut at the '/': serve exited 2 showing the
// password's tail as a path.
func TestStoreURLPasswordWithSlashOnRedis(t *testing.T) {
	drover(t)
	cl := redistest.Start(t)
	const pw = "s3/cr?e#t"
	for i := range cl.Ports {
		if out, err := cl.Cli(i, "acl", "setuser", "ops", "on", ">"+pw, "~*", "&*", "+@all"); err != nil {
			t.Fatalf("acl setuser on node %d: %v, %s", i, err, out)
		}
	}
	url := "redis://ops:" + pw + "@" + strings.Join(cl.Addrs(), ",")
	a := startRedisServe(t, url)
	if acc, _ := submitTo(t, a.peers, []string{"http://10.9.2.1/slash"}); acc != 1 {
		t.Fatalf("a accepted %d of 1", acc)
	}
	if log := a.serve.String(); strings.Contains(log, "s3/cr") || strings.Contains(log, "cr?e") || !strings.Contains(log, "redis://ops:xxxxx@") {
		t.Fatalf("serve's log shows the password, or not the URL with it hidden:\n%s", log)
	}
}
