package crawl

import (
	"fmt"
	"net/url"
	"strings"

	"drover/coord/id"
)

// Normalize returns the normal form of an absolute http(s) URL, the form
// the coordinator keys work by (it is id.Normalize): scheme and host
// lower-case, the default port dropped, an empty path made "/", dot
// segments resolved, percent-encoding normalised and the fragment dropped,
// so "HTTP://Example.COM:80/a/./b#x" and "http://example.com/a/b" are one
// URL. Surrounding white space is ignored. A URL it refuses gives an
// *id.URLError saying what was wrong.
func Normalize(raw string) (string, error) {
	return id.Normalize(strings.TrimSpace(raw))
}

// Parse normalises raw (see Normalize) and returns both the normal form
// and its parsed URL.
func Parse(raw string) (string, *url.URL, error) {
	s, err := Normalize(raw)
	if err != nil {
		return "", nil, err
	}
	u, err := url.Parse(s)
	if err != nil { // id.Normalize's output is a valid URI; this is a bug guard, not a panic
		return "", nil, fmt.Errorf("url %q: normal form %q does not parse: %w", raw, s, err)
	}
	return s, u, nil
}
