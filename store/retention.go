package store

import "time"

// ResultLimits bound the results kept: MaxAge deletes those that finished
// longer ago, MaxBytes the oldest while the rest take more (0: no limit).
type ResultLimits struct {
	MaxAge   time.Duration
	MaxBytes int64
}

// Retention is the results' retention policy: Default for every crawl,
// except that a crawl in PerCrawler with a limit of its own set (non-zero)
// is held to that limit instead. A crawl's own MaxBytes bounds its results
// alone, which then no longer count towards Default.MaxBytes: that bounds
// the results of the crawls without one, together.
type Retention struct {
	Default    ResultLimits
	PerCrawler map[string]ResultLimits
}

// Limited reports whether the policy deletes anything ever.
func (p *Retention) Limited() bool {
	if p.Default != (ResultLimits{}) {
		return true
	}
	for _, l := range p.PerCrawler {
		if l != (ResultLimits{}) {
			return true
		}
	}
	return false
}

// limits is the policy for crawler's results, and the name of the size
// group they count in ("" shared, else the crawler).
func (p *Retention) limits(crawler string) (l ResultLimits, group string, own bool) {
	l = p.Default
	c, ok := p.PerCrawler[crawler]
	if !ok {
		return l, "", false
	}
	if c.MaxAge > 0 {
		l.MaxAge = c.MaxAge
	}
	if c.MaxBytes > 0 {
		return ResultLimits{MaxAge: l.MaxAge, MaxBytes: c.MaxBytes}, crawler, true
	}
	return l, "", false
}

// Drop marks in drop (len n) the results the policy deletes at now, of n
// results in cursor order (oldest first) that result(i) describes: first
// those past their crawl's age, then, in each size group, the oldest while
// the group's rest is over its size.
func (p *Retention) Drop(now time.Time, n int, result func(i int) (crawler string, finished time.Time, size int64), drop []bool) {
	type group struct{ total, limit int64 }
	groups := map[string]*group{}
	gs := make([]*group, n)
	for i := range n {
		c, at, size := result(i)
		l, name, _ := p.limits(c)
		if l.MaxAge > 0 && !at.After(now.Add(-l.MaxAge)) {
			drop[i] = true
			continue
		}
		g := groups[name]
		if g == nil {
			g = &group{limit: l.MaxBytes}
			groups[name] = g
		}
		g.total += size
		gs[i] = g
	}
	for i := range n {
		g := gs[i]
		if drop[i] || g.limit <= 0 || g.total <= g.limit {
			continue
		}
		_, _, size := result(i)
		g.total -= size
		drop[i] = true
	}
}
