package crawl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrNotHTTP is wrapped by Normalize and Parse for a URL that is not an
// absolute http or https URL with a host.
var ErrNotHTTP = errors.New("not an absolute http(s) URL")

// Parse parses an absolute http or https URL and normalises it in place:
// scheme and host lower-case, the scheme's default port dropped, an empty
// path made "/", dot segments resolved, and the fragment dropped. Two
// spellings of one page ("HTTP://Example.COM:80/a/./b#x" and
// "http://example.com/a/b") give the same URL.
func Parse(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", raw, err)
	}
	if err := normalize(u); err != nil {
		return nil, fmt.Errorf("url %q: %w", raw, err)
	}
	return u, nil
}

// Normalize returns the normal form of an absolute http(s) URL (see Parse).
func Normalize(raw string) (string, error) {
	u, err := Parse(raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// normalize brings a parsed URL to normal form, or says why it cannot.
func normalize(u *url.URL) error {
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "" {
			return fmt.Errorf("%w: no scheme, want http or https", ErrNotHTTP)
		}
		return fmt.Errorf("%w: scheme %q, want http or https", ErrNotHTTP, u.Scheme)
	}
	if u.Opaque != "" {
		return fmt.Errorf("%w: opaque %s: URL, want %s://host/path", ErrNotHTTP, u.Scheme, u.Scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return fmt.Errorf("%w: no host", ErrNotHTTP)
	}
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	// Resolving an absolute URL (against itself) removes its "." and ".."
	// segments (RFC 3986 section 5.2.4) and keeps the path's escaping.
	*u = *u.ResolveReference(u)
	if u.Path == "" {
		u.Path, u.RawPath = "/", ""
	}
	return nil
}
