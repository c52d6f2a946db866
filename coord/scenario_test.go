package coord

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"drover/admin"
	"drover/coord/broker"
	"drover/coord/id"
	"drover/coord/ledger"
)

// TestScenarios runs the scripted scenarios in testdata/*.txt, in the
// datadriven format (github.com/cockroachdb/datadriven). Each case is one
// or more command lines (the directive and its input lines; '#' lines
// among them are comments), a "----" line, and the expected output up to a
// blank line. After every command the coordinator's Ready output is printed
// too, so a scenario shows every answer, dispatch, close and finished job.
// Run with -rewrite to regenerate the expected output.
//
// Commands (sessions are s1, s2, ...; time starts at 2026-01-01 00:00:00):
//
//	hello S worker|producer ID [slots=N] [beat=D] [held=J,J] [k=v ...]
//	request S REQ URL...     queue S URL...     done S URL... [failed]
//	submit S REQ URL... [k=v ...]   (headers for every job)
//	result S JOB ok|internal|external|throttled [retry=D] [err=TEXT] [links=URL,URL]
//	beat S...  (traffic)     disconnect S     advance D (advance the clock, then Tick)
//	act KIND [TARGET...]     totals     query VIEW [filter=...]
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := newScenario(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			h.t = t
			var got strings.Builder
			h.run(&got, commandLine(td))
			for _, line := range strings.Split(td.Input, "\n") {
				if line != "" && !strings.HasPrefix(line, "#") {
					h.run(&got, line)
				}
			}
			return got.String()
		})
	})
}

// commandLine is a datadriven directive as its script spells it.
func commandLine(td *datadriven.TestData) string {
	parts := []string{td.Cmd}
	for _, a := range td.CmdArgs {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, " ")
}

type scenario struct {
	t    *testing.T
	c    *Coordinator
	now  time.Time
	urls map[id.Fingerprint]string
}

func newScenario(t *testing.T) *scenario {
	c, err := New(Config{
		Heartbeat: time.Second,
		Liveness:  3,
		Ledger:    ledger.Config{RequestTTL: time.Minute, DoneTTL: time.Hour, FailedTTL: 10 * time.Minute},
		Broker: broker.Config{MaxRequestFailures: 3, BackoffStart: time.Minute, BackoffCap: time.Hour, BackoffForgive: 10 * time.Minute, Jitter: 0.0001,
			RetryStart: time.Second, RetryCap: time.Minute, RetryJitter: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{t: t, c: c, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), urls: map[id.Fingerprint]string{}}
}

func sess(t *testing.T, s string) id.Session {
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "s"), 10, 64)
	if err != nil || !strings.HasPrefix(s, "s") {
		t.Fatalf("session %q: want s<number>", s)
	}
	return id.Session(n)
}

func (h *scenario) keys(urls []string) []id.Key {
	ks := make([]id.Key, len(urls))
	for i, u := range urls {
		ks[i] = id.Key{Crawler: "c", Processor: "p", URL: u}
		if nk, err := id.NewKey("c", "p", u); err == nil {
			h.urls[nk.Fingerprint()] = nk.URL
		}
	}
	return ks
}

func (h *scenario) url(fp id.Fingerprint) string {
	if u, ok := h.urls[fp]; ok {
		return u
	}
	return fp.String()
}

// split separates positional words from k=v options.
func split(words []string) (pos []string, opts map[string]string) {
	opts = map[string]string{}
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok {
			opts[k] = v
		} else {
			pos = append(pos, w)
		}
	}
	return pos, opts
}

func (h *scenario) run(w *strings.Builder, line string) {
	t := h.t
	f := strings.Fields(line)
	fmt.Fprintf(w, "> %s\n", line)
	var err error
	switch f[0] {
	case "hello":
		pos, opts := split(f[1:])
		hl := Hello{ID: pos[2], Host: "host-" + pos[2], Headers: map[string]string{}}
		hl.Role = map[string]Role{"worker": RoleWorker, "producer": RoleProducer, "console": RoleConsole}[pos[1]]
		for k, v := range opts {
			switch k {
			case "slots":
				hl.Slots, _ = strconv.Atoi(v)
			case "beat":
				hl.Beat, _ = time.ParseDuration(v)
			case "held":
				// job (its current attempt) or job.attempt
				for _, j := range strings.Split(v, ",") {
					jn, an, dotted := strings.Cut(j, ".")
					n, _ := strconv.ParseUint(jn, 10, 64)
					r := broker.Run{Job: broker.JobID(n)}
					if dotted {
						r.Attempt, _ = strconv.Atoi(an)
					} else if row, ok := h.c.brk.Job(r.Job); ok {
						r.Attempt = row.Attempts
					}
					hl.Held = append(hl.Held, r)
				}
			default:
				hl.Headers[k] = v
			}
		}
		var wel Welcome
		wel, err = h.c.Hello(h.now, sess(t, pos[0]), hl)
		if err == nil {
			fmt.Fprintf(w, "welcome heartbeat=%v liveness=%d\n", wel.Heartbeat, wel.Liveness)
			for _, r := range wel.Cancel {
				fmt.Fprintf(w, "cancel job=%d attempt=%d\n", r.Job, r.Attempt)
			}
		}
	case "request", "queue", "done":
		s := sess(t, f[1])
		var vs []Verdict
		switch f[0] {
		case "request":
			req, _ := strconv.ParseUint(f[2], 10, 64)
			vs, err = h.c.Request(h.now, s, req, h.keys(f[3:]), nil)
		case "queue":
			vs, err = h.c.Queue(h.now, s, h.keys(f[2:]), nil)
		case "done":
			urls := f[2:]
			failed := urls[len(urls)-1] == "failed"
			if failed {
				urls = urls[:len(urls)-1]
			}
			var items []DoneItem
			for _, k := range h.keys(urls) {
				items = append(items, DoneItem{Key: k, Failed: failed})
			}
			vs, err = h.c.Done(h.now, s, items, nil)
		}
		for _, v := range vs {
			fmt.Fprintf(w, "%s %s%s\n", h.url(v.FP), v.Verdict, reasonSuffix(v.Reason, v.Detail))
		}
	case "submit":
		pos, opts := split(f[1:])
		req, _ := strconv.ParseUint(pos[1], 10, 64)
		var js []JobSpec
		for _, k := range h.keys(pos[2:]) {
			js = append(js, JobSpec{Key: k, Headers: opts})
		}
		var vs []SubmitVerdict
		vs, err = h.c.Submit(h.now, sess(t, pos[0]), req, js, nil)
		for _, v := range vs {
			job := ""
			if v.Job != 0 {
				job = fmt.Sprintf(" job=%d", v.Job)
			}
			fmt.Fprintf(w, "%s %s%s%s\n", h.url(v.FP), v.Status, job, reasonSuffix(v.Reason, v.Detail))
		}
	case "result":
		pos, opts := split(f[1:])
		jn, _ := strconv.ParseUint(pos[1], 10, 64)
		kind := map[string]broker.OutcomeKind{"ok": broker.OK, "internal": broker.Internal, "external": broker.External, "throttled": broker.Throttled}[pos[2]]
		r := Result{Run: broker.Run{Job: broker.JobID(jn)}, Outcome: broker.Outcome{Kind: kind, Error: opts["err"]}}
		if a, ok := opts["attempt"]; ok {
			n, _ := strconv.Atoi(a)
			r.Run.Attempt = n
		} else if row, ok := h.c.brk.Job(r.Run.Job); ok {
			r.Run.Attempt = row.Attempts // the current attempt
		}
		if d, ok := opts["retry"]; ok {
			r.Outcome.RetryAfter, _ = time.ParseDuration(d)
		}
		if l, ok := opts["links"]; ok {
			for _, k := range h.keys(strings.Split(l, ",")) {
				r.Discovered = append(r.Discovered, JobSpec{Key: k})
			}
		}
		var vs []ResultVerdict
		vs, err = h.c.Results(h.now, sess(t, pos[0]), []Result{r}, nil)
		for _, v := range vs {
			fmt.Fprintf(w, "result job=%d attempt=%d %v accepted=%d duplicates=%d\n", v.Run.Job, v.Run.Attempt, v.Status, v.Accepted, v.Duplicates)
		}
	case "beat":
		for _, x := range f[1:] {
			if !h.c.Touch(h.now, sess(t, x)) {
				fmt.Fprintf(w, "%s unknown\n", x)
			}
		}
	case "disconnect":
		h.c.Disconnect(h.now, sess(t, f[1]))
	case "advance":
		d, perr := time.ParseDuration(f[1])
		if perr != nil {
			t.Fatalf("advance %q: %v", f[1], perr)
		}
		h.now = h.now.Add(d)
		h.c.Tick(h.now)
	case "act":
		var res admin.ActionResult
		res, err = h.c.Act(h.now, admin.Action{Kind: admin.ActionKind(f[1]), Targets: f[2:]})
		if err == nil {
			fmt.Fprintf(w, "affected=%d errors=%q\n", res.Affected, res.Errors)
		}
	case "totals":
		tt := h.c.Totals(h.now)
		fmt.Fprintf(w, "jobs queued=%d dispatched=%d backoff=%d done=%d failed=%d unroutable=%d\n", tt.Queued, tt.Dispatched, tt.Backoff, tt.Done, tt.Failed, tt.Unroutable)
		fmt.Fprintf(w, "keys requested=%d queued=%d done=%d waiters=%d\n", tt.KeysRequested, tt.KeysQueued, tt.KeysDone, tt.Waiters)
		fmt.Fprintf(w, "workers idle=%d busy=%d draining=%d paused=%v dedup=%d stale=%d\n", tt.WorkersIdle, tt.WorkersBusy, tt.WorkersDraining, tt.Paused, tt.DedupHits, tt.StaleResults)
	case "query":
		pos, opts := split(f[1:])
		var p admin.Page
		p, err = h.c.Query(h.now, admin.Query{View: admin.View(pos[0]), Filter: opts["filter"], Limit: 20})
		for _, r := range p.Workers {
			fmt.Fprintf(w, "worker %s %s %d/%d jobs=%v\n", r.ID, r.State, r.Used, r.Slots, r.Jobs)
		}
		for _, r := range p.Jobs {
			fmt.Fprintf(w, "job %d %s %s attempts=%d failures=%d waiters=%d owner=%s reason=%q\n", r.JobID, r.URL, r.State, r.Attempts, r.Failures, r.Waiters, r.Owner, r.Reason)
		}
		for _, r := range p.Waiters {
			fmt.Fprintf(w, "waiter %d %s\n", r.Position, r.Session)
		}
	default:
		t.Fatalf("unknown scenario command %q", line)
	}
	if err != nil {
		fmt.Fprintf(w, "error: %v\n", err)
	}
	h.printReady(w)
}

func reasonSuffix(r ledger.Reason, detail string) string {
	s := ""
	if r != "" {
		s = " (" + string(r) + ")"
	}
	if detail != "" {
		s += " " + detail
	}
	return s
}

func (h *scenario) printReady(w *strings.Builder) {
	out := h.c.Ready(h.now)
	for _, a := range out.Answers {
		kind := "answer"
		if a.Submit {
			kind = "submit-answer"
		}
		job := ""
		if a.Job != 0 {
			job = fmt.Sprintf(" job=%d", a.Job)
		}
		fmt.Fprintf(w, "%s s%d req=%d %s %s%s%s\n", kind, a.Session, a.ReqID, h.url(a.FP), a.Verdict, job, reasonSuffix(a.Reason, ""))
	}
	for _, j := range out.Jobs {
		fmt.Fprintf(w, "dispatch job=%d -> s%d (%s) %s attempt=%d\n", j.Job, j.Session, j.Worker, j.Spec.Key.URL, j.Attempt)
	}
	closes := slices.Clone(out.Closes)
	slices.SortFunc(closes, func(a, b Close) int { return int(a.Session) - int(b.Session) })
	for _, c := range closes {
		fmt.Fprintf(w, "close s%d (%s) lost=%v\n", c.Session, c.Reason, c.Lost())
	}
	for _, f := range out.Finished {
		state := "done"
		if f.Failed {
			state = "failed"
		}
		fmt.Fprintf(w, "finished job=%d %s %s%s\n", f.Job, f.Key.URL, state, reasonSuffix("", f.Error))
	}
}
