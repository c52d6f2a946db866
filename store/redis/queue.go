package redis

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/coord"
	"drover/coord/broker"
	"drover/coord/id"
)

// The broker's queue shared on the cluster (coord.SharedQueue): a job
// accepted by any coordinator waits in Redis until one of them claims it
// for its workers. Keys, each host's on the host's hash tag as the
// ledger's are; a job's host here is its back-off key (broker.Spec.Host,
// what the broker keys a host's politeness and back-off by: the URL's
// host unless the job names another), so the jobs naming one host share
// its queue and politeness wherever their URLs point:
//
//   - PREFIX:{host}:jq    list: the host's queued jobs politeness does not
//     apply to, oldest first. An entry is "FP JSON": the key's
//     fingerprint, a space, the job.
//   - PREFIX:{host}:pq    list: the same for the jobs politeness applies
//     to (coord.SharedPolicy.Applies: the crawl's fetches).
//   - PREFIX:{host}:jl:C  hash: FP -> entry, the host's jobs of jq
//     leased to coordinator incarnation C (claimed, waiting or running
//     there); PREFIX:{host}:pl:C the same for pq's.
//   - PREFIX:{host}:pol   hash: the host's politeness for the whole
//     cluster: its polite jobs leased to any coordinator (n) and the
//     server time before which none is claimed (next).
//   - PREFIX:ready        set: hosts whose queues may hold jobs.
//   - PREFIX:jobids       counter: job ids are taken from it in blocks.
//   - PREFIX:{T}:stats    hash: the counts of a slot's hosts (jobs
//     queued, done, failed), kept by the same scripts (stats.go).
//
// Every transition is one run of queue.lua on one host. Claim pops up to
// n entries into this coordinator's leases in one atomic step: polite
// jobs only while the host has fewer than its cap leased cluster-wide and
// its next time has passed (then one per interval, and next moves an
// interval on), so the host's limits hold across coordinators, not only
// among one coordinator's workers. Finish deletes the leases; a polite
// job's frees its slot and moves next to an interval after its end (the
// broker's rule: the interval runs from ends too). When C dies (its alive
// key expired), the peer that sweeps it (peers.go) unleases every host C
// touched: C's leased jobs go back to the front of their queues,
// uncharged, their slots freed, and the host into ready. A job is thus
// always in exactly one of a queue and a lease; it leaves when its
// coordinator finishes it.
//
// A claim whose answer is lost after Redis ran it (a connection cut, a
// timeout) leased jobs this coordinator never saw, and may hold the
// host's polite slot. So the queue remembers the jobs it holds (claimed,
// not finished) and the hosts whose claim got no answer; the next Tick or
// Claim sends those hosts the jobs it holds there, and the script returns
// every other job leased to it to the front of its queue, its slot freed.
// The client does not send such a claim again by itself (once.go): it
// would run twice, and the first run's leases would be no one's.

//go:embed queue.lua
var queueLua string

var queueScript = goredis.NewScript(queueLua)

// idBlock is how many job ids a coordinator takes from PREFIX:jobids at
// a time.
const idBlock = 4096

// Queue is the shared job queue of the coordinators on one cluster, for
// the coordinator whose ledger l is. Like the ledger, it is not safe for
// concurrent use (the reactor owns both).
type Queue struct {
	l       *Ledger
	nextID  uint64 // next job id of the block taken
	lastID  uint64 // last id of the block
	hostBuf []string
	policy  coord.SharedPolicy // set by HoldPoliteness; zero: no politeness held
	// politeWait is, after a Claim, the shortest wait of a host it found
	// holding polite jobs back for its interval (0: none).
	politeWait time.Duration
	// held names, by fingerprint, the host of every job this coordinator
	// claimed and has not finished.
	held map[string]string
	// unsure are the hosts whose claim got no answer: it may have leased
	// jobs this coordinator never saw, freed by the next Tick or Claim.
	unsure map[string]struct{}
	// Hosts' back-offs (backoff.go): boOut those this coordinator's
	// throttles set, not yet written; learned those others set, not yet
	// handed to the broker; epoch the value of PREFIX:backoffs last read,
	// nextPoll when it is read again.
	boOut, learned []broker.HostBackoff
	epoch          int64
	nextPoll       time.Time
	// seen are the hosts claims found holding polite jobs back, polite
	// the rows built from them for the summary (politehosts.go).
	seen map[string]politeSeen
	snap politeSnapshot
	// avoid holds, until when, the hosts whose jobs this coordinator
	// handed back because none of its workers had the headers they need
	// (Return): its claims leave them to the others meanwhile.
	avoid map[string]time.Time
	// unrtLog counts the jobs handed back as unroutable for their log
	// line, at most one a minute (Return).
	unrtLog logEvery
	// Claimed, Pushed and Returned count jobs claimed and pushed by this
	// coordinator, and jobs of dead peers it returned to the queue;
	// Unclaimed the jobs leased by its claims whose answer was lost, which
	// it returned to the queue; HandedBack the jobs it claimed and handed
	// back for want of a worker (Return).
	Claimed, Pushed, Returned, Unclaimed, HandedBack uint64
}

var (
	_ coord.SharedQueue      = (*Queue)(nil)
	_ coord.SharedReturn     = (*Queue)(nil)
	_ coord.SharedPoliteness = (*Queue)(nil)
)

// HoldPoliteness makes the queue hold the hosts' politeness for every
// coordinator on the cluster (coord.SharedPoliteness): jobs p.Applies to
// wait in their host's polite queue, and a claim takes them only within
// the host's limits (p.Limits) counted across coordinators.
func (q *Queue) HoldPoliteness(p coord.SharedPolicy) { q.policy = p }

// PoliteWait is how long after the last Claim a host it found holding
// polite jobs back for its interval (and under its cap) becomes eligible;
// 0 when it found none (coord.SharedPoliteness).
func (q *Queue) PoliteWait() time.Duration { return q.politeWait }

// polite reports whether politeness applies to the job.
func (q *Queue) polite(spec *broker.Spec) bool {
	return q.policy.Applies != nil && q.policy.Applies(spec.Key.Processor)
}

// limits are host's limits in force for this coordinator: its cap and its
// interval in µs, as the script takes them.
func (q *Queue) limits(host string) (limit int, gapUS int64) {
	if q.policy.Limits == nil {
		return 0, 0
	}
	l := q.policy.Limits(host)
	return l.PerHost, l.MinDelay.Microseconds()
}

// queueKeys are the keys queue.lua declares for host and coordinator c.
func (l *Ledger) queueKeys(host, c string) []string {
	p := l.pre(host)
	return []string{p + "jq", p + "jl:" + c, p + "pq", p + "pl:" + c, p + "pol", l.statsKey(host)}
}

// Jobs returns the shared job queue on l's cluster, for l's coordinator.
func (l *Ledger) Jobs() *Queue {
	if l.queue == nil {
		l.queue = &Queue{l: l, held: make(map[string]string), unsure: make(map[string]struct{}), seen: make(map[string]politeSeen), unrtLog: logEvery{every: time.Minute}}
	}
	return l.queue
}

func (l *Ledger) readyKey() string { return l.cfg.Prefix + ":ready" }

// jobEntry is a job as the queue keeps it.
type jobEntry struct {
	Crawler   string            `json:"c,omitempty"`
	Processor string            `json:"p,omitempty"`
	URL       string            `json:"u"`
	Host      string            `json:"h,omitempty"` // the back-off key when it is not the URL's host
	Headers   map[string]string `json:"hd,omitempty"`
	Payload   []byte            `json:"b,omitempty"`
	ID        uint64            `json:"id"`
}

// queueHost is the host whose queue and politeness record hold the job:
// its back-off key (Spec.Host, which the broker keys a host's politeness
// and back-off by), usually its URL's host.
func queueHost(spec *broker.Spec) string {
	if spec.Host == "" {
		return hostOf(&spec.Key)
	}
	return spec.Host
}

func encodeEntry(spec *broker.Spec, jid uint64) (string, error) {
	e := jobEntry{Crawler: spec.Key.Crawler, Processor: spec.Key.Processor, URL: spec.Key.URL,
		Headers: spec.Headers, Payload: spec.Payload, ID: jid}
	if spec.Host != id.Host(spec.Key.URL) {
		e.Host = spec.Host
	}
	b, err := json.Marshal(&e)
	if err != nil {
		return "", fmt.Errorf("redis queue: encoding job %s: %w", spec.Key.URL, err)
	}
	return spec.FP.String() + " " + string(b), nil
}

// decodeEntry parses an entry; the fingerprint must be the key's.
func decodeEntry(s string) (broker.Spec, error) {
	fps, js, ok := strings.Cut(s, " ")
	if !ok {
		return broker.Spec{}, fmt.Errorf("redis queue: entry %.40q: want \"FP JSON\"", s)
	}
	var e jobEntry
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		return broker.Spec{}, fmt.Errorf("redis queue: entry %.40q: %w", s, err)
	}
	k := id.Key{Crawler: e.Crawler, Processor: e.Processor, URL: e.URL}
	fp := k.Fingerprint()
	if fp.String() != fps {
		return broker.Spec{}, fmt.Errorf("redis queue: entry for %s names fingerprint %s; want the key's %s", e.URL, fps, fp)
	}
	sp := broker.Spec{Key: k, FP: fp, Host: e.Host, Headers: e.Headers, Payload: e.Payload}
	if sp.Host == "" {
		sp.Host = id.Host(k.URL)
	}
	return sp, nil
}

// jobID takes the next job id, a block at a time.
func (q *Queue) jobID(ctx context.Context) (uint64, error) {
	if q.nextID == 0 || q.nextID > q.lastID {
		last, err := q.l.rdb.IncrBy(ctx, q.l.cfg.Prefix+":jobids", idBlock).Result()
		if err != nil {
			return 0, fmt.Errorf("redis queue: taking job ids: %w", err)
		}
		q.lastID = uint64(last)
		q.nextID = q.lastID - idBlock + 1
	}
	j := q.nextID
	q.nextID++
	return j, nil
}

// Push appends a job to its host's queue and marks the host ready (see
// PushBatch).
func (q *Queue) Push(now time.Time, spec broker.Spec) (uint64, error) {
	ids, err := q.PushBatch(now, []broker.Spec{spec})
	return ids[0], err
}

// PushBatch pushes several jobs in two round trips: the entries (one
// script per host, which counts them in the host's slot), then the ready
// marks of their hosts. ids[i] is 0 for a job the store did not take.
func (q *Queue) PushBatch(now time.Time, specs []broker.Spec) ([]uint64, error) {
	return q.pushBatch(now, specs, nil)
}

// pushBatch is PushBatch; also, if set, adds to the round trip of the
// ready marks (given the ids of the jobs taken) and learns its error.
func (q *Queue) pushBatch(now time.Time, specs []broker.Spec, also func(context.Context, goredis.Pipeliner, []uint64) func(error)) ([]uint64, error) {
	l := q.l
	ids := make([]uint64, len(specs))
	ctx, cancel := l.ctx()
	defer cancel()
	// Every id first: a job whose id could not be taken is not pushed,
	// and none gets an id the caller would take for the queue's.
	for i := range specs {
		jid, err := q.jobID(ctx)
		if err != nil {
			clear(ids)
			l.err = err
			return ids, err
		}
		ids[i] = jid
	}
	// One script per host: its polite entries, then the others.
	var errs []error
	type hostPush struct {
		polite, other []any
		jobs          []int // the specs, polite first, as the entries
	}
	byHost := make(map[string]*hostPush)
	var order []string
	for i := range specs {
		entry, err := encodeEntry(&specs[i], ids[i])
		if err != nil {
			ids[i] = 0
			errs = append(errs, err)
			continue
		}
		h := queueHost(&specs[i])
		hp := byHost[h]
		if hp == nil {
			hp = &hostPush{}
			byHost[h] = hp
			order = append(order, h)
		}
		if q.polite(&specs[i]) {
			hp.polite = append(hp.polite, entry)
		} else {
			hp.other = append(hp.other, entry)
		}
		hp.jobs = append(hp.jobs, i)
	}
	if err := l.registerSlots(ctx, order); err != nil {
		for _, h := range order {
			for _, i := range byHost[h].jobs {
				ids[i] = 0
			}
		}
		errs = append(errs, err)
		order = nil
	}
	calls := make([]call, len(order))
	for i, h := range order {
		hp := byHost[h]
		args := append(append([]any{"push", len(hp.polite)}, hp.polite...), hp.other...)
		calls[i] = call{host: h, keys: l.queueKeys(h, l.coord), args: args}
	}
	_, cerrs := l.runScript(once(ctx), queueScript, calls)
	hosts := make(map[string]struct{})
	n := 0
	for c, h := range order {
		if err := cerrs[c]; err != nil {
			errs = append(errs, fmt.Errorf("redis queue: pushing %d jobs of host %q: %w", len(byHost[h].jobs), h, err))
			for _, i := range byHost[h].jobs {
				ids[i] = 0
			}
			continue
		}
		hosts[h] = struct{}{}
		n += len(byHost[h].jobs)
	}
	if n > 0 {
		// After the entries, as in Push.
		pipe := l.rdb.Pipeline()
		for h := range hosts {
			pipe.SAdd(ctx, l.readyKey(), h)
		}
		var learn func(error)
		if also != nil {
			learn = also(ctx, pipe, ids)
		}
		_, err := pipe.Exec(once(ctx))
		if learn != nil {
			learn(err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("redis queue: marking %d hosts ready: %w", len(hosts), err))
		}
	}
	if l.cfg.WaitReplicas > 0 && n > 0 {
		list := make([]string, 0, len(hosts))
		for h := range hosts {
			list = append(list, h)
		}
		if bad := l.waitHosts(ctx, list); len(bad) > 0 {
			// Not confirmed on a replica: a failover could lose them, so
			// the caller keeps them too (they may run twice, never zero
			// times).
			for i := range specs {
				if err, ok := bad[queueHost(&specs[i])]; ok && ids[i] != 0 {
					ids[i] = 0
					n--
					errs = append(errs, err)
				}
			}
		}
	}
	q.Pushed += uint64(n)
	err := errors.Join(errs...)
	if err != nil {
		l.err = err
	}
	return ids, err
}

// claimRounds bounds the pipelines one Claim sends: a round asks each
// host picked for its share of the jobs wanted (at most one host per job
// wanted), the next asks the hosts picked and not asked yet, then again
// the hosts that gave their whole share, for what is still missing.
const claimRounds = 3

// claimHosts bounds the ready hosts one Claim picks: between 8 and 64, as
// many as jobs wanted. A polite host gives at most one job a claim (then
// waits its interval), so a claim over a crawl of many hosts takes about
// one job per host picked.
const claimHosts = 64

// Claim leases up to n queued jobs to this coordinator, from up to n (at
// least 8, at most claimHosts) ready hosts picked at random: one pipeline
// of scripts a round (one round trip per node), at most claimRounds
// rounds. The scripts count the jobs out of their slots' queued counts.
func (q *Queue) Claim(now time.Time, n int) ([]broker.Spec, error) {
	l := q.l
	if n <= 0 {
		return nil, nil
	}
	ctx, cancel := l.ctx()
	defer cancel()
	q.forget(ctx)
	hosts, err := l.rdb.SRandMemberN(ctx, l.readyKey(), int64(min(max(n, 8), claimHosts))).Result()
	hosts = q.avoided(now, hosts)
	if err == nil {
		// Registered first, so a sweep of this coordinator finds them.
		err = l.touch(ctx, hosts...)
	}
	if err != nil {
		err = fmt.Errorf("redis queue: reading ready hosts: %w", err)
		l.err = err
		return nil, err
	}
	// SRANDMEMBER gives a set no larger than the count whole, in one
	// order: shuffled, so no host is always asked first.
	rand.Shuffle(len(hosts), func(i, j int) { hosts[i], hosts[j] = hosts[j], hosts[i] })
	var out []broker.Spec
	var errs []error
	var empty []string
	q.politeWait = 0
	for round := 0; round < claimRounds && len(hosts) > 0 && len(out) < n; round++ {
		need := n - len(out)
		// The hosts picked and not asked yet are asked in the next round
		// first: a host backed off or at its politeness limits gives
		// nothing, and must not leave the claim empty.
		untried := slices.Clone(hosts[min(len(hosts), need):])
		hosts = hosts[:min(len(hosts), need)]
		calls := make([]call, len(hosts))
		wants := make([]int, len(hosts))
		for i, h := range hosts {
			wants[i] = need / len(hosts)
			if i < need%len(hosts) {
				wants[i]++
			}
			limit, gap := q.limits(h)
			calls[i] = call{host: h, keys: l.queueKeys(h, l.coord), args: []any{"claim", wants[i], limit, gap}}
		}
		vals, cerrs := l.runScript(once(ctx), queueScript, calls)
		var more []string
		for i, h := range hosts {
			v, err := claimAnswer(vals[i], cerrs[i])
			if err != nil {
				q.unsure[h] = struct{}{} // it may have run: forget frees what it leased
				errs = append(errs, fmt.Errorf("redis queue: claiming on host %q: %w", h, err))
				continue
			}
			if w, _ := strconv.ParseInt(v[1], 10, 64); w > 0 {
				d := time.Duration(w) * time.Microsecond
				if q.politeWait == 0 || d < q.politeWait {
					q.politeWait = d
				}
			}
			q.learn(now, h, v[2:2+peekLen])
			q.notePolite(now, h, v)
			for _, e := range v[claimHead:] {
				fp, _, _ := strings.Cut(e, " ")
				q.held[fp] = h
				sp, err := decodeEntry(e)
				if err != nil {
					errs = append(errs, err) // left leased: returned to the queue if this coordinator dies
					continue
				}
				out = append(out, sp)
			}
			switch {
			case v[0] == "0":
				empty = append(empty, h)
			case len(v)-claimHead == wants[i]:
				more = append(more, h) // gave its whole share: may give more
			}
		}
		hosts = append(untried, more...)
	}
	q.unready(ctx, empty)
	q.snapPolite(now)
	q.Claimed += uint64(len(out))
	if err := errors.Join(errs...); err != nil {
		l.err = err
		return out, err
	}
	return out, nil
}

// claimHead is the number of strings before the entries of a claim's
// answer: the jobs left on the host, the wait for its interval, its
// back-off (as peek answers it: backoff.go), its polite jobs left and
// leased.
const claimHead = 2 + peekLen + 2

// claimAnswer reads a claim's answer: the jobs left on the host, the
// wait for its interval, its back-off, then the entries claimed.
func claimAnswer(v any, err error) ([]string, error) {
	out, err := stringsAnswer(v, err)
	if err == nil && len(out) < claimHead {
		err = fmt.Errorf("the script answered %d strings; want the jobs left, the wait, the back-off (%d), then the entries", len(out), claimHead)
	}
	return out, err
}

// stringsAnswer reads a script's answer that is a list of strings.
func stringsAnswer(v any, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("the script answered %T %v; want a list of strings", v, v)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(string); !ok {
			return nil, fmt.Errorf("the script answered %T at %d; want strings", x, i)
		}
	}
	return out, nil
}

// unready removes emptied hosts from the ready set, and puts back those a
// push came to in between.
func (q *Queue) unready(ctx context.Context, hosts []string) {
	l := q.l
	if len(hosts) == 0 {
		return
	}
	if err := l.rdb.SRem(ctx, l.readyKey(), hosts).Err(); err != nil {
		return
	}
	pipe := l.rdb.Pipeline()
	lens := make([][2]*goredis.IntCmd, len(hosts))
	for i, h := range hosts {
		lens[i] = [2]*goredis.IntCmd{pipe.LLen(ctx, l.pre(h)+"jq"), pipe.LLen(ctx, l.pre(h)+"pq")}
	}
	_, err := pipe.Exec(ctx)
	var back []string
	for i, h := range hosts {
		if err != nil || lens[i][0].Val()+lens[i][1].Val() > 0 {
			back = append(back, h)
		}
	}
	if len(back) > 0 {
		l.rdb.SAdd(ctx, l.readyKey(), back)
	}
}
