package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"drover/admin"
)

// resultLines parses drover results' output, one result per line.
func resultLines(t *testing.T, out string) []admin.Result {
	t.Helper()
	var rs []admin.Result
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var r admin.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("results line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestResultsSurviveKill: 100 jobs run by two --exec worker processes;
// drover results prints each job's exact output once, the same 100 after a
// kill -9 of serve and a restart, and --from a cursor only what followed;
// serve --results writes the same lines to its files.
func TestResultsSurviveKill(t *testing.T) {
	dir := t.TempDir()
	storeDir, filesDir := filepath.Join(dir, "store"), filepath.Join(dir, "results")
	serveArgs := []string{"serve", "--store", storeDir, "--metrics", "",
		"--heartbeat-interval", "1s", "--results", filesDir, "--results-file-bytes", "4KiB"}
	srv, srvOut := start(t, append(serveArgs, anyPorts...)...)
	peers, adminEP, events := serving(t, srvOut)
	serveArgs = append(serveArgs, onPorts(peers, adminEP, events)...) // a restart keeps the ports
	for i := range 2 {
		start(t, "worker", "--connect", peers, "--slots", "4", "--id", fmt.Sprintf("w%d", i), "--heartbeat-interval", "1s",
			"--exec", `printf 'output of %s\nline two ' "$DROVER_URL"; echo "$DROVER_ATTEMPT"`)
	}
	var urls strings.Builder
	for i := range 100 {
		fmt.Fprintf(&urls, "http://r.test/%03d\n", i)
	}
	if out, code := run(t, urls.String(), "submit", "-", "--connect", peers, "--crawler", "exec", "--processor", "sh"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	var rs []admin.Result
	eventually(t, "100 results", 60*time.Second, func() bool {
		out, code := run(t, "", "results", "--connect", adminEP)
		if code != 0 {
			return false
		}
		rs = resultLines(t, out)
		return len(rs) == 100
	})
	check := func(rs []admin.Result) {
		t.Helper()
		seen := map[string]bool{}
		for i, r := range rs {
			want := "output of " + r.URL + "\nline two 1\n"
			if r.Output != want || r.Outcome != "ok" || r.Attempt != 1 || r.Crawler != "exec" || r.Worker == "" || r.FinishedAt.IsZero() {
				t.Fatalf("result %+v: want output %q, outcome ok, attempt 1, a worker and a finish time", r, want)
			}
			if i > 0 && r.Cursor <= rs[i-1].Cursor {
				t.Fatalf("cursors not increasing: %d after %d", r.Cursor, rs[i-1].Cursor)
			}
			if seen[r.URL] {
				t.Fatalf("%s printed twice", r.URL)
			}
			seen[r.URL] = true
		}
	}
	check(rs)
	before, _ := json.Marshal(rs)

	if err := srv.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	_, out2 := start(t, serveArgs...)
	eventually(t, "restarted serve listening", 10*time.Second, func() bool { return strings.Contains(out2.String(), "drover serving") })
	out, code := run(t, "", "results", "--connect", adminEP)
	after := resultLines(t, out)
	if b, _ := json.Marshal(after); code != 0 || string(b) != string(before) {
		t.Fatalf("after kill -9 and restart: exit %d, %d results; want the same 100 as before", code, len(after))
	}
	cut := rs[59].Cursor
	out, code = run(t, "", "results", "--connect", adminEP, "--from", fmt.Sprint(cut))
	tail := resultLines(t, out)
	if code != 0 || len(tail) != 40 || tail[0].Cursor != rs[60].Cursor {
		t.Fatalf("--from %d: exit %d, %d results; want the 40 after it", cut, code, len(tail))
	}
	if out, code = run(t, "", "results", "--connect", adminEP, "--crawler", "other"); code != 0 || out != "" {
		t.Fatalf("--crawler other: exit %d, %q; want nothing", code, out)
	}
	// The files hold the same 100 lines once, across the kill, in files of
	// about 4 KiB.
	var files []admin.Result
	eventually(t, "result files complete", 20*time.Second, func() bool {
		files = files[:0]
		names, _ := filepath.Glob(filepath.Join(filesDir, "results-*.jsonl"))
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, resultLines(t, string(b))...)
		}
		return len(files) >= 100
	})
	check(files)
	if len(files) != 100 {
		t.Fatalf("result files hold %d results, want 100", len(files))
	}
	if names, _ := filepath.Glob(filepath.Join(filesDir, "results-*.jsonl")); len(names) < 3 || filepath.Base(names[0]) != "results-00000001.jsonl" {
		t.Fatalf("result files %v: want several, from results-00000001.jsonl", names)
	}
}

// TestResultsFollowMemory: with --store memory results are kept in memory
// with the same API; drover results --follow prints results as they come
// and failed jobs carry their error.
func TestResultsFollowMemory(t *testing.T) {
	_, srvOut := start(t, append([]string{"serve", "--store", "memory", "--metrics", "", "--heartbeat-interval", "1s"}, anyPorts...)...)
	peers, adminEP, _ := serving(t, srvOut)
	_, follow := start(t, "results", "--follow", "--connect", adminEP)
	start(t, "worker", "--connect", peers, "--heartbeat-interval", "1s",
		"--exec", `case "$DROVER_URL" in *bad*) echo broken >&2; exit 65;; esac; echo "got $DROVER_URL"`)
	if out, code := run(t, "", "submit", "--connect", peers, "--crawler", "m", "http://m.test/a", "http://m.test/bad"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	eventually(t, "two results followed", 30*time.Second, func() bool { return strings.Count(follow.String(), "\n") >= 2 })
	rs := resultLines(t, follow.String())
	byURL := map[string]admin.Result{}
	for _, r := range rs {
		byURL[r.URL] = r
	}
	if r := byURL["http://m.test/a"]; r.Outcome != "ok" || r.Output != "got http://m.test/a\n" {
		t.Errorf("result of a: %+v, want ok with its output", r)
	}
	if r := byURL["http://m.test/bad"]; r.Outcome != "failed" || !strings.Contains(r.Error, "external") {
		t.Errorf("result of bad: %+v, want failed with an external failure", r)
	}
}

// TestNotifierCarriesCursor: the HTTP notifier's job.done report names the
// result's cursor and carries a small output.
func TestNotifierCarriesCursor(t *testing.T) {
	got := make(chan admin.Event, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev admin.Event
		if err := json.NewDecoder(r.Body).Decode(&ev); err == nil {
			got <- ev
		}
	}))
	defer hook.Close()
	t.Setenv("DROVER_NOTIFIER_URL", hook.URL)
	_, srvOut := start(t, append([]string{"serve", "--store", "memory", "--metrics", "", "--heartbeat-interval", "1s"}, anyPorts...)...)
	peers, adminEP, _ := serving(t, srvOut)
	start(t, "worker", "--connect", peers, "--heartbeat-interval", "1s", "--exec", `echo "small $DROVER_URL"`)
	if out, code := run(t, "", "submit", "--connect", peers, "--crawler", "n", "http://n.test/a"); code != 0 {
		t.Fatalf("submit: exit %d, %s", code, out)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-got:
			if ev.Kind != admin.EventJobDone {
				continue
			}
			if ev.Cursor != 1 || ev.Output != "small http://n.test/a\n" {
				t.Fatalf("job.done report %+v: want cursor 1 and the output", ev)
			}
			out, _ := run(t, "", "results", "--connect", adminEP, "--from", fmt.Sprint(ev.Cursor-1))
			if rs := resultLines(t, out); len(rs) != 1 || rs[0].JobID != ev.JobID {
				t.Fatalf("results from the report's cursor: %q, want its job", out)
			}
			return
		case <-deadline:
			t.Fatal("no job.done report within 30s")
		}
	}
}
