package redis

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"drover/admin"
	"drover/coord"
	"drover/coord/broker"
	"drover/coord/ledger"
)

// Crawls held for the whole cluster (drover submit --max-pages, ACTION
// define-crawl): every coordinator reads the same definitions, charges
// the same page budgets and counts into the same totals. Keys, each
// crawl's on the crawl's own hash tag ({c:NAME}, so a crawl's script
// stays in one slot):
//
//   - PREFIX:crawls         set: the crawls defined (or paused or
//     cancelled by name).
//   - PREFIX:{c:NAME}:def   hash: json, the admin.Crawl definition and
//     state as the operator last set them; max, its page budget.
//   - PREFIX:{c:NAME}:n     hash: the crawl's counters, for every crawler
//     name seen (defined or not): pages (jobs charged to the budget),
//     accepted (jobs pushed to the shared queue), done and failed (jobs
//     finished; a requeue of a failed one takes it back), and live:C,
//     "queued running backoff": the crawl's jobs in coordinator C's
//     broker now, which C rewrites about once a second.
//   - PREFIX:{c:NAME}:charged set: the fingerprints charged to a budget.
//
// A job is charged when a coordinator claims it from the shared queue
// (crawl.lua, one run per crawl per claim): once, whichever coordinator
// claims it and however often, while the budget lasts; past it the job
// fails as budget on the coordinator that claimed it. The counters other
// than pages are added to after the queue's own transitions, like the
// cluster's done and failed totals (summary.go): at least once (a job run
// again after its coordinator died counts again).

//go:embed crawl.lua
var crawlLua string

var crawlScript = goredis.NewScript(crawlLua)

// refundScript gives back the pages of jobs charged (KEYS as crawl.lua's,
// then KEPT: crawlkept.go; ARGV their fingerprints) that ended without a
// dispatch: each charged one leaves the set and the pages count, unless
// its charge is kept (a coordinator that may have dispatched it died or
// stopped holding it). A crawl without a budget keeps no set: each job
// gives back the page its claim counted (crawl.lua counts every claim).
// The count never goes below 0. Answers how many.
var refundScript = goredis.NewScript(`
local max = tonumber(redis.call('HGET', KEYS[1], 'max') or '0') or 0
local n = 0
for i = 1, #ARGV do
  if redis.call('SISMEMBER', KEYS[4], ARGV[i]) == 0 then
    local r = redis.call('SREM', KEYS[3], ARGV[i])
    if max <= 0 then r = 1 end
    n = n + r
  end
end
if n > 0 then
  local pages = tonumber(redis.call('HGET', KEYS[2], 'pages') or '0') or 0
  redis.call('HSET', KEYS[2], 'pages', math.max(pages - n, 0))
end
return n
`)

func (l *Ledger) crawlsKey() string              { return l.cfg.Prefix + ":crawls" }
func (l *Ledger) crawlKey(name, k string) string { return l.cfg.Prefix + ":{c:" + name + "}:" + k }

// CrawlQueue is the shared job queue with the crawls held for the whole
// cluster: it charges claimed jobs to their crawls' page budgets
// (coord.SharedBudgets), counts every crawl's jobs pushed and finished,
// and keeps the crawl definitions. Like the Queue, it is not safe for
// concurrent use (the reactor owns it), but for SaveCrawl,
// PublishCrawlJobs, ReadCrawls and FlushCounts, which one other goroutine
// may call (the coordinator's cluster I/O: they use the client, the
// configuration and the counts, which a lock guards).
type CrawlQueue struct {
	*Queue
	mu     sync.Mutex
	counts map[string]*crawlCounts // added to the counters with the next round trip; mu guards it
}

var (
	_ coord.SharedQueue      = (*CrawlQueue)(nil)
	_ coord.SharedPoliteness = (*CrawlQueue)(nil)
	_ coord.SharedBudgets    = (*CrawlQueue)(nil)
)

// crawlCounts are a crawl's counters not yet added on the cluster.
type crawlCounts struct{ accepted, done, failed int64 }

// Crawls returns the shared job queue on l's cluster with the crawls held
// for the whole cluster (use it in place of Jobs).
func (l *Ledger) Crawls() *CrawlQueue {
	return &CrawlQueue{Queue: l.Jobs(), counts: make(map[string]*crawlCounts)}
}

// add adds to a crawl's counts held.
func (q *CrawlQueue) add(crawler string, accepted, done, failed int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.count(crawler)
	c.accepted += accepted
	c.done += done
	c.failed += failed
}

// count is a crawl's counts held (q.mu held).
func (q *CrawlQueue) count(crawler string) *crawlCounts {
	c := q.counts[crawler]
	if c == nil {
		c = &crawlCounts{}
		q.counts[crawler] = c
	}
	return c
}

// sentCounts are the crawls' counts a pipeline carries.
type sentCounts struct {
	crawls map[string]crawlCounts
}

// addCounts queues, on pipe, adding the counts held; a failed pipeline
// keeps them for the next one (see keepCounts).
func (q *CrawlQueue) addCounts(ctx context.Context, pipe goredis.Pipeliner) (sent sentCounts) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.counts) == 0 {
		return sent
	}
	sent.crawls = make(map[string]crawlCounts, len(q.counts))
	for name, c := range q.counts {
		k := q.l.crawlKey(name, "n")
		for f, v := range map[string]int64{"accepted": c.accepted, "done": c.done, "failed": c.failed} {
			if v != 0 {
				pipe.HIncrBy(ctx, k, f, v)
			}
		}
		sent.crawls[name] = *c
	}
	clear(q.counts)
	return sent
}

// keepCounts gives back counts a pipeline did not add.
func (q *CrawlQueue) keepCounts(sent sentCounts) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for name, s := range sent.crawls {
		c := q.count(name)
		c.accepted += s.accepted
		c.done += s.done
		c.failed += s.failed
	}
}

// FlushCounts adds the counts held to the cluster's counters.
func (q *CrawlQueue) FlushCounts() error {
	q.mu.Lock()
	none := len(q.counts) == 0
	q.mu.Unlock()
	if none {
		return nil
	}
	ctx, cancel := q.l.ctx()
	defer cancel()
	pipe := q.l.rdb.Pipeline()
	sent := q.addCounts(ctx, pipe)
	if _, err := pipe.Exec(once(ctx)); err != nil {
		q.keepCounts(sent)
		return fmt.Errorf("redis crawls: adding to the crawls' counters: %w", err)
	}
	return nil
}

// Push is PushBatch for one job.
func (q *CrawlQueue) Push(now time.Time, spec broker.Spec) (uint64, error) {
	ids, err := q.PushBatch(now, []broker.Spec{spec})
	return ids[0], err
}

// PushBatch pushes jobs to the shared queue (Queue.PushBatch) and counts
// those it took in their crawls' accepted jobs in the round trip of their
// hosts' ready marks, before it returns: a crawl never looks finished
// while a job of it is in the queue (a count the store did not take is
// sent again with the next).
func (q *CrawlQueue) PushBatch(now time.Time, specs []broker.Spec) ([]uint64, error) {
	return q.Queue.pushBatch(now, specs, func(ctx context.Context, pipe goredis.Pipeliner, ids []uint64) func(error) {
		for i, j := range ids {
			if j != 0 {
				q.add(specs[i].Key.Crawler, 1, 0, 0)
			}
		}
		sent := q.addCounts(ctx, pipe)
		return func(err error) {
			if err != nil {
				q.keepCounts(sent)
			}
		}
	})
}

// Finish ends the leases of finished jobs (Queue.Finish) and counts them
// in their crawls' done and failed jobs, added with the next round trip.
func (q *CrawlQueue) Finish(now time.Time, ok, failed []ledger.Item) {
	q.Queue.Finish(now, ok, failed)
	for i := range ok {
		q.add(ok[i].Key.Crawler, 0, 1, 0)
	}
	for i := range failed {
		q.add(failed[i].Key.Crawler, 0, 0, 1)
	}
}

// Charge charges claimed jobs to their crawls' page budgets, one run of
// crawl.lua per crawl in one pipeline (with the counts held):
// coord.SharedBudgets.
func (q *CrawlQueue) Charge(now time.Time, specs []broker.Spec) ([]int, error) {
	l := q.l
	byCrawl := make(map[string][]int)
	var order []string
	for i := range specs {
		c := specs[i].Key.Crawler
		if _, ok := byCrawl[c]; !ok {
			order = append(order, c)
		}
		byCrawl[c] = append(byCrawl[c], i)
	}
	ctx, cancel := l.ctx()
	defer cancel()
	pipe := l.rdb.Pipeline()
	cmds := make([]*goredis.Cmd, len(order))
	for i, c := range order {
		fps := make([]any, len(byCrawl[c]))
		for j, k := range byCrawl[c] {
			fps[j] = rawFP(specs[k].FP)
		}
		cmds[i] = crawlScript.EvalSha(ctx, pipe, []string{l.crawlKey(c, "def"), l.crawlKey(c, "n"), l.crawlKey(c, "charged")}, fps...)
	}
	sent := q.addCounts(ctx, pipe)
	if _, err := pipe.Exec(once(ctx)); err != nil && !goredis.HasErrorPrefix(err, "NOSCRIPT") {
		q.keepCounts(sent)
	}
	refused := make([]int, len(specs))
	var errs []error
	for i, c := range order {
		v, err := cmds[i].Result()
		if err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
			fps := make([]any, len(byCrawl[c]))
			for j, k := range byCrawl[c] {
				fps[j] = rawFP(specs[k].FP)
			}
			v, err = crawlScript.Eval(ctx, l.rdb, []string{l.crawlKey(c, "def"), l.crawlKey(c, "n"), l.crawlKey(c, "charged")}, fps...).Result()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("redis crawls: charging %d jobs of crawl %q: %w", len(byCrawl[c]), c, err))
			continue
		}
		out, _ := v.([]any)
		if len(out) != len(byCrawl[c]) {
			errs = append(errs, fmt.Errorf("redis crawls: charging crawl %q answered %d values; want %d", c, len(out), len(byCrawl[c])))
			continue
		}
		for j, k := range byCrawl[c] {
			n, _ := out[j].(int64)
			refused[k] = int(n)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		l.err = err
	}
	return refused, err
}

// Refund gives back the pages of jobs charged at their claim that ended
// without a dispatch (cancelled, unroutable): coord.SharedBudgets. A job
// of a crawl without a budget gives back the page its claim counted, so
// the crawl's pages are the jobs dispatched, as on the embedded store. A
// refund the store does not take leaves the pages spent (an error, in
// Err).
func (q *CrawlQueue) Refund(now time.Time, items []ledger.Item) {
	l := q.l
	byCrawl := make(map[string][]any)
	for i := range items {
		c := items[i].Key.Crawler
		byCrawl[c] = append(byCrawl[c], rawFP(items[i].FP))
	}
	ctx, cancel := l.ctx()
	defer cancel()
	var errs []error
	for c, fps := range byCrawl {
		keys := []string{l.crawlKey(c, "def"), l.crawlKey(c, "n"), l.crawlKey(c, "charged"), l.crawlKey(c, "kept")}
		if err := refundScript.Run(once(ctx), l.rdb, keys, fps...).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redis crawls: giving back %d pages of crawl %q: %w", len(fps), c, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		l.err = err
	}
}

// SaveCrawl stores a crawl's definition and state for every coordinator
// (its live figures are not kept: the counters hold them).
func (q *CrawlQueue) SaveCrawl(c admin.Crawl) error {
	c.Pages, c.Queued, c.Running, c.Backoff, c.Done, c.Failed, c.PagesPerSec = 0, 0, 0, 0, 0, 0, 0
	b, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("redis crawls: encoding crawl %q: %w", c.Name, err)
	}
	ctx, cancel := q.l.ctx()
	defer cancel()
	pipe := q.l.rdb.Pipeline()
	pipe.HSet(ctx, q.l.crawlKey(c.Name, "def"), "json", b, "max", c.MaxPages)
	pipe.SAdd(ctx, q.l.crawlsKey(), c.Name)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis crawls: storing crawl %q: %w", c.Name, err)
	}
	return nil
}

// AddFailed adds n (negative: takes back) to a crawl's failed jobs: a
// requeue of its failed jobs takes them back (added with the next round
// trip).
func (q *CrawlQueue) AddFailed(crawler string, n int) { q.add(crawler, 0, 0, int64(n)) }

// PublishCrawlJobs writes this coordinator's jobs of each crawl by state
// (its broker's), for every coordinator's crawl figures, with the counts
// held.
func (q *CrawlQueue) PublishCrawlJobs(jobs map[string]broker.CrawlJobs) error {
	ctx, cancel := q.l.ctx()
	defer cancel()
	pipe := q.l.rdb.Pipeline()
	for name, n := range jobs {
		pipe.HSet(ctx, q.l.crawlKey(name, "n"), "live:"+q.l.coord, fmt.Sprintf("%d %d %d", n.Queued, n.Dispatched, n.Backoff))
	}
	sent := q.addCounts(ctx, pipe)
	if _, err := pipe.Exec(once(ctx)); err != nil {
		q.keepCounts(sent)
		return fmt.Errorf("redis crawls: publishing this coordinator's crawl jobs: %w", err)
	}
	return nil
}

// ReadCrawls reads every crawl's definition with its figures for the
// whole cluster: Pages charged, Done and Failed counted, Running and
// Backoff summed over the live coordinators' brokers, and Queued the
// rest of the jobs accepted and not finished (in the shared queue or a
// broker's queue). The counts held here are added first.
func (q *CrawlQueue) ReadCrawls() ([]admin.Crawl, error) {
	l := q.l
	ctx, cancel := l.ctx()
	defer cancel()
	if err := q.FlushCounts(); err != nil {
		return nil, err
	}
	names, err := l.rdb.SMembers(ctx, l.crawlsKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("redis crawls: listing the crawls: %w", err)
	}
	slices.Sort(names)
	pipe := l.rdb.Pipeline()
	defs := make([]*goredis.StringCmd, len(names))
	ns := make([]*goredis.MapStringStringCmd, len(names))
	for i, name := range names {
		defs[i] = pipe.HGet(ctx, l.crawlKey(name, "def"), "json")
		ns[i] = pipe.HGetAll(ctx, l.crawlKey(name, "n"))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis crawls: reading %d crawls: %w", len(names), err)
	}
	// Whose live figures count: the coordinators alive now.
	alive := make(map[string]*goredis.IntCmd)
	pipe = l.rdb.Pipeline()
	for i := range names {
		for f := range ns[i].Val() {
			if c, ok := strings.CutPrefix(f, "live:"); ok && alive[c] == nil {
				alive[c] = pipe.Exists(ctx, l.aliveKey(c))
			}
		}
	}
	if len(alive) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("redis crawls: reading the coordinators' heartbeats: %w", err)
		}
	}
	out := make([]admin.Crawl, 0, len(names))
	for i, name := range names {
		var c admin.Crawl
		if err := json.Unmarshal([]byte(defs[i].Val()), &c); err != nil || c.Name != name {
			return nil, fmt.Errorf("redis crawls: crawl %q: definition %.60q does not decode to it (%v)", name, defs[i].Val(), err)
		}
		n := ns[i].Val()
		num := func(f string) int { v, _ := strconv.Atoi(n[f]); return v }
		c.Pages, c.Done, c.Failed = num("pages"), num("done"), max(num("failed"), 0)
		queued := 0
		for f, v := range n {
			co, ok := strings.CutPrefix(f, "live:")
			if !ok || alive[co].Val() != 1 {
				continue
			}
			var q, r, b int
			if _, err := fmt.Sscanf(v, "%d %d %d", &q, &r, &b); err == nil {
				queued, c.Running, c.Backoff = queued+q, c.Running+r, c.Backoff+b
			}
		}
		// Accepted and not finished: in the shared queue or a broker.
		open := num("accepted") - c.Done - c.Failed
		c.Queued = max(open-c.Running-c.Backoff, queued, 0)
		out = append(out, c)
	}
	return out, nil
}
