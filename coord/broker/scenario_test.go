package broker

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"drover/admin"
	"drover/coord/id"
)

// A scenario file is a sequence of blocks in the datadriven format
// (github.com/cockroachdb/datadriven):
//
//	# comment
//	command args...
//	----
//	expected output
//	<blank line>
//
// Every block runs one command against one broker (a file starts with a
// default broker; "config" replaces it) and prints the events, finished
// jobs, closed sessions and answers the command produced. After every block
// the broker's invariants are checked. Run with -rewrite to regenerate the
// expected output.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := newScript(t)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			s.t = t
			got := s.run(commandLine(td))
			if err := checkInvariants(s.b); err != nil {
				t.Fatalf("%s %s: invariant broken: %v", td.Pos, commandLine(td), err)
			}
			if got == "" {
				return ""
			}
			return got + "\n"
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

// script drives one broker from scenario commands on a simulated clock.
type script struct {
	t   testing.TB
	b   *Broker
	now time.Time
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newScript(t testing.TB) *script {
	s := &script{t: t, now: epoch}
	var err error
	s.b, err = New(Config{Jitter: -1, RetryJitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// args splits "k=v" words into a map and positional words into a slice.
func args(words []string) (pos []string, kv map[string]string) {
	kv = map[string]string{}
	for _, w := range words {
		if k, v, ok := strings.Cut(w, "="); ok {
			kv[k] = v
		} else {
			pos = append(pos, w)
		}
	}
	return pos, kv
}

func hostOf(url string) string {
	_, rest, ok := strings.Cut(url, "://")
	if !ok {
		rest = url
	}
	h, _, _ := strings.Cut(rest, "/")
	return h
}

func (s *script) run(cmd string) string {
	var out []string
	say := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	fail := func(err error) {
		if err != nil {
			say("error: %v", err)
		}
	}
	words := strings.Fields(cmd)
	pos, kv := args(words[1:])
	num := func(s string) uint64 {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("bad number %q in %q", s, cmd))
		}
		return n
	}
	dur := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			panic(fmt.Sprintf("bad duration %q in %q", s, cmd))
		}
		return d
	}
	switch words[0] {
	case "config":
		cfg := Config{Jitter: -1, RetryJitter: -1}
		for k, v := range kv {
			switch k {
			case "max-failures":
				cfg.MaxRequestFailures = int(num(v))
			case "backoff-start":
				cfg.BackoffStart = dur(v)
			case "backoff-cap":
				cfg.BackoffCap = dur(v)
			case "forgive":
				cfg.BackoffForgive = dur(v)
			case "unroutable-timeout":
				cfg.UnroutableTimeout = dur(v)
			case "holdback-start":
				cfg.HoldbackStart = dur(v)
			case "holdback-cap":
				cfg.HoldbackCap = dur(v)
			case "per-host":
				cfg.Politeness.Default.PerHost = int(num(v))
			case "min-delay":
				cfg.Politeness.Default.MinDelay = dur(v)
			case "processor":
				cfg.Politeness.Processor = v
			case "since": // the coordinator's start, from the epoch
				cfg.Politeness.Since = epoch.Add(dur(v))
			case "share-robots":
				cfg.Politeness.ShareRobots = v == "true"
			case "local-per-host":
				cfg.Politeness.Local = &Limits{PerHost: int(num(v))}
				// The scenarios' local hosts are loopback literals
				// (crawl.IsLocalHost is the real rule).
				cfg.Politeness.IsLocal = func(h string) bool { return strings.HasPrefix(h, "127.") || strings.HasPrefix(h, "localhost") }
			case "rules":
				// pattern:cap:delay,...
				for r := range strings.SplitSeq(v, ",") {
					f := strings.Split(r, ":")
					cfg.Politeness.Rules = append(cfg.Politeness.Rules, HostRule{Pattern: f[0], Limits: Limits{PerHost: int(num(f[1])), MinDelay: dur(f[2])}})
				}
			case "jitter":
				f, _ := strconv.ParseFloat(v, 64)
				cfg.Jitter = f
				cfg.Rand = rand.New(rand.NewPCG(1, 2))
			case "retry-start": // "none": retries are queued at once
				if v == "none" {
					cfg.RetryStart = -1
				} else {
					cfg.RetryStart = dur(v)
				}
			case "retry-cap":
				cfg.RetryCap = dur(v)
			case "retry-jitter":
				f, _ := strconv.ParseFloat(v, 64)
				cfg.RetryJitter = f
				cfg.Rand = rand.New(rand.NewPCG(1, 2))
			default:
				panic("unknown config " + k)
			}
		}
		b, err := New(cfg)
		if err != nil {
			say("error: %v", err)
			break
		}
		s.b, s.now = b, epoch
	case "advance":
		s.now = s.now.Add(dur(pos[0]))
		s.b.Tick(s.now)
	case "tick":
		s.b.Tick(s.now)
	case "submit":
		for _, u := range pos {
			hdr := map[string]string{}
			proc := "p"
			for k, v := range kv {
				if k == "proc" {
					proc = v
					continue
				}
				hdr[k] = v
			}
			key := id.Key{Crawler: "c", Processor: proc, URL: u}
			j := s.b.Submit(s.now, Spec{Key: key, FP: key.Fingerprint(), Host: hostOf(u), Headers: hdr})
			say("job %d", j)
		}
	case "register":
		info := WorkerInfo{Headers: map[string]string{}}
		if len(pos) > 1 {
			info.ID = pos[1]
		}
		var held []Run
		for k, v := range kv {
			switch k {
			case "slots":
				n, err := strconv.Atoi(v)
				if err != nil {
					panic(fmt.Sprintf("bad slots %q in %q", v, cmd))
				}
				info.Slots = n
			case "held":
				// job (its current attempt) or job.attempt
				for h := range strings.SplitSeq(v, ",") {
					jn, an, dotted := strings.Cut(h, ".")
					run := Run{Job: JobID(num(jn))}
					if dotted {
						run.Attempt = int(num(an))
					} else if j := s.b.jobs.get(run.Job); j != nil {
						run.Attempt = int(s.b.jobAttempts(j))
					}
					held = append(held, run)
				}
			default:
				info.Headers[k] = v
			}
		}
		fail(s.b.Register(s.now, id.Session(num(pos[0])), info, held))
	case "lost":
		s.b.Lost(s.now, id.Session(num(pos[0])))
	case "left":
		s.b.Left(s.now, id.Session(num(pos[0])))
	case "dispatch":
		for _, a := range s.b.Dispatch(s.now, nil) {
			line := fmt.Sprintf("assign job %d -> %s (session %d) attempt %d", a.Job, a.Worker, a.Session, a.Attempt)
			if a.Robots != nil {
				line += fmt.Sprintf(" robots=%s ttl=%v", a.Robots.Origin, a.Robots.TTL(s.now))
			}
			say("%s", line)
		}
	case "result":
		o := Outcome{Error: kv["err"]}
		switch pos[2] {
		case "ok":
			o.Kind = OK
		case "internal":
			o.Kind = Internal
		case "external":
			o.Kind = External
		case "throttled":
			o.Kind = Throttled
		default:
			o.Kind = OutcomeKind(num(pos[2]))
		}
		if v, ok := kv["retry-after"]; ok {
			d, err := ParseRetryAfter(strings.ReplaceAll(v, "_", " "), s.now)
			fail(err)
			o.RetryAfter = d
		}
		run := Run{Job: JobID(num(pos[1]))}
		if v, ok := kv["attempt"]; ok {
			run.Attempt = int(num(v))
		} else if j := s.b.jobs.get(run.Job); j != nil {
			run.Attempt = int(s.b.jobAttempts(j)) // the current attempt
		}
		st, err := s.b.Result(s.now, id.Session(num(pos[0])), run, o)
		switch {
		case err != nil:
			say("error: %v", err)
		case st != Recorded:
			say("%v", st)
		}
	case "evict":
		n, err := s.b.Evict(s.now, pos[0])
		fail(err)
		if err == nil {
			say("evicted, %d jobs back", n)
		}
	case "drain":
		fail(s.b.Drain(s.now, pos[0]))
	case "undrain":
		fail(s.b.Undrain(s.now, pos[0]))
	case "requeue":
		fail(s.b.Requeue(s.now, JobID(num(pos[0]))))
	case "requeue-failed":
		say("%d requeued", s.b.RequeueFailed(s.now))
	case "pause":
		s.b.Pause(s.now)
	case "resume":
		s.b.Resume(s.now)
	case "crawl-delay":
		changed := s.b.SetCrawlDelay(s.now, pos[0], dur(pos[1]))
		say("changed=%v limits: %v", changed, s.b.HostLimits(pos[0]))
	case "robots":
		// robots SESSION ORIGIN ttl=D crawl-delay=D: a worker's report
		r := Robots{Origin: pos[1], Body: []byte("User-agent: *\n"), Expires: s.now.Add(dur(kv["ttl"]))}
		if v, ok := kv["crawl-delay"]; ok {
			r.CrawlDelay = dur(v)
		}
		_, err := s.b.SetRobots(s.now, id.Session(num(pos[0])), r)
		fail(err)
		say("limits: %v", s.b.HostLimits(hostOf(pos[1])))
	case "restore-robots":
		// restore-robots HOST ORIGIN ttl=D crawl-delay=D: a copy kept in
		// the store by the coordinator before a restart
		r := Robots{Origin: pos[1], Body: []byte("User-agent: *\n"), Expires: s.now.Add(dur(kv["ttl"]))}
		if v, ok := kv["crawl-delay"]; ok {
			r.CrawlDelay = dur(v)
		}
		ok, err := s.b.RestoreRobots(s.now, pos[0], r)
		fail(err)
		if err == nil {
			say("restored=%v limits: %v", ok, s.b.HostLimits(pos[0]))
		}
	case "seen":
		s.b.Seen(s.now, id.Session(num(pos[0])))
	case "totals":
		var tt admin.Totals
		s.b.Totals(&tt)
		line := fmt.Sprintf("queued=%d dispatched=%d backoff=%d done=%d failed=%d unroutable=%d", tt.Queued, tt.Dispatched, tt.Backoff, tt.Done, tt.Failed, tt.Unroutable)
		if tt.Polite > 0 {
			line += fmt.Sprintf(" polite=%d", tt.Polite)
		}
		say("%s", line)
		say("workers idle=%d busy=%d draining=%d lost=%d paused=%v", tt.WorkersIdle, tt.WorkersBusy, tt.WorkersDraining, tt.WorkersLost, tt.Paused)
		say("dispatches=%d completions=%d failures=%d throttles=%d stale=%d", tt.Dispatches, tt.Completions, tt.Failures, tt.Throttles, tt.StaleResults)
	case "deadline":
		if d, ok := s.b.NextDeadline(); ok {
			say("next deadline in %v", d.Sub(s.now))
		} else {
			say("no deadline")
		}
	case "jobs", "retries":
		q := admin.Query{Filter: strings.Join(pos, " "), Sort: kv["sort"], Desc: kv["desc"] == "true"}
		for k, v := range kv {
			if k == "state" || k == "host" || k == "worker" {
				q.Filter += " " + k + "=" + v
			}
		}
		if v, ok := kv["offset"]; ok {
			q.Offset = int(num(v))
		}
		if v, ok := kv["limit"]; ok {
			q.Limit = int(num(v))
		}
		var p admin.Page
		if words[0] == "jobs" {
			p = s.b.Jobs(q)
		} else {
			p = s.b.Retries(q)
		}
		say("total %d", p.Total)
		for _, r := range p.Jobs {
			line := fmt.Sprintf("%d %s %s attempts=%d failures=%d throttles=%d", r.JobID, r.URL, r.State, r.Attempts, r.Failures, r.Throttles)
			if r.Worker != "" {
				line += " worker=" + r.Worker
			}
			if !r.RetryAt.IsZero() {
				line += " retry-in=" + r.RetryAt.Sub(s.now).String()
			}
			if r.Reason != "" {
				line += " reason=" + strconv.Quote(r.Reason)
			}
			if r.LastError != "" {
				line += " error=" + strconv.Quote(r.LastError)
			}
			say("%s", line)
		}
		for _, h := range p.Hosts {
			if h.Polite {
				line := fmt.Sprintf("host %s polite jobs=%d in-flight=%d limit=%q", h.Host, h.Jobs, h.InFlight, h.Limit)
				if !h.Until.IsZero() {
					line += " next+" + h.Until.Sub(s.now).String()
				}
				say("%s", line)
				continue
			}
			say("host %s until+%v throttles=%d jobs=%d", h.Host, h.Until.Sub(s.now), h.Throttles, h.Jobs)
		}
	case "job":
		r, ok := s.b.Job(JobID(num(pos[0])))
		if !ok {
			say("no such job")
			break
		}
		say("%d %s %s attempts=%d failures=%d", r.JobID, r.URL, r.State, r.Attempts, r.Failures)
		for _, a := range r.History {
			say("  %s at+%v %s %s", a.Worker, a.At.Sub(epoch), a.Outcome, a.Error)
		}
	case "workers":
		p := s.b.Workers(admin.Query{Filter: strings.Join(pos, " "), Sort: kv["sort"]})
		for _, w := range p.Workers {
			line := fmt.Sprintf("%s %s slots=%d used=%d jobs=%v done=%d failures=%d", w.ID, w.State, w.Slots, w.Used, w.Jobs, w.Done, w.Failures)
			if !w.HeldUntil.IsZero() {
				line += " held-until=+" + w.HeldUntil.Sub(epoch).String()
			}
			say("%s", line)
		}
	default:
		panic("unknown command " + words[0])
	}
	for _, e := range s.b.TakeEvents(nil) {
		if e.Kind == "job.dispatched" {
			continue // the assign line says it, with the attempt
		}
		line := "event " + string(e.Kind)
		if e.JobID != 0 {
			line += " job=" + strconv.FormatUint(e.JobID, 10)
		}
		if e.Worker != "" {
			line += " worker=" + e.Worker
		}
		if e.Detail != "" {
			line += " " + strconv.Quote(e.Detail)
		}
		out = append(out, line)
	}
	for _, f := range s.b.TakeFinished(nil) {
		if f.Failed {
			say("finished job %d failed: %s", f.Job, f.Error)
		} else {
			say("finished job %d ok", f.Job)
		}
	}
	for _, c := range s.b.TakeClosed(nil) {
		why := "evicted"
		if c.Drained {
			why = "drained"
		}
		say("close session %d (%s): %s", c.Session, c.Worker, why)
	}
	return strings.Join(out, "\n")
}
