package cli

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"drover/admin"
	"drover/config"
	"drover/crawl"
)

// politeHeld is what the crawl's coordinator said last about pages held
// back by their hosts' politeness limits.
type politeHeld struct {
	mu         sync.Mutex
	held, idle int
}

func (p *politeHeld) set(t admin.Totals) {
	p.mu.Lock()
	p.held, p.idle = t.Polite, t.WorkersIdle
	p.mu.Unlock()
}

// slowing reports how many pages wait for their hosts' limits while
// workers sit idle: the limits, not the workers, bound the crawl.
func (p *politeHeld) slowing() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held > 0 && p.idle > 0 {
		return p.held
	}
	return 0
}

// politenessNote returns a function that says, at most once a second
// anew, whether the crawl's pages spent the last interval waiting for
// their hosts' politeness limits (held by the coordinator while workers
// sat idle, or waiting in the fetcher for a robots.txt Crawl-delay), and
// which setting to change: "" when they did not (or hardly). Each caller
// (the progress lines, the console) takes its own.
func politenessNote(f *crawl.Fetcher, held *politeHeld, short bool) func() string {
	var (
		mu   sync.Mutex
		last crawl.Politeness
		at   = time.Now()
		text string
	)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		interval := now.Sub(at)
		if interval < time.Second {
			return text
		}
		p := f.Politeness()
		text = politenessText(p.Waited-last.Waited, interval, p, short)
		last, at = p, now
		if n := held.slowing(); text == "" && n > 0 {
			text = fmt.Sprintf("slowed by politeness: %d pages wait for their hosts' limits (--per-host, --crawl-min-delay)", n)
			if short {
				text = "slowed by politeness (--per-host, --crawl-min-delay)"
			}
		}
		return text
	}
}

// politenessText says what waited (the fetches' waits over interval)
// means: nothing below a tenth of the interval, else that politeness slows
// the crawl, by which delay, and the flag that sets it (short: in a few
// words, for the console's header).
func politenessText(waited, interval time.Duration, p crawl.Politeness, short bool) string {
	if waited < interval/10 {
		return ""
	}
	if short {
		switch {
		case p.CrawlDelay:
			return fmt.Sprintf("slowed by robots.txt Crawl-delay %s", p.Delay)
		case p.Delay > 0:
			return fmt.Sprintf("slowed by politeness: %s/host (--crawl-min-delay)", p.Delay)
		}
		return "slowed by politeness (--per-host)"
	}
	share := fmt.Sprintf("fetches waited %s for their hosts in the last %s", waited.Round(100*time.Millisecond), interval.Round(time.Second))
	switch {
	case p.CrawlDelay:
		return fmt.Sprintf("slowed by politeness: robots.txt asks for a Crawl-delay of %s (%s; --ignore-robots skips robots.txt)", p.Delay, share)
	case p.Delay > 0:
		return fmt.Sprintf("slowed by politeness: %s between fetches on a host (%s; --crawl-min-delay to change, --per-host for parallel fetches)", p.Delay, share)
	}
	return fmt.Sprintf("slowed by politeness: at most --per-host fetches at once on a host (%s)", share)
}

// openWARC opens the WARC writer of --warc path with --warc-max-size
// maxSize, describing the crawl in each file's warcinfo record.
func openWARC(path, maxSize string, c crawl.Config) (*crawl.WARCWriter, error) {
	size, err := config.ParseSize(maxSize)
	if err != nil || size < 1<<10 {
		return nil, usageError("--warc-max-size %q: want a size of at least 1KiB, e.g. 100MiB or 1GiB", maxSize)
	}
	robots := "obey"
	if c.IgnoreRobots {
		robots = "ignore"
	}
	ww, err := crawl.OpenWARC(crawl.WARCOptions{Path: path, MaxSize: size, Software: "drover/" + version,
		Info: map[string]string{"http-header-user-agent": c.Agent(), "robots": robots,
			"description": "drover crawl, scope " + c.Scope.String()}})
	if err != nil {
		return nil, usageError("--warc: %v", err)
	}
	return ww, nil
}

// warcFileName is the WARC name of a worker's files: "drover-ID.warc.gz"
// (numbered by the writer), the id being --id or host-pid, with anything
// but letters, digits, '.', '_' and '-' made '_'.
func warcFileName(wid string) string {
	if wid == "" {
		wid = fmt.Sprintf("%s-%d", hostname(), os.Getpid())
	}
	safe := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, wid)
	return "drover-" + strings.TrimLeft(safe, ".") + ".warc.gz"
}

// openResults opens --out in --format: "jsonl", "csv", or "" for csv
// when the name ends in .csv and jsonl otherwise.
func openResults(path, format string) (crawl.RecordWriter, error) {
	if format == "" {
		format = "jsonl"
		if strings.HasSuffix(strings.ToLower(path), ".csv") {
			format = "csv"
		}
	}
	switch strings.ToLower(format) {
	case "jsonl", "json":
		w, err := crawl.OpenJSONL(path)
		if err != nil {
			return nil, fmt.Errorf("crawl: --out: %w", err)
		}
		return w, nil
	case "csv":
		w, err := crawl.OpenCSV(path)
		if err != nil {
			return nil, fmt.Errorf("crawl: --out: %w", err)
		}
		return w, nil
	}
	return nil, usageError("crawl: --format %q: want jsonl or csv", format)
}
