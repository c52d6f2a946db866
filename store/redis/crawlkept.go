package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// Charges kept (crawl.go's budgets). A job charged at its claim that ends
// without a dispatch gives its page back (Refund). But a job a
// coordinator held when it died, or handed back when it stopped, may
// have been dispatched there (its page fetched); returned to the queue,
// claimed by another coordinator (not charged again: its charge stands)
// and cancelled there before that one dispatches it, it would give back a
// page that was spent, and the budget would fetch one more. So before a
// coordinator's leases are returned (returnJobs), their jobs' charges
// are kept: each charged fingerprint goes into its crawl's set KEPT
// ({c:NAME}:kept, beside CHARGED, at most the budget of them), and the
// refund gives back none of those. A job that coordinator never
// dispatched thus keeps a page it did not fetch: the budget errs on
// fewer pages, never more.

// keepScript keeps the charges of jobs (KEYS: CHARGED, KEPT; ARGV their
// fingerprints) that are charged. Answers how many.
var keepScript = goredis.NewScript(`
local n = 0
for i = 1, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    n = n + redis.call('SADD', KEYS[2], ARGV[i])
  end
end
return n
`)

// keepCharges keeps the charges of the jobs coordinator d leased on
// hosts, before they are returned to the queue.
func (l *Ledger) keepCharges(ctx context.Context, d string, hosts []string) error {
	pipe := l.rdb.Pipeline()
	cmds := make([][2]*goredis.StringSliceCmd, len(hosts))
	for i, h := range hosts {
		cmds[i] = [2]*goredis.StringSliceCmd{pipe.HVals(ctx, l.pre(h)+"jl:"+d), pipe.HVals(ctx, l.pre(h)+"pl:"+d)}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("redis crawls: reading coordinator %s's leases to keep their charges: %w", d, err)
	}
	byCrawl := make(map[string][]any)
	for i := range hosts {
		for _, cmd := range cmds[i] {
			for _, e := range cmd.Val() {
				sp, err := decodeEntry(e)
				if err != nil || sp.Key.Crawler == "" {
					continue // not a crawl's job: nothing charged
				}
				byCrawl[sp.Key.Crawler] = append(byCrawl[sp.Key.Crawler], rawFP(sp.FP))
			}
		}
	}
	return l.keepFPs(ctx, d, byCrawl)
}

// keepFPs keeps the charges of the jobs named, by crawl, by their raw
// fingerprints (those coordinator d leased).
func (l *Ledger) keepFPs(ctx context.Context, d string, byCrawl map[string][]any) error {
	for c, fps := range byCrawl {
		keys := []string{l.crawlKey(c, "charged"), l.crawlKey(c, "kept")}
		if err := keepScript.Run(ctx, l.rdb, keys, fps...).Err(); err != nil {
			return fmt.Errorf("redis crawls: keeping the charges of %d jobs of crawl %q coordinator %s leased: %w", len(fps), c, d, err)
		}
	}
	return nil
}
