// Package redis keeps drover's ledger on a Redis Cluster (or Valkey), so
// that several coordinators share one table of work keys: the same key
// submitted to two of them is accepted once, and a waiter on one is handed
// a key released on another.
//
// Every transition is one call of a Redis function of the library
// ledger.lua (FCALL; its keys declared, so the cluster refuses a call
// across slots), atomic on the keys of one host: each key carries the
// URL's host as its hash tag. The library is built once per node, not per
// call; it is loaded on a node the first time a call finds it missing
// there (a new node, a restart without persistence, FUNCTION FLUSH), and
// replicas receive it from their master, so a failover keeps it. Its name
// carries a hash of its code, so coordinators of two versions never
// replace each other's; the keys' layout below is not kept across
// versions, so the coordinators sharing a Prefix run one version.
//
// "PREFIX:{host}:k" and, as the host grows, ":k:1", ":k:2"… hold the
// host's records (buckets that split one at a time, each kept under the
// 512 fields of a listpack), a field per key named by its 16-byte
// fingerprint FP (state, holder, lease start, the key's parts, packed with
// cmsgpack; a done record is only its stamp and outcome); beside them
// "PREFIX:{host}:w:FP" (the FIFO of waiters, while there are some),
// ":lease:B" (requested keys in lease order, 128 sequence numbers a zset)
// and ":q" (queued keys in order), ":dq:0" and ":dq:1" (done records in
// the order they expire), ":s:OWNER" and ":sw:OWNER" (what one session
// holds and waits on), ":co:COORD" (the sessions of one coordinator there)
// and ":n" (counters). So one call never crosses slots, a host's keys live
// on one shard, and a URL costs a hash field, not a Redis key of its own.
// Once a host holds only done records (both TTLs set), its keys expire a
// while after the longest TTL, in case no sweep reaches them. A call skips
// the lease-expiry check while the host's next lease deadline, as the
// last call there reported it, is ahead of its time.
//
// Sessions are named cluster-wide as "COORD.SESSION", where COORD is the
// coordinator's incarnation, a number it takes from the cluster when it
// starts and never shares: a session of a coordinator that restarted is a
// new owner, so nothing it held before can be queued by its new self (the
// owner check is the fencing), and every hand-over stamps the record with
// a fresh number from the host's sequence (its place in the lease order).
//
// Ledger implements ledger.Backend: the same rules, answers, events and
// writes as the in-memory ledger (the scenario files of coord/ledger run
// against both). Differences, by design: times are kept to the microsecond;
// a batch spanning several hosts runs one script per host, so its answers
// and events come host by host; Lookup, Waiters and Queue, which name a
// key by fingerprint alone, find keys this coordinator has requested,
// queued or been told of (LookupKey finds any key); Counts, Requested and
// Queued cover the hosts this coordinator has touched. A store error makes
// Request and Queue answer Error "unavailable" (Err says why), and is
// retried for Done, Requeue and Release on the next call.
package redis

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/clock"
	"drover/coord/id"
	"drover/coord/ledger"
)

//go:embed ledger.lua
var ledgerLua string

// ledgerLib is ledger.lua as the function library drover_ledger_V, where
// V is a hash of its code: coordinators of different versions sharing a
// cluster each call their own. Its functions: ledgerFn (transitions) and
// ledgerFn+"_get" (reads).
var ledgerLib, ledgerFn = library(ledgerLua, "drover_ledger")

// library names the function library code after its hash: the first two
// occurrences of name in code (its shebang's name= and the name it
// registers its functions under) become name_V.
func library(code, name string) (lib, fn string) {
	sum := sha1.Sum([]byte(code))
	fn = name + "_" + hex.EncodeToString(sum[:6])
	return strings.Replace(code, name, fn, 2), fn
}

// ReasonUnavailable is the Error reason of a call the store did not answer.
const ReasonUnavailable ledger.Reason = "unavailable"

// Config parameterises a Ledger.
type Config struct {
	// Ledger holds the rules' parameters (TTLs, Persist, SweepLimit), as
	// for the in-memory ledger. DoneCache must be 0: Redis holds every
	// record.
	Ledger ledger.Config
	// Prefix namespaces every key ("drover" if empty), so several
	// deployments (or tests) can share a cluster.
	Prefix string
	// Slack is how long a host's keys outlive the longest TTL once only
	// done records are left there, before Redis itself drops them
	// (EXPIRE), in case no sweep reaches them. Default 1h.
	Slack time.Duration
	// Timeout bounds each call to the store. Default 5s.
	Timeout time.Duration
	// ServerClock makes every transition take its time from the Redis
	// server (TIME in the script) instead of the caller's now, so that
	// coordinators whose clocks disagree do not expire each other's leases
	// early. Done stamps, lease starts and events then carry the server's
	// time. The in-memory ledger's semantics, and the scenario tests, use
	// the caller's time.
	ServerClock bool
	// Heartbeat, if set, makes this ledger a peer of the other
	// coordinators on the cluster (peers.go): it renews its alive key this
	// often (TTL three heartbeats), receives answers for its waiting
	// sessions, and sweeps dead peers' sessions. At least 100ms.
	Heartbeat time.Duration
	// WaitReplicas, above 0, makes every batch of transitions wait until
	// that many replicas of each shard it wrote to hold its writes (WAIT)
	// before it is answered: a failover then loses no transition this
	// ledger acknowledged, so a key is accepted twice only if its batch
	// was in flight at the fault. A shard with fewer replicas in sync
	// refuses: Request and Queue answer Error "unavailable", Done, Requeue
	// and Release are sent again with the next call, until a replica has
	// caught up. 0: asynchronous replication, as Redis does by default (a
	// failover loses what the replica lagged).
	WaitReplicas int
	// WaitTimeout bounds each WAIT. Default 500ms; below Timeout.
	WaitTimeout time.Duration
	// Log, if set, is told of the cluster's membership changes this
	// coordinator sees: a dead peer it swept (and the jobs that went back
	// to the queue), itself found swept after a pause, jobs a lost claim
	// had leased given back. Nil logs nothing.
	Log *slog.Logger
	// Clock is the time the ledger reads itself: the heartbeat's renewals
	// (peers.go), how long a master without replicas is refused at once
	// (wait.go) and the now of its key lists (query.go). Transitions take
	// the caller's now. Default clock.System.
	Clock clock.Clock
}

// Ledger is the ledger on Redis for one coordinator. Like *ledger.Ledger
// it is not safe for concurrent use.
type Ledger struct {
	cfg    Config
	rdb    goredis.UniversalClient
	coord  string // this coordinator's incarnation
	static []string

	fpHost   map[id.Fingerprint]string // keys this coordinator knows the host of
	sessions map[id.Session]map[string]struct{}
	hosts    map[string]struct{} // hosts touched, in no order
	hostList []string            // the same, in the order first touched
	sweeping map[string]struct{} // hosts with done records waiting for a sweep
	leases   deadlines

	answers []ledger.Answer
	events  []ledger.Event
	writes  []ledger.Write
	retry   []call // idempotent calls the store did not take, retried first
	// finRetry holds the shared queue's finish calls the store did not
	// take, sent again by the next Tick or Finish (queue.go).
	finRetry []call
	// finSeq numbers this coordinator's finish calls (stats.go: a finish
	// sent again is counted once).
	finSeq int64
	// statSlots are the slots this coordinator registered for the
	// queue's counts (stats.go).
	statSlots map[int]bool
	err       error
	// unavail counts the keys answered unavailable for their log line
	// (noteUnavailable, ops.go).
	unavail logEvery

	inbox    *inbox    // answers other coordinators sent this one; nil without Heartbeat
	queue    *Queue    // the shared job queue (queue.go), once asked for
	nextBeat time.Time // when Tick next calls Maintain

	// jobView is the admin views' reader (jobview.go), once asked for:
	// its note of the hosts this coordinator holds jobs of goes into the
	// summary.
	jobView atomic.Pointer[JobView]

	// drained is the workers the cluster keeps drained, as read once a
	// heartbeat and marked here since (drained.go); drainedMu orders
	// its writers, drainedGen counts this coordinator's marks.
	drained    atomic.Pointer[map[string]bool]
	drainedMu  sync.Mutex
	drainedGen uint64

	modified  bool                          // the output apply read last had "M": the call changed something
	noReplica map[*goredis.Client]time.Time // masters whose WAIT failed: refused at once until then

	stopBeat chan struct{} // closed to stop the heartbeat goroutine
	beatDone chan struct{}

	// Swept counts the dead coordinators this one has swept.
	Swept int
	// Rejoined counts the times this coordinator found itself swept as
	// dead (it had paused longer than three heartbeats) and joined again.
	Rejoined int
}

// Open connects to the cluster at t, takes an incarnation number for this
// coordinator and returns its ledger. Close it when done.
func Open(ctx context.Context, t Target, cfg Config) (*Ledger, error) {
	rdb, err := connect(ctx, t)
	if err != nil {
		return nil, err
	}
	l, err := newLedger(ctx, rdb, cfg)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return l, nil
}

func newLedger(ctx context.Context, rdb goredis.UniversalClient, cfg Config) (*Ledger, error) {
	if cfg.Ledger.DoneCache != 0 {
		return nil, fmt.Errorf("redis ledger config: DoneCache is %d; want 0 (the cluster holds every record)", cfg.Ledger.DoneCache)
	}
	if _, err := ledger.New(cfg.Ledger); err != nil { // the same validation
		return nil, err
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "drover"
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("redis ledger config: Prefix %q contains a brace; want a plain name (braces are hash tags)", cfg.Prefix)
	}
	if cfg.Slack <= 0 {
		cfg.Slack = time.Hour
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.WaitReplicas < 0 {
		return nil, fmt.Errorf("redis ledger config: WaitReplicas is %d; want 0 (no WAIT) or more", cfg.WaitReplicas)
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = 500 * time.Millisecond
	}
	if cfg.WaitReplicas > 0 && cfg.WaitTimeout >= cfg.Timeout {
		return nil, fmt.Errorf("redis ledger config: WaitTimeout %v is not below Timeout %v; want a WAIT that ends before the call's own limit", cfg.WaitTimeout, cfg.Timeout)
	}
	if cfg.Ledger.SweepLimit == 0 {
		cfg.Ledger.SweepLimit = 4096
	}
	n, err := rdb.Incr(ctx, cfg.Prefix+":coordinators").Result()
	if err != nil {
		return nil, fmt.Errorf("redis ledger: taking a coordinator number: %w", err)
	}
	l := &Ledger{
		unavail:  logEvery{every: unavailableEvery},
		cfg:      cfg,
		rdb:      rdb,
		coord:    strconv.FormatInt(n, 10),
		fpHost:   make(map[id.Fingerprint]string),
		sessions: make(map[id.Session]map[string]struct{}),
		hosts:    make(map[string]struct{}),
		sweeping: make(map[string]struct{}),

		statSlots: make(map[int]bool),
	}
	l.leases.init()
	if cfg.Heartbeat > 0 {
		if cfg.Heartbeat < 100*time.Millisecond {
			return nil, fmt.Errorf("redis ledger config: Heartbeat is %v; want 0 (alone) or at least 100ms", cfg.Heartbeat)
		}
		if err := l.join(ctx); err != nil {
			return nil, err
		}
	}
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	c := cfg.Ledger
	l.static = []string{
		strconv.FormatInt(c.RequestTTL.Microseconds(), 10),
		strconv.FormatInt(c.DoneTTL.Microseconds(), 10),
		strconv.FormatInt(c.FailedTTL.Microseconds(), 10),
		flag(c.Persist), "0",
		strconv.Itoa(c.SweepLimit),
		strconv.FormatInt(int64(cfg.Slack/time.Second), 10),
	}
	return l, nil
}

// Coordinator is this ledger's incarnation number in the cluster.
func (l *Ledger) Coordinator() string { return l.coord }

// Clock is the ledger's time source (Config.Clock), for the loops beside
// it (the coordinator's summaries) to keep the same time.
func (l *Ledger) Clock() clock.Clock { return l.cfg.Clock }

// Err is the last error the store returned, or nil.
func (l *Ledger) Err() error { return l.err }

// Close stops listening for answers and closes the connections.
func (l *Ledger) Close() error {
	l.halt()
	return l.rdb.Close()
}

// hostOf is the hash tag of key k: its URL's host ("/" for none: a host
// never contains a slash, and an empty tag would not be one).
func hostOf(k *id.Key) string {
	h := id.Host(k.URL)
	if h == "" {
		return "/"
	}
	return h
}

func (l *Ledger) pre(host string) string { return l.cfg.Prefix + ":{" + host + "}:" }

func (l *Ledger) owner(s id.Session) string {
	return l.coord + "." + strconv.FormatUint(uint64(s), 10)
}

// session maps an owner name back to a session of this coordinator, or 0.
func (l *Ledger) session(owner string) id.Session {
	c, s, ok := strings.Cut(owner, ".")
	if !ok || c != l.coord {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	return id.Session(n)
}

// baseKeys are the keys every call declares, for host.
func (l *Ledger) baseKeys(host string, extra int) []string {
	p := l.pre(host)
	return append(make([]string, 0, 6+extra), p+"n", p+"lease", p+"q", p+"dq:0", p+"dq:1", p+"k")
}

func (l *Ledger) sessKeys(keys []string, host string, s id.Session) []string {
	p, o := l.pre(host), l.owner(s)
	return append(keys, p+"s:"+o, p+"sw:"+o, p+"co:"+l.coord)
}

// rawFP is fp as the script names it: its 16 bytes.
func rawFP(fp id.Fingerprint) string { return string(fp[:]) }

// parseRawFP reads a fingerprint the script names.
func parseRawFP(s string) (id.Fingerprint, error) {
	var fp id.Fingerprint
	if len(s) != len(fp) {
		return fp, fmt.Errorf("redis ledger: a fingerprint of %d bytes from the script; want %d", len(s), len(fp))
	}
	copy(fp[:], s)
	return fp, nil
}

func (l *Ledger) args(op string, now time.Time, extra int) []any {
	a := make([]any, 0, 10+extra)
	t := strconv.FormatInt(now.UnixMicro(), 10)
	if l.cfg.ServerClock {
		t = ""
	}
	a = append(a, op, t)
	for _, s := range l.static {
		a = append(a, s)
	}
	// the host's next lease deadline as this ledger last heard it: set by
	// exec when the call is sent
	return append(a, "")
}

// touch records that this coordinator has state on hosts (for Tick,
// Counts and the sweep of a dead coordinator's sessions), in one round
// trip for those it had not touched yet.
func (l *Ledger) touch(ctx context.Context, hosts ...string) error {
	var fresh []any
	var seen map[string]bool // hosts already in fresh (a call list names a host more than once)
	for _, h := range hosts {
		if _, ok := l.hosts[h]; ok || seen[h] {
			continue
		}
		if seen == nil {
			seen = make(map[string]bool)
		}
		seen[h] = true
		fresh = append(fresh, h)
	}
	if len(fresh) == 0 {
		return nil
	}
	// Registered before any script runs there, so a coordinator that dies
	// never leaves state on a host its peers cannot find.
	pipe := l.rdb.Pipeline()
	pipe.SAdd(ctx, l.cfg.Prefix+":hosts", fresh...)
	pipe.SAdd(ctx, l.cfg.Prefix+":coord:"+l.coord+":hosts", fresh...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis ledger: registering %d hosts (%q first): %w", len(fresh), fresh[0], err)
	}
	for _, h := range fresh {
		l.hosts[h.(string)] = struct{}{}
		l.hostList = append(l.hostList, h.(string))
	}
	return nil
}

func (l *Ledger) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), l.cfg.Timeout)
}

// call is one script run on one host.
type call struct {
	host string
	keys []string
	args []any
	// resent: a call sent again after the store did not take or confirm
	// it. Its effects may already be on the master, so the script finds
	// nothing to write; it still WAITs, or an unconfirmed write would
	// count as confirmed.
	resent bool
}

// exec runs calls in one pipeline and applies their effects in order; it
// returns each call's per-item results (nil for a failed call) and the
// first error. With Config.WaitReplicas, a call whose shard's replicas did
// not confirm its writes is marked in unconfirmed (its effects are
// applied: they happened on the master), and counts as failed in err.
func (l *Ledger) exec(calls []call) (out [][]ledger.Result, unconfirmed []bool, first error) {
	ctx, cancel := l.ctx()
	defer cancel()
	out = make([][]ledger.Result, len(calls))
	unconfirmed = make([]bool, len(calls))
	hosts := make([]string, len(calls))
	for i, c := range calls {
		hosts[i] = c.host
	}
	if err := l.touch(ctx, hosts...); err != nil {
		l.err = err
		return out, unconfirmed, err
	}
	fail := func(err error) {
		l.err = err
		if first == nil {
			first = err
		}
	}
	for _, c := range calls {
		l.known(c)
	}
	vals, errs := l.runScripts(ctx, calls)
	wrote := make([]bool, len(calls)) // the call changed something: WAIT for it
	for i, c := range calls {
		if errs[i] != nil {
			fail(fmt.Errorf("redis ledger: %s on host %q: %w", c.args[0], c.host, errs[i]))
			continue
		}
		l.modified = false
		res, err := l.apply(c.host, vals[i])
		wrote[i] = l.modified || c.resent
		if err != nil {
			fail(err)
		}
		out[i] = res
	}
	if l.cfg.WaitReplicas > 0 {
		for i, err := range l.waitReplicas(ctx, calls, wrote) {
			if err != nil {
				unconfirmed[i] = true
				fail(err)
			}
		}
	}
	return out, unconfirmed, first
}

// known sets call c's argument naming its host's next lease deadline, as
// the last call there reported it ("" if unknown): while it is ahead, the
// function skips its lease-expiry check. Not for "expire", whose point
// the check is (and whose host is due, so not known anyway).
func (l *Ledger) known(c call) {
	if len(c.args) < 10 {
		return
	}
	c.args[9] = ""
	if at, ok := l.leases.cur[c.host]; ok && c.args[0] != "expire" {
		c.args[9] = strconv.FormatInt(at, 10)
	}
}

// runScripts runs the ledger's function once per call in one pipeline
// (the reading one for "get"), loading the library on a node that does
// not have it, and returns each call's output or error. A writing call is
// sent at most once (once.go): request and queue are not idempotent (run
// again, a queue answers wrong-state for the key it queued), and a call
// run twice loses the first run's answers and events; one whose reply
// was lost fails, and its caller reads back what it did (readBack) or
// sends it again (the idempotent ones: execRetrying).
func (l *Ledger) runScripts(ctx context.Context, calls []call) ([]any, []error) {
	for _, c := range calls {
		if c.args[0] != "get" {
			ctx = once(ctx)
			break
		}
	}
	fn := func(c call) string {
		if c.args[0] == "get" {
			return ledgerFn + "_get"
		}
		return ledgerFn
	}
	cmds := make([]*goredis.Cmd, len(calls))
	pipe := l.rdb.Pipeline()
	for i, c := range calls {
		cmds[i] = pipe.FCall(ctx, fn(c), c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx)
	vals, errs := make([]any, len(calls)), make([]error, len(calls))
	var again []int                          // calls that met a node without the library
	loaded := make(map[*goredis.Client]bool) // nodes it was loaded on
	for i, c := range calls {
		vals[i], errs[i] = cmds[i].Result()
		if errs[i] == nil || !noFunction(errs[i]) {
			continue
		}
		node, err := l.masterFor(ctx, c.keys[0])
		if err == nil && !loaded[node] {
			if err = node.FunctionLoadReplace(ctx, ledgerLib).Err(); err != nil {
				err = fmt.Errorf("redis ledger: loading the function library %s on %s: %w", ledgerFn, node, err)
			}
			loaded[node] = err == nil
		}
		if err != nil {
			errs[i] = err
			continue
		}
		again = append(again, i)
	}
	if len(again) > 0 {
		pipe := l.rdb.Pipeline()
		for _, i := range again {
			cmds[i] = pipe.FCall(ctx, fn(calls[i]), calls[i].keys, calls[i].args...)
		}
		_, _ = pipe.Exec(ctx)
		for _, i := range again {
			vals[i], errs[i] = cmds[i].Result()
		}
	}
	return vals, errs
}

// noFunction tells whether err is a node's answer to a call of a function
// it does not have.
func noFunction(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && strings.Contains(err.Error(), "Function not found")
}

// runScript runs s once per call in one pipeline (loading it where a node
// does not have it) and returns each run's output or error.
func (l *Ledger) runScript(ctx context.Context, s *goredis.Script, calls []call) ([]any, []error) {
	cmds := make([]*goredis.Cmd, len(calls))
	pipe := l.rdb.Pipeline()
	for i, c := range calls {
		cmds[i] = s.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx)
	vals, errs := make([]any, len(calls)), make([]error, len(calls))
	for i, c := range calls {
		vals[i], errs[i] = cmds[i].Result()
		if errs[i] != nil && goredis.HasErrorPrefix(errs[i], "NOSCRIPT") {
			vals[i], errs[i] = s.Eval(ctx, l.rdb, c.keys, c.args...).Result()
		}
	}
	return vals, errs
}

// fields is the number of strings of each record of the script's output.
var fields = [256]int{'R': 3, 'A': 6, 'E': 5, 'W': 8, 'D': 2, 'S': 2, 'M': 2}

// apply takes in a script's output: results, answers, events, writes and
// the host's next lease deadline.
func (l *Ledger) apply(host string, v any) ([]ledger.Result, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("redis ledger: script answered %T; want an array", v)
	}
	s := make([]string, len(arr))
	for i, x := range arr {
		if s[i], ok = x.(string); !ok {
			return nil, fmt.Errorf("redis ledger: script answered %T at %d; want strings", x, i)
		}
	}
	var res []ledger.Result
	deadline := int64(-1)
	for i := 0; i < len(s); {
		need := 0
		if len(s[i]) == 1 {
			need = fields[s[i][0]]
		}
		if need == 0 || i+need > len(s) {
			return res, fmt.Errorf("redis ledger: bad script output at %d: %q", i, s[i:min(i+8, len(s))])
		}
		f := s[i : i+need]
		i += need
		switch f[0] {
		case "R":
			res = append(res, ledger.Result{Verdict: parseVerdict(f[1]), Reason: ledger.Reason(f[2])})
		case "A":
			fp, err := parseRawFP(f[3])
			if err != nil {
				return res, err
			}
			req, _ := strconv.ParseUint(f[2], 10, 64)
			a := ledger.Answer{Session: l.session(f[1]), ReqID: req, FP: fp, Verdict: parseVerdict(f[4]), Reason: ledger.Reason(f[5])}
			if a.Session == 0 {
				l.forward(f[1], a)
				continue
			}
			l.settle(a.Session, fp)
			if a.Verdict == ledger.OK {
				l.held(a.Session, host, fp)
			}
			l.answers = append(l.answers, a)
		case "E":
			fp, err := parseRawFP(f[3])
			if err != nil {
				return res, err
			}
			l.events = append(l.events, ledger.Event{Kind: parseKind(f[1]), Session: l.session(f[2]), FP: fp, Reason: ledger.Reason(f[4])})
		case "W":
			fp, err := parseRawFP(f[2])
			if err != nil {
				return res, err
			}
			at, _ := strconv.ParseInt(f[3], 10, 64)
			w := ledger.Write{Op: parseOp(f[1]), FP: fp, Key: id.Key{Crawler: f[5], Processor: f[6], URL: f[7]}, At: time.UnixMicro(at).UTC()}
			if f[4] == "1" {
				w.Outcome = ledger.DoneFailed
			}
			l.writes = append(l.writes, w)
		case "D":
			deadline, _ = strconv.ParseInt(f[1], 10, 64)
		case "M":
			l.modified = true
		case "S":
			if f[1] != "0" {
				l.sweeping[host] = struct{}{}
			} else {
				delete(l.sweeping, host)
			}
		}
	}
	l.leases.set(host, deadline)
	return res, nil
}

func parseVerdict(s string) ledger.Verdict {
	switch s {
	case "ok":
		return ledger.OK
	case "no":
		return ledger.No
	case "wait":
		return ledger.Wait
	}
	return ledger.Error
}

var kinds = func() map[string]ledger.EventKind {
	m := make(map[string]ledger.EventKind)
	for k := ledger.EventRequested; k <= ledger.EventLeft; k++ {
		m[k.String()] = k
	}
	return m
}()

func parseKind(s string) ledger.EventKind { return kinds[s] }

func parseOp(s string) ledger.WriteOp {
	switch s {
	case "put-queued":
		return ledger.PutQueued
	case "put-done":
		return ledger.PutDone
	}
	return ledger.Delete
}

// held notes that local session s has state on host for key fp.
func (l *Ledger) held(s id.Session, host string, fp id.Fingerprint) {
	l.fpHost[fp] = host
	hs := l.sessions[s]
	if hs == nil {
		hs = make(map[string]struct{})
		l.sessions[s] = hs
	}
	hs[host] = struct{}{}
}

// settle forgets that local session s waits on fp (it got its answer).
func (l *Ledger) settle(s id.Session, fp id.Fingerprint) {
	if l.inbox != nil {
		l.inbox.settle(l.owner(s), fp)
	}
}

// forward sends an answer for a session of another coordinator.
func (l *Ledger) forward(owner string, a ledger.Answer) {
	c, _, _ := strings.Cut(owner, ".")
	msg := formatAnswer(owner, a)
	ctx, cancel := l.ctx()
	defer cancel()
	// Only for speed: the waiting coordinator also polls the keys its
	// sessions wait on, so a lost message delays the answer, no more.
	_ = l.rdb.Publish(ctx, l.cfg.Prefix+":answers:"+c, msg).Err()
}
