// Package redact hides the secrets in values shown to people: configuration
// listings, error messages and logs.
package redact

import "strings"

// URLPassword returns raw with the password of a scheme://user:password@...
// URL replaced by mask, and whether it had one; otherwise raw as it is. It
// needs no valid URL, so it serves one that did not parse too.
func URLPassword(raw, mask string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, false
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw, false
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw, false
	}
	return scheme + "://" + user + ":" + mask + "@" + rest[at+1:], true
}
