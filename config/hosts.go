package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"drover/coord/broker"
)

// HostRule is one entry of the config file's crawl.hosts list: the hosts
// matching Pattern get their own politeness limits on the coordinator,
// instead of crawl.per_host and crawl.min_delay.
type HostRule struct {
	Pattern  string        // "example.com", "example.com:8080", "*.example.com" or "*"
	PerHost  int           // fetches at once at most; 0: no limit
	MinDelay time.Duration // least time between two fetch starts; 0: none
}

// hostFields are the keys of one crawl.hosts entry.
var hostFields = []string{"pattern", "per_host", "min_delay"}

const hostsExpected = "a list of host rules, e.g. crawl: {hosts: [{pattern: \"*.example.com\", per_host: 1, min_delay: 5s}]}"

// readHostRules reads the crawl.hosts list, checking every entry; a bad
// one is an error naming the key, e.g. crawl.hosts[1].min_delay.
func readHostRules(raw any, src Source, errs *Errors) []HostRule {
	list, ok := raw.([]any)
	if !ok {
		errs.add(&Error{Kind: ErrType, Key: "crawl.hosts", Value: writtenAs(raw), Source: src, Expected: hostsExpected})
		return nil
	}
	var out []HostRule
	for i, e := range list {
		at := fmt.Sprintf("crawl.hosts[%d]", i)
		m, ok := e.(map[string]any)
		if !ok {
			errs.add(&Error{Kind: ErrType, Key: at, Value: writtenAs(e), Source: src, Expected: "a host rule with the keys " + strings.Join(hostFields, ", ")})
			continue
		}
		r, bad := HostRule{}, false
		for k, v := range m {
			key := at + "." + k
			switch strings.ToLower(k) {
			case "pattern":
				s, isStr := v.(string)
				if !isStr || broker.ValidPattern(s) != nil {
					errs.add(&Error{Kind: ErrRange, Key: key, Value: writtenAs(v), Source: src, Expected: "a host (example.com, example.com:8080), *.domain or *"})
					bad = true
					continue
				}
				r.Pattern = strings.ToLower(s)
			case "per_host":
				n, ok := asInt(v)
				if s, isStr := v.(string); isStr {
					x, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
					n, ok = x, err == nil
				}
				if !ok || n < 0 || n > math.MaxInt32 {
					errs.add(&Error{Kind: ErrRange, Key: key, Value: writtenAs(v), Source: src, Expected: "an integer, 0 (no limit) or more"})
					bad = true
					continue
				}
				r.PerHost = int(n)
			case "min_delay":
				d, ok := hostDelay(v)
				if !ok {
					errs.add(&Error{Kind: ErrRange, Key: key, Value: writtenAs(v), Source: src, Expected: "a duration from 0 to 1h, e.g. 500ms or 5s"})
					bad = true
					continue
				}
				r.MinDelay = d
			default:
				x := &Error{Kind: ErrUnknown, Key: key, Source: src, Expected: "the keys of a host rule are " + strings.Join(hostFields, ", ")}
				if s := suggest(k, hostFields); s != "" {
					x.Hint = "did you mean " + at + "." + s + "?"
				}
				errs.add(x)
				bad = true
			}
		}
		if !bad && r.Pattern == "" {
			errs.add(&Error{Kind: ErrRange, Key: at + ".pattern", Source: src, Expected: "a host pattern: every host rule needs one"})
			bad = true
		}
		if !bad {
			out = append(out, r)
		}
	}
	return out
}

// hostDelay reads a rule's min_delay: a duration text or a bare 0.
func hostDelay(v any) (time.Duration, bool) {
	var d time.Duration
	switch x := v.(type) {
	case string:
		p, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			return 0, false
		}
		d = p
	default:
		n, ok := asInt(v)
		if !ok || n != 0 {
			return 0, false
		}
	}
	return d, d >= 0 && d <= time.Hour
}

// hostsExample is the crawl.hosts part of the example file.
const hostsExample = `
# Politeness rules per host, held by the coordinator for the whole fleet:
# the first rule whose pattern matches a host gives it its own limits
# instead of crawl.per_host and crawl.min_delay. Patterns: a host
# ("example.com", any port; "example.com:8080", that port), "*.example.com"
# (the domain and every name under it) or "*". per_host 0: no limit.
# crawl:
#   hosts:
#     - {pattern: "*.example.com", per_host: 1, min_delay: 5s}
#     - {pattern: "localhost", per_host: 0, min_delay: 0}
`
