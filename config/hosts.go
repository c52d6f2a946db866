package config

import (
	"fmt"
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
			case "per_host", "min_delay":
				x, err := ruleValue(strings.ToLower(k), key, v, src)
				if err != nil {
					errs.add(err)
					bad = true
					continue
				}
				if n, isInt := x.(int); isInt {
					r.PerHost = n
				} else {
					r.MinDelay = x.(time.Duration)
				}
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

// ruleValue reads a host rule's per_host or min_delay (field) as the key
// of the same name under crawl reads its value, spellings and range alike:
// one rule for both. The error names the rule's key.
func ruleValue(field, key string, raw any, src Source) (any, *Error) {
	k, _ := Lookup("crawl." + field)
	v, ok := coerce(k, raw)
	if !ok {
		return nil, &Error{Kind: ErrType, Key: key, Value: writtenAs(raw), Source: src, Expected: expected(k)}
	}
	if x := checkValue(k, v, src, writtenAs(raw)); x != nil {
		x.Key = key
		return nil, x
	}
	return v, nil
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
