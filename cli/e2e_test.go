package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"drover/admin"
	"drover/crawl"
	"drover/crawl/demosite"
)

// The end-to-end tests run the real binary as a user would: processes,
// loopback sockets, real files.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// drover builds the binary once for all tests of the package.
func drover(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds and runs the binary")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "drover-e2e")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "drover")
		out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// listening waits until serve's output names the address of each listener
// in names (peers, admin, events, metrics), and returns them.
func listening(t *testing.T, out *syncBuffer, names ...string) map[string]string {
	t.Helper()
	return listeningWithin(t, out, 30*time.Second, names...)
}

// listeningWithin is listening with a wait of d (a serve restoring a large
// store listens only once the restore is done).
func listeningWithin(t *testing.T, out *syncBuffer, d time.Duration, names ...string) map[string]string {
	t.Helper()
	at := make(map[string]string)
	eventually(t, "serve listening on "+strings.Join(names, ", "), d, func() bool {
		for _, line := range strings.Split(out.String(), "\n") {
			if name, addr, ok := strings.Cut(line, " listening on "); ok && !strings.Contains(name, " ") {
				at[name] = addr
			}
		}
		for _, n := range names {
			if at[n] == "" {
				return false
			}
		}
		return true
	})
	return at
}

// anyPort is a listener endpoint whose port the OS chooses: serve names
// the port in its output (listening), crawl in its first line (crawling).
const anyPort = "tcp://127.0.0.1:0"

// anyPorts are the flags binding the peers, admin and events listeners of
// serve or crawl to ports the OS chooses.
var anyPorts = []string{"--bind", anyPort, "--admin", anyPort, "--events", anyPort}

// serving waits until serve's output names its peers, admin and events
// endpoints, and returns them.
func serving(t *testing.T, out *syncBuffer) (peers, adminEP, events string) {
	t.Helper()
	at := listening(t, out, "peers", "admin", "events")
	return at["peers"], at["admin"], at["events"]
}

// onPorts are the flags binding serve's listeners to the endpoints a first
// start was given by the OS, for a restart on the same ports.
func onPorts(peers, adminEP, events string) []string {
	return []string{"--bind", peers, "--admin", adminEP, "--events", events}
}

// crawling waits until a crawl's output names its peers and admin
// endpoints ("crawling URL with N workers (peers P, admin A)"), and
// returns them.
func crawling(t *testing.T, out *syncBuffer) (peers, adminEP string) {
	t.Helper()
	re := regexp.MustCompile(`crawling \S+ with \d+ workers \(peers (\S+), admin (\S+)\)`)
	eventually(t, "crawl listening", 20*time.Second, func() bool {
		m := re.FindStringSubmatch(out.String())
		if m != nil {
			peers, adminEP = m[1], m[2]
		}
		return m != nil
	})
	return peers, adminEP
}

// start runs the binary with args in the background; its output is kept.
func start(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	return startCmd(t, exec.Command(drover(t), args...))
}

// startCmd starts cmd (the binary, or a command that runs it) in the
// background with the tests' environment (and what cmd.Env adds), its
// output kept; it dies with the test process (dieWithTest), and its
// process group is killed when the test ends. Wait for it either with
// cmd.Wait on the test's goroutine or with waitWithin, never both.
func startCmd(t *testing.T, cmd *exec.Cmd) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1"), cmd.Env...)
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if v, ok := waiters.LoadAndDelete(cmd); ok {
			// waitWithin's goroutine waits for it: kill, and let it.
			killGroup(cmd)
			<-v.(*waiter).done
			return
		}
		if cmd.ProcessState == nil {
			killGroup(cmd)
			cmd.Wait()
		}
	})
	return cmd, &out
}

// waitDelay bounds how long Wait waits, once a test's process has exited
// or its context ended, for output a stray grandchild still holds open.
const waitDelay = 10 * time.Second

// killGroup SIGKILLs cmd's process and its process group (dieWithTest
// gave it one): what it started goes too, and a stopped process dies as
// well. Wait for it after.
func killGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.Process.Kill()
}

// waiters holds the one goroutine waiting for each process waitWithin was
// asked about (by *exec.Cmd): a process is waited for exactly once.
var waiters sync.Map

type waiter struct {
	done chan struct{} // closed once Wait returned
	err  error         // Wait's, set before done closes
}

// waitWithin waits up to d for cmd (started by startCmd) to exit and
// returns Wait's error; exited is false if it still runs. It may be called
// again for the same cmd; cmd.Wait must not be called besides.
func waitWithin(cmd *exec.Cmd, d time.Duration) (exited bool, err error) {
	v, loaded := waiters.LoadOrStore(cmd, &waiter{done: make(chan struct{})})
	w := v.(*waiter)
	if !loaded {
		go func() {
			w.err = cmd.Wait()
			close(w.done)
		}()
	}
	select {
	case <-w.done:
		return true, w.err
	case <-time.After(d):
		return false, nil
	}
}

// run runs the binary to completion and returns its output and exit code.
func run(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := dieWithTest(exec.CommandContext(ctx, drover(t), args...))
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("drover %v: %v", args, err)
	}
	return string(out), code
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline
	}
}

func statusJSON(t *testing.T, adminEP string) (admin.Totals, []admin.WorkerRow, bool) {
	out, code := run(t, "", "status", "--json", "--connect", adminEP)
	if code != 0 {
		return admin.Totals{}, nil, false
	}
	var st struct {
		Totals  admin.Totals      `json:"totals"`
		Workers []admin.WorkerRow `json:"workers"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json printed %q: %v", out, err)
	}
	return st.Totals, st.Workers, true
}

// TestServeWorkerSubmitStatus drives the headless server with a real
// --exec worker process, submit and status, then stops it with SIGTERM.
func TestServeWorkerSubmitStatus(t *testing.T) {
	// Every port is chosen by the OS and read from serve's output.
	const ephemeral = "tcp://127.0.0.1:0"
	srv, srvOut := start(t, "serve", "--store", "memory", "--bind", ephemeral, "--admin", ephemeral, "--events", ephemeral,
		"--metrics", "127.0.0.1:0", "--heartbeat-interval", "1s")
	at := listening(t, srvOut, "peers", "admin", "events", "metrics")
	peers, adminEP, metrics := at["peers"], at["admin"], strings.TrimPrefix(at["metrics"], "http://")
	start(t, "worker", "--connect", peers, "--slots", "2", "--id", "w-exec", "--heartbeat-interval", "1s",
		"--exec", `echo "page $DROVER_URL"; case "$DROVER_URL" in *bad*) exit 65;; *retry*) exit 75;; esac`)

	out, code := run(t, "http://x.test/a\nhttp://x.test/b\nhttp://X.TEST:80/a#top\nhttp://x.test/bad\nhttp://x.test/retry\nnot a url\n",
		"submit", "-", "--connect", peers)
	if code != 1 || !strings.Contains(out, "6 submitted: 4 accepted, 1 duplicates, 0 waiting, 1 rejected") {
		t.Fatalf("submit: exit %d, output %q: want exit 1 (one rejected) and the counts", code, out)
	}
	var tot admin.Totals
	eventually(t, "all jobs settled", 20*time.Second, func() bool {
		tt, _, ok := statusJSON(t, adminEP)
		tot = tt
		return ok && tt.Done+tt.Failed == 4
	})
	// bad: external, failed at once; retry: internal 3 times, then failed.
	if tot.Done != 2 || tot.Failed != 2 || tot.DedupHits != 1 {
		t.Fatalf("totals %+v: want 2 done, 2 failed, 1 duplicate", tot)
	}
	if l := tot.Listening; l.Peers != peers || l.Admin != adminEP || l.Events != at["events"] {
		t.Fatalf("status lists the endpoints %+v, want those serve printed: %v", l, at)
	}
	_, workers, _ := statusJSON(t, adminEP)
	if len(workers) != 1 || workers[0].ID != "w-exec" || workers[0].Slots != 2 {
		t.Fatalf("workers %+v: want w-exec with 2 slots", workers)
	}
	// The metrics endpoint shows the same run (totals reach it once a second,
	// so a scrape may come from a moment before the last job settled: wait
	// for every series, then name those still missing).
	series := []string{`drover_jobs{state="done"} 2`, `drover_jobs{state="failed"} 2`, "drover_dedup_hits_total 1", `drover_workers{state="idle"} 1`, "drover_dispatches_total",
		"drover_reactor_steps_total", "drover_reactor_messages_total", "drover_reactor_gathered_total"}
	var missing []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		missing = missing[:0]
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, s := range series {
				if !strings.Contains(string(b), s) {
					missing = append(missing, s)
				}
			}
		} else {
			missing = append(missing, err.Error())
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range missing {
		t.Errorf("metrics lack %s after 20s", s)
	}
	if resp, err := http.Get("http://" + metrics + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/readyz: %v %v, want 200", resp, err)
	}
	srv.Process.Signal(syscall.SIGTERM)
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v (want exit 0); output:\n%s", err, srvOut.String())
	}
}

func TestConfigErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "drover.yaml")
	os.WriteFile(bad, []byte("heartbeat:\n  intervall: 2s\n  liveness: 0\n"), 0o644)
	out, code := run(t, "", "config", "check", bad)
	if code != 2 || !strings.Contains(out, "heartbeat.intervall") || !strings.Contains(out, "heartbeat.interval") || !strings.Contains(out, "heartbeat.liveness") {
		t.Fatalf("config check: exit %d, %q: want exit 2 naming the unknown key, its suggestion and the bad value", code, out)
	}
	out, code = run(t, "", "serve", "--heartbeat-interval", "-1s")
	if code != 2 || !strings.Contains(out, "heartbeat.interval") {
		t.Fatalf("serve with a bad flag: exit %d, %q: want exit 2 naming the key", code, out)
	}
	out, code = run(t, "", "serve", "--peers-gather", "1s")
	if code != 2 || !strings.Contains(out, "peers.gather") || !strings.Contains(out, "10ms") {
		t.Fatalf("serve --peers-gather 1s: exit %d, %q: want exit 2 naming the key and its range", code, out)
	}
}

// TestDemoNoTUI is the README's main job without a terminal: it must run to
// completion and match the built-in site's expected pages.
func TestDemoNoTUI(t *testing.T) {
	out, code := run(t, "", "demo", "--no-tui")
	if code != 0 || !strings.Contains(out, "check:             matches the site") {
		t.Fatalf("demo --no-tui: exit %d:\n%s", code, out)
	}
}

// TestCrawlSurvivesWorkerKill crawls the demo site served by this test with
// one local worker and two worker processes, SIGKILLs one of those in the
// middle, and checks the final set of pages equals the site's expected set.
func TestCrawlSurvivesWorkerKill(t *testing.T) {
	site := demosite.New(demosite.Options{SlowDelay: 50 * time.Millisecond})
	hs := httptest.NewServer(site)
	defer hs.Close()
	want, err := site.Expect(hs.URL, 10)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "pages.jsonl")
	common := []string{"--heartbeat-interval", "1s", "--crawl-min-delay", "5ms"}
	crawlArgs := append([]string{"crawl", hs.URL + "/", "--no-tui", "--workers", "1", "--slots", "1", "--metrics", "", "--out", out,
		"--broker-max-request-failures", "6"}, anyPorts...)
	crawlCmd, crawlOut := start(t, append(crawlArgs, common...)...)
	peers, adminEP := crawling(t, crawlOut)
	victim, _ := start(t, append([]string{"worker", "--connect", peers, "--slots", "3", "--id", "victim"}, common...)...)
	start(t, append([]string{"worker", "--connect", peers, "--slots", "3", "--id", "survivor"}, common...)...)

	eventually(t, "a third of the site fetched", 30*time.Second, func() bool { return len(site.Hits()) > len(want.Pages)/3 })
	victim.Process.Signal(syscall.SIGKILL)
	victim.Wait()
	// The crawl is defined on its coordinator, as a fleet crawl is.
	if out, code := run(t, "", "status", "--connect", adminEP); code != 0 || !regexp.MustCompile(`(?m)^crawl +running +host +10 `).MatchString(out) {
		t.Fatalf("status during the crawl: exit %d\n%s\nwant crawl running, scope host, depth 10", code, out)
	}

	if exited, err := waitWithin(crawlCmd, 90*time.Second); !exited {
		t.Fatalf("crawl did not finish:\n%s", crawlOut.String())
	} else if err != nil {
		t.Fatalf("crawl: %v\n%s", err, crawlOut.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]crawl.Record{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r crawl.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("results line %q: %v", sc.Text(), err)
		}
		if _, dup := got[r.URL]; dup {
			t.Errorf("%s recorded twice", r.URL)
		}
		got[r.URL] = r
	}
	for u, fact := range want.Pages {
		r, ok := got[u]
		switch {
		case !ok:
			t.Errorf("missing after the kill: %s", u)
		case fact.Outcome == demosite.Failed && r.Outcome != "failed":
			t.Errorf("%s: %s, want failed", u, r.Outcome)
		case fact.Outcome == demosite.Fetched && r.Status != fact.Status:
			t.Errorf("%s: status %d, want %d", u, r.Status, fact.Status)
		}
	}
	if len(got) != len(want.Pages) {
		t.Errorf("%d pages recorded, want %d", len(got), len(want.Pages))
	}
}

// TestUnknownEnvIsAWarning: an unrelated DROVER_ variable in the user's
// shell does not stop a command: it exits 0 and warns, naming the nearest
// known variable.
func TestUnknownEnvIsAWarning(t *testing.T) {
	cmd := dieWithTest(exec.Command(drover(t), "config", "show"))
	cmd.Env = append(os.Environ(), "DROVER_CONFIG=", "NO_COLOR=1", "DROVER_HEARTBEAT_INTERVL=2s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("config show with an unknown DROVER_ variable: %v, want exit 0\n%s", err, stderr.String())
	}
	want := "warning: environment variable DROVER_HEARTBEAT_INTERVL names no configuration key and is ignored; did you mean DROVER_HEARTBEAT_INTERVAL?"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want the warning %q", stderr.String(), want)
	}
	if !strings.Contains(stdout.String(), "heartbeat:\n  interval: 1s") {
		t.Errorf("config show printed %q, want the configuration", stdout.String())
	}
}
