package config

import (
	"math"
	"slices"
	"strings"
	"time"

	"drover/crawl"
)

// CrawlDef is one entry of the config file's crawls section: a crawl the
// coordinator (`drover serve`, `drover`) defines at start-up, as `drover
// submit --crawler NAME --scope --max-depth --max-pages` does.
type CrawlDef struct {
	Scope    string // host, domain or prefix; default host
	MaxDepth int    // deepest level followed; 0: no limit; default crawl.DefaultMaxDepth
	MaxPages int    // page budget; 0 (the default): none
	// ResultsMaxAge and ResultsMaxBytes keep the crawl's results by limits
	// of its own instead of results.max_age and results.max_bytes; 0 (the
	// default): those.
	ResultsMaxAge   time.Duration
	ResultsMaxBytes int64
}

// crawlFields are the keys of one crawls entry.
var crawlFields = []string{"scope", "max_depth", "max_pages", "results_max_age", "results_max_bytes"}

// readCrawls takes the crawls section out of the file's keys (crawls.NAME.FIELD),
// checking each value as define-crawl does; a bad one is an error naming
// the key, e.g. crawls.news.scope.
func readCrawls(keys []string, get func(string) any, at func(string) Source, errs *Errors) map[string]CrawlDef {
	out := map[string]CrawlDef{}
	for _, fk := range keys {
		if fk == "crawls" {
			errs.add(&Error{Kind: ErrType, Key: fk, Value: writtenAs(get(fk)), Source: at(fk),
				Expected: "a section of crawls by name, e.g. crawls: {news: {scope: domain, max_depth: 5, max_pages: 100000}}"})
			continue
		}
		rest, ok := strings.CutPrefix(fk, "crawls.")
		if !ok {
			continue
		}
		name, field, ok := strings.Cut(rest, ".")
		if !ok {
			errs.add(&Error{Kind: ErrType, Key: fk, Value: writtenAs(get(fk)), Source: at(fk),
				Expected: "a crawl's definition with the keys " + strings.Join(crawlFields, ", ")})
			continue
		}
		def, seen := out[name]
		if !seen {
			def = CrawlDef{Scope: string(crawl.ScopeHost), MaxDepth: crawl.DefaultMaxDepth}
		}
		raw := get(fk)
		switch field {
		case "scope":
			s, isStr := raw.(string)
			sc, err := crawl.ParseScope(s)
			if !isStr || err != nil {
				errs.add(&Error{Kind: ErrRange, Key: fk, Value: writtenAs(raw), Source: at(fk), Expected: "one of host, domain, prefix"})
				continue
			}
			def.Scope = string(sc)
		case "max_depth", "max_pages":
			v, ok := coerce(Key{Kind: KindInt}, raw)
			n, _ := v.(int)
			if !ok || n < 0 || n > math.MaxInt32 {
				errs.add(&Error{Kind: ErrRange, Key: fk, Value: writtenAs(raw), Source: at(fk),
					Expected: "an integer, 0 (no limit) or more"})
				continue
			}
			if field == "max_depth" {
				def.MaxDepth = n
			} else {
				def.MaxPages = n
			}
		case "results_max_age":
			v, ok := coerce(Key{Kind: KindDuration}, raw)
			d, _ := v.(time.Duration)
			if !ok || d != 0 && d < time.Second {
				errs.add(&Error{Kind: ErrRange, Key: fk, Value: writtenAs(raw), Source: at(fk),
					Expected: "a duration of 1s or more (e.g. 72h), or 0 for results.max_age"})
				continue
			}
			def.ResultsMaxAge = d.Truncate(time.Second)
		case "results_max_bytes":
			v, ok := coerce(Key{Kind: KindSize}, raw)
			n, _ := v.(int64)
			if !ok || n < 0 {
				errs.add(&Error{Kind: ErrRange, Key: fk, Value: writtenAs(raw), Source: at(fk),
					Expected: "a size (e.g. 500MiB), or 0 for results.max_bytes"})
				continue
			}
			def.ResultsMaxBytes = n
		default:
			x := &Error{Kind: ErrUnknown, Key: fk, Source: at(fk), Expected: "the keys of a crawl are " + strings.Join(crawlFields, ", ")}
			if s := suggest(field, crawlFields); s != "" {
				x.Hint = "did you mean crawls." + name + "." + s + "?"
			}
			errs.add(x)
			continue
		}
		out[name] = def
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// CrawlNames returns the names of the configured crawls, sorted.
func (c *Config) CrawlNames() []string {
	names := make([]string, 0, len(c.Crawls))
	for n := range c.Crawls {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// crawlsExample is the crawls section of the example file: none by default.
const crawlsExample = `
# Crawls the coordinator (drover serve, drover) defines at start-up, as
# "drover submit --crawler NAME --scope S --max-depth D --max-pages P" does,
# by name: scope host, domain or prefix (default host); max_depth 0 (no
# limit) or more (default %d); max_pages, the page budget, 0 (none, the
# default) or more; results_max_age and results_max_bytes, limits of its own
# for its results instead of results.max_age and results.max_bytes (0, the
# default: those). None by default. A crawl defined here is defined again
# at every start, keeping its page count.
# crawls:
#   news: {scope: domain, max_depth: 5, max_pages: 100000, results_max_age: 72h}
`
