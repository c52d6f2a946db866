package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"drover/net/worker"
)

// TestFrontierBeyondRAM is issue 21's queued jobs beyond RAM, as a user
// meets it: jobs are submitted with `drover submit -` into `drover serve
// --store-resident-jobs R`, which keeps at most R of them in memory; status
// counts them all; serve is killed with SIGKILL and restarted on the same
// store, and the count is still exact; then a worker drains them, each
// once, in queue order per host (within the worker's concurrency).
//
// The sizes come from the environment, small by default (a CI run);
// `make frontier` runs the full size: 2,000,000 jobs, R = 100,000, and
// serve's RSS held to 400 MB throughout: sampled every rssEvery during the
// submit, the restart and the drain (FRONTIER_JOBS, FRONTIER_RESIDENT,
// FRONTIER_MAX_RSS_MB; 250 MB at the CI size).
func TestFrontierBeyondRAM(t *testing.T) {
	n := envInt(t, "FRONTIER_JOBS", 20_000)
	resident := envInt(t, "FRONTIER_RESIDENT", 2_000)
	// The CI size's bound is loose (its serve holds 100 MB or so); it
	// catches a serve that reads a pipelined submit whole, or its client
	// sending it all again.
	maxRSS := int64(envInt(t, "FRONTIER_MAX_RSS_MB", 250)) << 20
	const hosts = 13
	bin := drover(t)
	dir := filepath.Join(t.TempDir(), "store")
	var serveOut *syncBuffer // the running serve's output
	serve := func() (*exec.Cmd, map[string]string) {
		const ephemeral = "tcp://127.0.0.1:0"
		// Heartbeats 2 s apart: a client hears nothing for 6 s before it
		// takes serve for lost and sends its batches in flight again (at a
		// load of 40 on two cores serve gets a few per cent of a core).
		cmd, out := start(t, "serve", "--store", dir, "--store-resident-jobs", strconv.Itoa(resident),
			"--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral, "--metrics", "", "--heartbeat-interval", "2s",
			"--crawl-min-delay", "0s", "--crawl-per-host", "0") // no politeness: the hosts are made up

		// A restart restores first: minutes on a loaded machine (the time
		// to an exact status is logged below, not judged).
		serveOut = out
		return cmd, listeningWithin(t, out, 10*time.Minute, "peers", "admin")
	}
	srv, at := serve()
	watch := watchRSS(t, srv.Process.Pid, "the submit")

	// URL i (from 0) is job i+1, on host i % hosts.
	urls := filepath.Join(t.TempDir(), "urls.txt")
	f, err := os.Create(urls)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(bw, "http://h%d.frontier.test/page/%d\n", i%hosts, i)
	}
	if err := errors.Join(bw.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	began := time.Now()
	// The default --timeout: a submit of any size waits for progress, not
	// for the whole input (at a load of 25, 10 s per reply ran out).
	sub := dieWithTest(exec.Command(bin, "submit", "-", "--connect", at["peers"]))
	sub.Stdin = in
	sub.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1")
	out, err := sub.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d submitted: %d accepted", n, n)) {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	t.Logf("submitted %d jobs in %v", n, time.Since(began).Round(time.Millisecond))
	queued := func(when string) {
		t.Helper()
		eventually(t, when+": status counts every job queued", 10*time.Minute, func() bool {
			tt, _, ok := statusJSON(t, at["admin"])
			return ok && tt.Queued == n && tt.KeysQueued == n
		})
	}
	queued("after the submit")
	rss := func(when string, pid int) {
		t.Helper()
		r, err := processRSS(pid)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("serve RSS %s: %d MB", when, r>>20)
		if maxRSS > 0 && r > maxRSS {
			t.Errorf("serve RSS %s: %d MB, want at most %d MB", when, r>>20, maxRSS>>20)
		}
	}
	peak := func(when string, r int64) {
		t.Helper()
		t.Logf("serve RSS peak %s: %d MB", when, r>>20)
		if maxRSS > 0 && r > maxRSS {
			t.Errorf("serve RSS peak %s: %d MB, want at most %d MB", when, r>>20, maxRSS>>20)
		}
	}
	rss("after the submit", srv.Process.Pid)
	peak("during the submit", watch())

	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	began = time.Now()
	srv, at = serve()
	watch = watchRSS(t, srv.Process.Pid, "the restart")
	queued("after kill -9 and a restart")
	t.Logf("status exact %v after the restart began", time.Since(began).Round(time.Millisecond))
	// The restart took its counts from the store and read no key record:
	// the stored-key filter is rebuilt after it, while serve serves.
	eventually(t, "the stored-key filter rebuilt after the restart", 10*time.Minute, func() bool {
		return strings.Contains(serveOut.String(), "stored-key filter rebuilt")
	})
	t.Logf("stored-key filter rebuilt %v after the restart began", time.Since(began).Round(time.Millisecond))
	rss("after the restart", srv.Process.Pid)
	peak("during the restart", watch())
	watch = watchRSS(t, srv.Process.Pid, "the drain")

	// Drain: every job once, per host in id order within the worker's
	// concurrency (a job starts at most `slots` starts after a younger job
	// of its host).
	const slots = 64
	began = time.Now()
	var mu sync.Mutex
	seen := make(map[uint64]bool, n)
	var order []uint64
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		werr <- worker.Run(ctx, worker.Options{Connect: at["peers"], ID: "frontier-drain", Slots: slots, Heartbeat: time.Second, StopTimeout: time.Second},
			func(_ context.Context, j worker.Job) worker.Result {
				mu.Lock()
				defer mu.Unlock()
				if seen[j.ID] {
					t.Errorf("job %d ran twice", j.ID)
				}
				seen[j.ID] = true
				order = append(order, j.ID)
				if len(order) == n {
					close(done)
				}
				return worker.Result{}
			})
	}()
	select {
	case <-done:
	case err := <-werr:
		t.Fatalf("worker: %v", err)
	case <-time.After(time.Hour):
		t.Fatalf("drain: %d of %d jobs in an hour", len(order), n)
	}
	t.Logf("drained %d jobs in %v", n, time.Since(began).Round(time.Millisecond))
	cancel()
	select {
	case <-werr:
	case <-time.After(time.Minute):
		t.Fatalf("the in-process worker's Run still running a minute after it was stopped")
	}
	peak("during the drain", watch())
	mu.Lock()
	defer mu.Unlock()
	newest := make(map[uint64][]uint64, hosts) // per host: ids started, in order
	for i, j := range order {
		h := (j - 1) % hosts
		started := newest[h]
		if len(started) > slots && started[len(started)-1-slots] > j {
			for line := range strings.Lines(serveOut.String()) {
				if strings.Contains(line, "session") {
					t.Log(strings.TrimSpace(line)) // a worker session lost: its jobs went back behind those in memory
				}
			}
			t.Fatalf("job %d (host %d) started as number %d, after job %d of its host started more than %d jobs earlier (FIFO per host)",
				j, h, i+1, started[len(started)-1-slots], slots)
		}
		newest[h] = append(started, j)
	}
	eventually(t, "status counts every job done", time.Minute, func() bool {
		tt, _, ok := statusJSON(t, at["admin"])
		return ok && tt.Done == n && tt.Queued == 0 && tt.KeysQueued == 0
	})
}

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want an integer >= 0", name, v)
	}
	return n
}

// watchRSS samples the RSS of process pid every rssEvery until the
// function it returns is called, which returns the highest sample. With
// FRONTIER_RSS_TRACE naming a file, each sample is appended to it as
// "UNIX-SECONDS PHASE RSS-KB" (for a plot of a run).
func watchRSS(t *testing.T, pid int, phase string) (stop func() int64) {
	t.Helper()
	var trace *os.File
	if name := os.Getenv("FRONTIER_RSS_TRACE"); name != "" {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		trace = f
	}
	quit, peak := make(chan struct{}), make(chan int64, 1)
	go func() {
		tick := time.NewTicker(rssEvery)
		defer tick.Stop()
		var top int64
		for {
			if r, err := processRSS(pid); err == nil { // gone: nothing to sample
				top = max(top, r)
				if trace != nil {
					fmt.Fprintf(trace, "%d %s %d\n", time.Now().Unix(), strings.ReplaceAll(phase, " ", "_"), r>>10)
				}
			}
			select {
			case <-quit:
				if trace != nil {
					trace.Close()
				}
				peak <- top
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(quit); return <-peak }
}

// rssEvery is how often watchRSS samples.
const rssEvery = 250 * time.Millisecond

// processRSS is the resident set size of process pid (Linux /proc).
func processRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err != nil {
				return 0, fmt.Errorf("VmRSS line %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// TestFrontierCountsAfterKill checks the counts serve keeps with every
// write against the store itself, after a SIGKILL in the middle of the
// work: jobs queued, paged out, running and done. The restart
// restores from the counts alone (no key record read); the stored-key
// filter rebuilt after it reads every key record and logs what it would
// correct, which must be nothing. The totals then add up (a queued key per
// live job, a done key per done job), and the worker finishes every job
// accepted, each key done once.
func TestFrontierCountsAfterKill(t *testing.T) {
	const n = 1500
	bin := drover(t)
	dir := filepath.Join(t.TempDir(), "store")
	serveArgs := []string{"serve", "--store", dir, "--store-resident-jobs", "200", "--store-done-cache", "100",
		"--heartbeat-interval", "1s", "--metrics", "", "--crawl-min-delay", "0s", "--crawl-per-host", "0"}
	srv, out := start(t, append(serveArgs, anyPorts...)...)
	peers, adminEP, events := serving(t, out)
	serveArgs = append(serveArgs, onPorts(peers, adminEP, events)...) // the restart keeps the ports
	start(t, "worker", "--connect", peers, "--slots", "16", "--id", "w-counts", "--heartbeat-interval", "1s", "--exec", "true")
	var urls strings.Builder
	for i := range n {
		fmt.Fprintf(&urls, "http://h%d.counts.test/page/%d\n", i%7, i)
	}
	sub := dieWithTest(exec.Command(bin, "submit", "-", "--connect", peers))
	sub.Stdin = strings.NewReader(urls.String())
	sub.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1")
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Process.Kill(); sub.Wait() })
	// Kill while jobs are queued, paged out, running and done.
	eventually(t, "work under way", 2*time.Minute, func() bool {
		tt, _, ok := statusJSON(t, adminEP)
		return ok && tt.KeysDone >= 100 && tt.Queued >= 600
	})
	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	sub.Process.Kill() // if still sending: the count below is the store's
	sub.Wait()

	_, out2 := start(t, serveArgs...)
	eventually(t, "restarted serve listening", time.Minute, func() bool { return strings.Contains(out2.String(), "drover serving") })
	var rebuilt string
	eventually(t, "the stored-key filter rebuilt", 2*time.Minute, func() bool {
		for line := range strings.Lines(out2.String()) {
			if strings.Contains(line, "stored-key filter rebuilt") {
				rebuilt = line
				return true
			}
		}
		return false
	})
	if !strings.Contains(rebuilt, "queued_corrected=0 done_corrected=0") {
		t.Fatalf("after kill -9, the counts kept with the writes differ from the store's records: %s", rebuilt)
	}
	tt, _, ok := statusJSON(t, adminEP)
	if !ok || tt.KeysQueued != tt.Queued+tt.Dispatched+tt.Backoff || tt.KeysDone != tt.Done+tt.Failed {
		t.Fatalf("totals after the restart %+v: want a queued key per live job and a done key per finished one", tt)
	}
	accepted := tt.KeysQueued + tt.KeysDone
	t.Logf("killed with %d keys accepted, %d done; %s", accepted, tt.KeysDone, strings.TrimSpace(rebuilt))
	eventually(t, "every job accepted done", 5*time.Minute, func() bool {
		tt, _, ok = statusJSON(t, adminEP)
		return ok && tt.KeysQueued == 0 && tt.Queued+tt.Dispatched+tt.Backoff == 0
	})
	if tt.KeysDone != accepted || tt.Done+tt.Failed != accepted || tt.Failed != 0 {
		t.Fatalf("totals at the end %+v: want the %d keys accepted done, each once", tt, accepted)
	}
}
