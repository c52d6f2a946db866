package redis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	goredis "github.com/redis/go-redis/v9"

	"drover/coord/id"
	"drover/coord/ledger"
	"drover/store/redis/redistest"
)

// The scenario files of coord/ledger, run unchanged against both backends:
// the in-memory ledger and this one on a local Redis Cluster. The runner
// is coord/ledger's through the ledger.Backend interface (so without its
// internal invariant check, which the in-memory run of coord/ledger's own
// test keeps).

var (
	cluster    *redistest.Cluster
	clusterErr error
	prefixes   atomic.Int64
)

func TestMain(m *testing.M) {
	if os.Getenv(peerEnv) != "" {
		os.Exit(peerMain())
	}
	dir, err := os.MkdirTemp("", "drover-redis-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster, clusterErr = redistest.Launch(dir, func(string, ...any) {})
	code := m.Run()
	if cluster != nil {
		cluster.Stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// client returns a cluster client for t, or skips t when redis-server is
// not installed (and fails it when the cluster would not start).
func client(t testing.TB) goredis.UniversalClient {
	t.Helper()
	if ok, why := redistest.Available(); !ok {
		t.Skipf("the Redis backend's tests need redis-server: %s", why)
	}
	if clusterErr != nil {
		t.Fatalf("starting a local Redis cluster: %v", clusterErr)
	}
	rdb := newClusterClient(&goredis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// newTestLedger is a Redis ledger on rdb under a prefix of its own.
func newTestLedger(t testing.TB, rdb goredis.UniversalClient, cfg ledger.Config) (*Ledger, error) {
	t.Helper()
	return newLedger(context.Background(), rdb, Config{Ledger: cfg, Prefix: "t" + strconv.FormatInt(prefixes.Add(1), 10)})
}

var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func key(label string) id.Key {
	return id.Key{Crawler: "c", Processor: "p", URL: "http://example.com/" + label}
}

func fpOf(label string) id.Fingerprint { return key(label).Fingerprint() }

type backend struct {
	name string
	open func(t testing.TB, cfg ledger.Config) (ledger.Backend, error)
}

func backends(t *testing.T) []backend {
	return []backend{
		{"memory", func(_ testing.TB, cfg ledger.Config) (ledger.Backend, error) { return ledger.New(cfg) }},
		{"redis", func(t testing.TB, cfg ledger.Config) (ledger.Backend, error) {
			return newTestLedger(t, client(t), cfg)
		}},
	}
}

func TestScenariosBothBackends(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			datadriven.Walk(t, filepath.Join("..", "..", "coord", "ledger", "testdata"), func(t *testing.T, path string) {
				sc := &scenario{t: t, open: b.open}
				datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
					sc.t, sc.pos = t, td.Pos
					got := sc.run(commandLine(td))
					if len(got) == 0 {
						return ""
					}
					return strings.Join(got, "\n") + "\n"
				})
			})
		})
	}
}

func commandLine(td *datadriven.TestData) string {
	parts := []string{td.Cmd}
	for _, a := range td.CmdArgs {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, " ")
}

type scenario struct {
	t      *testing.T
	pos    string
	open   func(testing.TB, ledger.Config) (ledger.Backend, error)
	l      ledger.Backend
	now    time.Time
	labels map[id.Fingerprint]string
}

func (sc *scenario) fatalf(format string, args ...any) {
	sc.t.Helper()
	sc.t.Fatalf("%s: %s", sc.pos, fmt.Sprintf(format, args...))
}

func (sc *scenario) fp(label string) id.Fingerprint {
	fp := fpOf(label)
	sc.labels[fp] = label
	return fp
}

func (sc *scenario) name(fp id.Fingerprint) string {
	if s, ok := sc.labels[fp]; ok {
		return s
	}
	return fp.String()
}

func rel(t time.Time) string {
	d := t.Sub(base)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

func verdict(v ledger.Verdict, r ledger.Reason) string {
	if r == "" {
		return v.String()
	}
	return v.String() + " " + string(r)
}

type args map[string]string

func parseArgs(fields []string) args {
	a := args{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		a[k] = v
	}
	return a
}

func (sc *scenario) need(a args, k string) string {
	v, ok := a[k]
	if !ok {
		sc.fatalf("missing %s=", k)
	}
	return v
}

func (sc *scenario) num(a args, k string, def int) int {
	v, ok := a[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		sc.fatalf("%s=%q: %v", k, v, err)
	}
	return n
}

func (sc *scenario) dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		sc.fatalf("duration %q: %v", s, err)
	}
	return d
}

func (sc *scenario) session(a args) id.Session { return id.Session(sc.num(a, "s", -1)) }

func (sc *scenario) outcome(a args) ledger.Outcome {
	switch a["outcome"] {
	case "", "ok":
		return ledger.DoneOK
	case "failed":
		return ledger.DoneFailed
	}
	sc.fatalf("outcome=%q: want ok or failed", a["outcome"])
	return 0
}

func (sc *scenario) items(a args) []ledger.Item {
	var items []ledger.Item
	for _, s := range strings.Split(sc.need(a, "keys"), ",") {
		items = append(items, ledger.Item{Key: key(s), FP: sc.fp(s)})
	}
	return items
}

func (sc *scenario) record(r ledger.Record) string {
	switch r.State {
	case ledger.Requested:
		return fmt.Sprintf("requested owner=%d waiters=%d since=%s", r.Owner, r.Waiters, rel(r.Since))
	case ledger.Queued:
		return fmt.Sprintf("queued since=%s", rel(r.Since))
	}
	return fmt.Sprintf("done outcome=%v since=%s", r.Outcome, rel(r.Since))
}

func (sc *scenario) run(cmd string) []string {
	fields := strings.Fields(cmd)
	a := parseArgs(fields[1:])
	if fields[0] != "config" && sc.l == nil {
		sc.fatalf("%s before config", fields[0])
	}
	var out []string
	switch fields[0] {
	case "config":
		cfg := ledger.Config{Persist: hasFlag(fields, "persist"), SweepLimit: sc.num(a, "sweep-limit", 0)}
		for k, p := range map[string]*time.Duration{"request-ttl": &cfg.RequestTTL, "done-ttl": &cfg.DoneTTL, "failed-ttl": &cfg.FailedTTL} {
			if v, ok := a[k]; ok {
				*p = sc.dur(v)
			}
		}
		l, err := sc.open(sc.t, cfg)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		sc.l, sc.now, sc.labels = l, base, make(map[id.Fingerprint]string)
	case "request":
		k := sc.need(a, "key")
		out = append(out, verdict(sc.l.Request(sc.now, sc.session(a), uint64(sc.num(a, "req", 0)), key(k), sc.fp(k))))
	case "request-batch":
		items := sc.items(a)
		for i, r := range sc.l.RequestBatch(sc.now, sc.session(a), uint64(sc.num(a, "req", 0)), items, nil) {
			out = append(out, sc.name(items[i].FP)+": "+verdict(r.Verdict, r.Reason))
		}
	case "queue":
		out = append(out, verdict(sc.l.Queue(sc.now, sc.session(a), sc.fp(sc.need(a, "key")))))
	case "queue-batch":
		var fps []id.Fingerprint
		for _, it := range sc.items(a) {
			fps = append(fps, it.FP)
		}
		for i, r := range sc.l.QueueBatch(sc.now, sc.session(a), fps, nil) {
			out = append(out, sc.name(fps[i])+": "+verdict(r.Verdict, r.Reason))
		}
	case "done":
		k := sc.need(a, "key")
		sc.l.Done(sc.now, key(k), sc.fp(k), sc.outcome(a))
	case "done-batch":
		sc.l.DoneBatch(sc.now, sc.items(a), sc.outcome(a))
	case "release":
		sc.l.Release(sc.now, sc.session(a))
	case "tick":
		sc.l.Tick(sc.now)
	case "advance":
		if len(fields) != 2 {
			sc.fatalf("advance takes one duration")
		}
		sc.now = sc.now.Add(sc.dur(fields[1]))
		out = append(out, "now "+rel(sc.now))
	case "lookup":
		r, ok := sc.l.Lookup(sc.now, sc.fp(sc.need(a, "key")))
		if !ok {
			out = append(out, "absent")
		} else {
			out = append(out, sc.record(r))
		}
	case "waiters":
		for i, w := range sc.l.Waiters(sc.fp(sc.need(a, "key"))) {
			out = append(out, fmt.Sprintf("%d: s=%d req=%d since=%s", i+1, w.Session, w.ReqID, rel(w.Since)))
		}
	case "counts":
		c := sc.l.Counts()
		out = append(out, fmt.Sprintf("requested=%d queued=%d done=%d waiters=%d", c.Requested, c.Queued, c.Done, c.Waiters))
	case "deadline":
		if d, ok := sc.l.NextDeadline(); ok {
			out = append(out, "deadline "+rel(d))
		} else {
			out = append(out, "no deadline")
		}
	case "requested", "queued":
		list := sc.l.Requested
		if fields[0] == "queued" {
			list = sc.l.Queued
		}
		for _, r := range list(sc.num(a, "offset", 0), sc.num(a, "limit", 100)) {
			out = append(out, sc.name(r.FP)+": "+sc.record(r))
		}
	case "restore":
		// The key goes with every record (the in-memory ledger ignores it
		// for done and delete records; the Redis one places records by it).
		w := ledger.Write{FP: sc.fp(sc.need(a, "key")), Key: key(a["key"]), Outcome: sc.outcome(a), At: sc.now}
		if at, ok := a["at"]; ok {
			w.At = base.Add(sc.dur(at))
		}
		switch a["op"] {
		case "put-queued":
			w.Op = ledger.PutQueued
		case "put-done":
			w.Op = ledger.PutDone
		case "delete":
			w.Op = ledger.Delete
		default:
			sc.fatalf("restore op=%q: want put-queued, put-done or delete", a["op"])
		}
		sc.l.Restore(w)
	default:
		sc.fatalf("unknown command %q", fields[0])
	}
	if rl, ok := sc.l.(*Ledger); ok && rl.Err() != nil {
		sc.fatalf("store error after %q: %v", cmd, rl.Err())
	}
	for _, an := range sc.l.TakeAnswers(nil) {
		out = append(out, fmt.Sprintf("answer s=%d req=%d key=%s: %s", an.Session, an.ReqID, sc.name(an.FP), verdict(an.Verdict, an.Reason)))
	}
	for _, e := range sc.l.TakeEvents(nil) {
		line := "event " + e.Kind.String()
		if e.Session != 0 {
			line += fmt.Sprintf(" s=%d", e.Session)
		}
		line += " key=" + sc.name(e.FP)
		if e.Reason != "" {
			line += " reason=" + string(e.Reason)
		}
		out = append(out, line)
	}
	for _, w := range sc.l.TakeWrites(nil) {
		line := fmt.Sprintf("write %v key=%s at=%s", w.Op, sc.name(w.FP), rel(w.At))
		if w.Op == ledger.PutDone {
			line += " outcome=" + w.Outcome.String()
		}
		out = append(out, line)
	}
	return out
}

func hasFlag(fields []string, flag string) bool {
	for _, f := range fields[1:] {
		if f == flag {
			return true
		}
	}
	return false
}
