package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"drover/internal/redisurl"
)

// Validate checks every value of c against its key's rule and the keys
// against each other, as Load does; it returns a *Errors listing every
// problem, or nil. Use it on a Config built or changed in code.
func (c *Config) Validate() error {
	var errs Errors
	for _, k := range schema {
		v, err := c.Get(k.Name)
		if err != nil {
			errs.add(&Error{Kind: ErrType, Key: k.Name, Source: c.Source(k.Name), Expected: err.Error()})
			continue
		}
		if x := checkValue(k, v, c.Source(k.Name), formatText(k, v)); x != nil {
			errs.add(x)
		}
	}
	checkConflicts(c, &errs, nil)
	return errs.err()
}

// checkValue checks a value of the right type against the key's rule, and
// the syntax of the text kinds (endpoints, URLs), whose values may come
// from Go code rather than parsing. raw is the value as written.
func checkValue(k Key, v any, src Source, raw string) *Error {
	if shown, hidden := Redacted(k, raw); hidden {
		raw = shown.(string)
	}
	bad := func(kind ErrorKind, expected string) *Error {
		return &Error{Kind: kind, Key: k.Name, Value: raw, Source: src, Expected: expected}
	}
	if msg := checkStore(k.Name, v); msg != "" {
		return bad(ErrType, msg)
	}
	switch k.Kind {
	case KindEnum:
		if !slices.Contains(k.Choices, v.(string)) {
			x := bad(ErrRange, k.Rule)
			if s := suggest(strings.ToLower(v.(string)), k.Choices); s != "" {
				x.Hint = "did you mean " + s + "?"
			}
			return x
		}
	case KindEndpoint:
		if err := checkEndpoint(v.(string)); err != nil {
			return bad(ErrType, expected(k)+" ("+err.Error()+")")
		}
	case KindHostPort:
		if err := checkHostPort(v.(string)); err != nil {
			return bad(ErrType, expected(k)+" ("+err.Error()+")")
		}
	case KindURL:
		if err := checkURL(v.(string)); err != nil {
			return bad(ErrType, expected(k)+" ("+err.Error()+")")
		}
	case KindStringMap:
		if k.Name == "console.palette" {
			if msg := checkPalette(v.(map[string]string)); msg != "" {
				return bad(ErrRange, msg)
			}
		}
	}
	if k.ok != nil && !k.ok(v) {
		return bad(ErrRange, k.Rule)
	}
	return nil
}

// checkStore returns what is wrong with a store.url, or a store.path that
// is a URL (serve --store redis://...), or "": a Redis Cluster URL that
// does not parse, or a store.path URL of another scheme. The message
// never shows a password.
func checkStore(key string, v any) string {
	s, _ := v.(string)
	switch {
	case key == "store.url" && s != "":
	case key == "store.path" && IsURL(s):
	default:
		return ""
	}
	if _, err := redisurl.Parse(s); err != nil {
		return "a Redis Cluster URL, redis://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...] or rediss://... (" + err.Error() + ")"
	}
	return ""
}

// IsURL reports whether a store.path is a URL (SCHEME://...) rather than
// a directory: serve takes a redis:// or rediss:// one as store.url.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, "/.")
}

var (
	roleName  = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	hexColour = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
)

// checkPalette returns what is wrong with a custom palette, or "".
func checkPalette(p map[string]string) string {
	var bad []string
	for role, colour := range p {
		if !roleName.MatchString(role) {
			bad = append(bad, fmt.Sprintf("role %q is not a lower-case name", role))
			continue
		}
		if hexColour.MatchString(colour) {
			continue
		}
		if n, err := strconv.Atoi(colour); err == nil && n >= 0 && n <= 255 {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s: %q is not #rgb, #rrggbb or 0-255", role, colour))
	}
	if len(bad) == 0 {
		return ""
	}
	sort.Strings(bad)
	return "colours as #rgb, #rrggbb or an ANSI number 0-255 (" + strings.Join(bad, "; ") + ")"
}

// checkConflicts adds an error for every set of values that cannot go
// together. Sets involving a key in failed are skipped: that key holds its
// default in place of the wrong value, which is already reported.
func checkConflicts(c *Config, errs *Errors, failed map[string]bool) {
	conflict := func(keys []string, value, expected string) {
		for _, k := range keys {
			if failed[k] {
				return
			}
		}
		srcs := make([]string, len(keys))
		for i, k := range keys {
			srcs[i] = k + " from " + c.Source(k).String()
		}
		errs.add(&Error{Kind: ErrConflict, Key: strings.Join(keys, " and "),
			Value: value + " (" + strings.Join(srcs, ", ") + ")", Expected: expected})
	}

	listeners := []struct {
		key  string
		kind Kind
		val  string
	}{
		{"peers.listen", KindEndpoint, c.Peers.Listen},
		{"admin.listen", KindEndpoint, c.Admin.Listen},
		{"events.listen", KindEndpoint, c.Events.Listen},
		{"metrics.listen", KindHostPort, c.Metrics.Listen},
	}
	for i := range listeners {
		a, ok := listenOf(listeners[i].kind, listeners[i].val)
		if !ok {
			continue
		}
		for j := i + 1; j < len(listeners); j++ {
			b, ok := listenOf(listeners[j].kind, listeners[j].val)
			if ok && a.collides(b) {
				conflict([]string{listeners[i].key, listeners[j].key},
					fmt.Sprintf("%q and %q bind the same address", listeners[i].val, listeners[j].val),
					"a different address for each listener")
			}
		}
	}
	if c.Store.Sync == SyncBatch && c.Store.SyncInterval == 0 {
		conflict([]string{"store.sync", "store.sync_interval"},
			"sync policy batch with an interval of 0s",
			"an interval > 0 for batch, or store.sync always or none")
	}
	if c.Backoff.Cap < c.Backoff.Start {
		conflict([]string{"backoff.start", "backoff.cap"},
			fmt.Sprintf("start %s is longer than cap %s", FormatDuration(c.Backoff.Start), FormatDuration(c.Backoff.Cap)),
			"backoff.cap >= backoff.start")
	}
	if c.Broker.RetryStart > 0 && c.Broker.RetryCap < c.Broker.RetryStart {
		conflict([]string{"broker.retry_start", "broker.retry_cap"},
			fmt.Sprintf("start %s is longer than cap %s", FormatDuration(c.Broker.RetryStart), FormatDuration(c.Broker.RetryCap)),
			"broker.retry_cap >= broker.retry_start")
	}
	if c.Crawl.ConnectTimeout > c.Crawl.Timeout {
		conflict([]string{"crawl.connect_timeout", "crawl.timeout"},
			fmt.Sprintf("connect timeout %s is longer than the fetch timeout %s",
				FormatDuration(c.Crawl.ConnectTimeout), FormatDuration(c.Crawl.Timeout)),
			"crawl.connect_timeout <= crawl.timeout")
	}
}
