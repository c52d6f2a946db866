package crawl

import (
	"fmt"
	"strings"

	"drover/coord/id"
)

// Scope says which discovered links belong to a crawl, relative to its seed.
type Scope string

// The scopes.
const (
	// ScopeHost allows URLs on the seed's host and port (any scheme):
	// the default.
	ScopeHost Scope = "host"
	// ScopeDomain allows URLs whose host is the seed's host without a
	// leading "www.", or a subdomain of it, on any port: a seed on
	// www.example.com allows example.com, www.example.com and
	// blog.example.com.
	ScopeDomain Scope = "domain"
	// ScopePrefix allows URLs that start with the seed's directory: a seed
	// http://h/docs/intro.html allows everything under http://h/docs/.
	ScopePrefix Scope = "prefix"
)

// ParseScope parses "host", "domain" or "prefix" (any case); empty means
// ScopeHost.
func ParseScope(s string) (Scope, error) {
	switch Scope(strings.ToLower(strings.TrimSpace(s))) {
	case "", ScopeHost:
		return ScopeHost, nil
	case ScopeDomain:
		return ScopeDomain, nil
	case ScopePrefix:
		return ScopePrefix, nil
	}
	return "", fmt.Errorf("scope %q: want host, domain or prefix", s)
}

// String returns the scope's name.
func (s Scope) String() string { return string(s) }

// Set parses a scope name, so that Scope can be a command-line flag value.
func (s *Scope) Set(v string) error {
	p, err := ParseScope(v)
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// Type names the flag value type for pflag.
func (s *Scope) Type() string { return "scope" }

// Allows reports whether candidate belongs to a crawl seeded at seed. Both
// are normalised first (see Normalize); a URL that is not http(s) is never
// allowed. An unknown scope is treated as ScopeHost, the narrowest.
func (s Scope) Allows(seed, candidate string) bool {
	ss, err := Normalize(seed)
	if err != nil {
		return false
	}
	cs, err := Normalize(candidate)
	if err != nil {
		return false
	}
	return s.allows(ss, cs)
}

// allows is Allows on URLs in normal form. It reads their hosts off the
// strings (id.Host) rather than parsing them: a crawl asks it for every
// link of every page.
func (s Scope) allows(seed, cand string) bool {
	switch s {
	case ScopeDomain:
		sh := hostname(id.Host(seed))
		base := strings.TrimPrefix(sh, "www.")
		h := hostname(id.Host(cand))
		return h == base || h == sh ||
			(isDomainName(base) && strings.HasSuffix(h, "."+base))
	case ScopePrefix:
		// The seed's directory: its normal form up to the last "/" before
		// any query ("http://h/docs/" for "http://h/docs/a?x=/").
		dir := seed
		if q := strings.IndexByte(dir, '?'); q >= 0 {
			dir = dir[:q]
		}
		dir = dir[:strings.LastIndexByte(dir, '/')+1]
		return strings.HasPrefix(cand, dir)
	default:
		return id.Host(cand) == id.Host(seed)
	}
}

// hostname is the host of a host[:port] as id.Host gives it, without the
// port and without an IPv6 literal's brackets (as url.URL.Hostname).
func hostname(hostport string) string {
	if strings.HasPrefix(hostport, "[") {
		if i := strings.IndexByte(hostport, ']'); i >= 0 {
			return hostport[1:i]
		}
	}
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		return hostport[:i]
	}
	return hostport
}

// isDomainName reports whether h is a name rather than an IP literal, so
// that "subdomain of" makes sense (1.2.3.4 has no subdomains).
func isDomainName(h string) bool {
	if strings.Contains(h, ":") {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && c != '.' {
			return true
		}
	}
	return false
}
