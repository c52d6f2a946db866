package id

import (
	"strconv"
	"strings"
)

// URLError reports a URL that Normalize refused: which URL (shortened when
// very long), and what was wrong with it and what was expected.
type URLError struct {
	URL    string // the raw URL, cut to at most 200 bytes
	Reason string // what was wrong and what was expected
}

// Error renders the refusal as `url "...": reason`.
func (e *URLError) Error() string { return "url " + strconv.Quote(e.URL) + ": " + e.Reason }

func urlErr(raw, reason string) error {
	const max = 200
	if len(raw) > max {
		raw = raw[:max] + "..."
	}
	return &URLError{URL: raw, Reason: reason}
}

// NewKey builds the work key of (crawler, processor, rawURL), normalising the
// URL first so that two spellings of one page are one key.
func NewKey(crawler, processor, rawURL string) (Key, error) {
	u, err := Normalize(rawURL)
	if err != nil {
		return Key{}, err
	}
	return Key{Crawler: crawler, Processor: processor, URL: u}, nil
}

// Host returns the host[:port] part of a URL produced by Normalize (IPv6
// literals keep their brackets, userinfo is left out), the unit of per-host
// back-off. It returns "" for a string that has no "scheme://" prefix.
// The store's job values leave out a host equal to Host of the URL and
// recompute it when read, so Host's output for a given string is part of
// the store format (store.TestHostIsPartOfTheFormat pins it): do not
// change it without a new job value version.
func Host(normalizedURL string) string {
	i := strings.Index(normalizedURL, "://")
	if i < 0 {
		return ""
	}
	rest := normalizedURL[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	return rest
}

// Normalize returns the RFC 3986 §6 normal form of an absolute http or https
// URL, so that equivalent spellings of one resource compare equal:
//
//   - scheme and host are lower-cased; the port is dropped when it is the
//     scheme's default (80 for http, 443 for https) or empty, and written
//     without leading zeros otherwise;
//   - IPv6 literal hosts stay in brackets, in the RFC 5952 text form
//     (lower-case, zeros compressed); a zone ("%25eth0") is kept as given;
//   - an empty path becomes "/", and dot segments are resolved (§5.2.4);
//   - percent-encoding is normalised in path, query and host: escapes of
//     unreserved characters are decoded, other escapes use upper-case hex, and
//     bytes that may not appear in a URI (space, non-ASCII, `"<>\^{|}` and
//     the like) are percent-encoded, as a browser does before sending;
//   - the fragment is dropped;
//   - the query is otherwise kept as is (parameter order matters to servers),
//     and so is the userinfo.
//
// It refuses, with a *URLError naming the URL and what was expected: other
// schemes, relative references, a missing host, a bad port (not decimal, 0
// or above 65535), control characters, invalid percent escapes, characters a
// host or userinfo may not contain, and malformed IPv6 literals. Host names
// are compared as given after ASCII lower-casing: give internationalised
// names in their ASCII (punycode) form to have them match across spellings.
func Normalize(raw string) (string, error) {
	if isPlainNormal(raw) {
		return raw, nil // the common case, settled in one pass over the bytes
	}
	return normalize(raw)
}

// normalize is Normalize without the fast path: every rule, step by step.
func normalize(raw string) (string, error) {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x20 || c == 0x7f {
			return "", urlErr(raw, "control character "+strconv.QuoteRune(rune(c))+" at byte "+strconv.Itoa(i)+"; want none")
		}
	}
	s := raw
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i] // the fragment never reaches the server
	}

	scheme, rest, err := splitScheme(raw, s)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(rest, "//") {
		return "", urlErr(raw, "missing host; want "+scheme+"://host/...")
	}
	rest = rest[2:]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	path, query, hasQuery := tail, "", false
	if q := strings.IndexByte(tail, '?'); q >= 0 {
		path, query, hasQuery = tail[:q], tail[q+1:], true
	}

	var buf [256]byte // most URLs: no allocation unless the result differs
	b := buf[:0]
	b = append(b, scheme...)
	b = append(b, "://"...)
	if b, err = appendAuthority(b, raw, scheme, authority); err != nil {
		return "", err
	}
	if b, err = appendPath(b, raw, path); err != nil {
		return "", err
	}
	if hasQuery {
		b = append(b, '?')
		if b, err = appendEscaped(b, raw, "query", query, isQueryChar); err != nil {
			return "", err
		}
	}
	if string(b) == raw {
		return raw, nil // already normal: share the caller's string
	}
	return string(b), nil
}

// Byte classes of isPlainNormal: which bytes may stand as they are in the
// host, path and query of a URL in normal form that needs no closer look.
const (
	plainHost  = 1 << iota // lower-case letters, digits, '-', '.', '_', '~'
	plainPath              // pchar and '/', without '%' (RFC 3986 §3.3)
	plainQuery             // path bytes and '?'
)

var plainClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if isUnreserved(b) && !('A' <= b && b <= 'Z') {
			t[c] |= plainHost
		}
		if isPathChar(b) {
			t[c] |= plainPath
		}
		if isQueryChar(b) {
			t[c] |= plainQuery
		}
	}
	return t
}()

// isPlainNormal reports whether raw is, without a doubt, already in the
// normal form Normalize gives: "http://" or "https://" in lower case, a host
// of lower-case letters, digits and -._~ with no port nor userinfo, a path
// (not empty) and query of bytes that stand for themselves, with no percent
// escape, no dot segment and no fragment. Such a URL is its own normal form
// (a test checks this against the full rules); anything else (which may
// well be normal too) takes the full way.
func isPlainNormal(raw string) bool {
	var rest string
	switch {
	case len(raw) > 7 && raw[:7] == "http://":
		rest = raw[7:]
	case len(raw) > 8 && raw[:8] == "https://":
		rest = raw[8:]
	default:
		return false
	}
	i := 0
	for i < len(rest) && plainClass[rest[i]]&plainHost != 0 {
		i++
	}
	if i == 0 || i == len(rest) || rest[i] != '/' {
		return false // no host, no path, or a port, userinfo, IPv6 host, ...
	}
	prev := byte(0)
	for ; i < len(rest); i++ {
		c := rest[i]
		if plainClass[c]&plainPath == 0 {
			if c != '?' {
				return false
			}
			break
		}
		if c == '.' && prev == '/' {
			return false // a dot segment, maybe: the full way resolves it
		}
		prev = c
	}
	for ; i < len(rest); i++ {
		if plainClass[rest[i]]&plainQuery == 0 {
			return false
		}
	}
	return true
}

// splitScheme parses "scheme:" at the start of s and checks it is http or
// https; it returns the lower-cased scheme and what follows the colon.
func splitScheme(raw, s string) (scheme, rest string, err error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isAlpha(c):
		case i > 0 && (isDigit(c) || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			scheme = strings.ToLower(s[:i])
			if scheme != "http" && scheme != "https" {
				return "", "", urlErr(raw, "scheme "+strconv.Quote(scheme)+" is not supported; want http or https")
			}
			return scheme, s[i+1:], nil
		default:
			return "", "", urlErr(raw, "no scheme; want an absolute http:// or https:// URL")
		}
	}
	return "", "", urlErr(raw, "no scheme; want an absolute http:// or https:// URL")
}

// appendAuthority appends [userinfo@]host[:port] in normal form.
func appendAuthority(b []byte, raw, scheme, authority string) ([]byte, error) {
	hostport := authority
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo := authority[:at]
		hostport = authority[at+1:]
		if err := checkUserinfo(raw, userinfo); err != nil {
			return nil, err
		}
		b = append(b, userinfo...)
		b = append(b, '@')
	}
	var host, port string
	var err error
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return nil, urlErr(raw, "IPv6 host has no closing ']'; want [address]")
		}
		host, port = hostport[:end+1], hostport[end+1:]
		if port != "" && port[0] != ':' {
			return nil, urlErr(raw, "unexpected "+strconv.Quote(port)+" after the IPv6 host; want :port or nothing")
		}
		b, err = appendIPv6(b, raw, host[1:end])
	} else {
		host, port = hostport, ""
		if c := strings.IndexByte(hostport, ':'); c >= 0 {
			host, port = hostport[:c], hostport[c:]
		}
		b, err = appendRegName(b, raw, host)
	}
	if err != nil {
		return nil, err
	}
	return appendPort(b, raw, scheme, port)
}

// checkUserinfo accepts RFC 3986 userinfo: unreserved, sub-delims, ':' and
// valid percent escapes. It is kept byte for byte.
func checkUserinfo(raw, userinfo string) error {
	for i := 0; i < len(userinfo); i++ {
		c := userinfo[i]
		switch {
		case c == '%':
			if i+2 >= len(userinfo) || !isHex(userinfo[i+1]) || !isHex(userinfo[i+2]) {
				return urlErr(raw, "invalid percent escape in userinfo; want %XX with two hex digits")
			}
			i += 2
		case isUnreserved(c) || isSubDelim(c) || c == ':':
		default:
			return urlErr(raw, "userinfo contains "+strconv.QuoteRune(rune(c))+"; want letters, digits, -._~!$&'()*+,;=: or %XX")
		}
	}
	return nil
}

// appendRegName appends a registered name (or IPv4 address) lower-cased,
// with percent-encoding normalised. Escaped ASCII that is not unreserved is
// refused: such a host can only be a mistake.
func appendRegName(b []byte, raw, host string) ([]byte, error) {
	if host == "" {
		return nil, urlErr(raw, "missing host; want scheme://host/...")
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case c == '%':
			v, ok := unhex2(host, i)
			if !ok {
				return nil, urlErr(raw, "invalid percent escape in host; want %XX with two hex digits")
			}
			i += 2
			switch {
			case isUnreserved(v):
				b = append(b, lower(v))
			case v >= 0x80:
				b = appendPct(b, v)
			default:
				return nil, urlErr(raw, "host contains escaped "+strconv.QuoteRune(rune(v))+"; want a host name")
			}
		case isUnreserved(c) || isSubDelim(c):
			b = append(b, lower(c))
		case c >= 0x80:
			b = appendPct(b, c)
		default:
			return nil, urlErr(raw, "host contains "+strconv.QuoteRune(rune(c))+"; want letters, digits, '-', '.' or an IPv6 address in brackets")
		}
	}
	return b, nil
}

// appendPort appends ":port" unless it is empty or the scheme's default.
// port is "" or starts with ':'.
func appendPort(b []byte, raw, scheme, port string) ([]byte, error) {
	if port == "" {
		return b, nil
	}
	digits := port[1:]
	if digits == "" {
		return b, nil // "host:" means the default port (RFC 3986 §6.2.3)
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if !isDigit(c) {
			return nil, urlErr(raw, "port "+strconv.Quote(digits)+" is not a number; want 1-65535")
		}
		n = n*10 + int(c-'0')
		if n > 65535 {
			return nil, urlErr(raw, "port "+strconv.Quote(digits)+" is out of range; want 1-65535")
		}
	}
	if n == 0 {
		return nil, urlErr(raw, "port 0 is not a valid port; want 1-65535")
	}
	if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
		return b, nil
	}
	b = append(b, ':')
	return strconv.AppendInt(b, int64(n), 10), nil
}

// appendPath appends the path with percent-encoding normalised and dot
// segments removed; an empty path becomes "/".
func appendPath(b []byte, raw, path string) ([]byte, error) {
	if path == "" {
		return append(b, '/'), nil
	}
	start := len(b)
	b, err := appendEscaped(b, raw, "path", path, isPathChar)
	if err != nil {
		return nil, err
	}
	// Dot segments are resolved after decoding, so "%2E%2E" counts as "..".
	// The path starts with '/', so the result is never shorter than "/".
	seg := removeDotSegments(string(b[start:]))
	return append(b[:start], seg...), nil
}

// appendEscaped appends s with percent-encoding normalised: escapes of
// unreserved characters decoded, other escapes in upper-case hex, bytes for
// which allowed is false percent-encoded. part names the component in errors.
func appendEscaped(b []byte, raw, part, s string, allowed func(byte) bool) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			v, ok := unhex2(s, i)
			if !ok {
				end := min(i+3, len(s))
				return nil, urlErr(raw, "invalid percent escape "+strconv.Quote(s[i:end])+" in "+part+"; want %XX with two hex digits")
			}
			i += 2
			if isUnreserved(v) {
				b = append(b, v)
			} else {
				b = appendPct(b, v)
			}
		case allowed(c):
			b = append(b, c)
		default:
			b = appendPct(b, c)
		}
	}
	return b, nil
}

// removeDotSegments is RFC 3986 §5.2.4 for a path that starts with '/'.
func removeDotSegments(in string) string {
	if !strings.Contains(in, "/.") {
		return in // fast path: no segment can be "." or ".."
	}
	out := make([]byte, 0, len(in))
	for in != "" {
		switch {
		case strings.HasPrefix(in, "/./"):
			in = in[2:]
		case in == "/.":
			in = "/"
		case strings.HasPrefix(in, "/../"):
			in = in[3:]
			out = out[:lastSlash(out)]
		case in == "/..":
			in = "/"
			out = out[:lastSlash(out)]
		case in == "." || in == "..":
			in = ""
		default:
			// Move the first segment, with its leading '/', to the output.
			j := strings.IndexByte(in[1:], '/')
			if j < 0 {
				j = len(in)
			} else {
				j++
			}
			out = append(out, in[:j]...)
			in = in[j:]
		}
	}
	return string(out)
}

func lastSlash(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '/' {
			return i
		}
	}
	return 0
}

const upperHex = "0123456789ABCDEF"

func appendPct(b []byte, c byte) []byte {
	return append(b, '%', upperHex[c>>4], upperHex[c&15])
}

// unhex2 decodes the escape "%XX" at s[i].
func unhex2(s string, i int) (byte, bool) {
	if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
		return 0, false
	}
	return unhex(s[i+1])<<4 | unhex(s[i+2]), true
}

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isUnreserved: ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 §2.3).
func isUnreserved(c byte) bool {
	return isAlpha(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~'
}

// isSubDelim: "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "=".
func isSubDelim(c byte) bool {
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=':
		return true
	}
	return false
}

// isPathChar: pchar or "/" (RFC 3986 §3.3), '%' excluded (handled apart).
func isPathChar(c byte) bool {
	return isUnreserved(c) || isSubDelim(c) || c == ':' || c == '@' || c == '/'
}

// isQueryChar: pchar, "/" or "?" (RFC 3986 §3.4), '%' excluded.
func isQueryChar(c byte) bool { return isPathChar(c) || c == '?' }

// appendIPv6 appends "[address]" for the text inside the brackets of an IPv6
// literal host, in RFC 5952 form, with its zone (RFC 6874 "%25zone") kept.
func appendIPv6(b []byte, raw, lit string) ([]byte, error) {
	addr, zone, hasZone := lit, "", false
	if i := strings.IndexByte(lit, '%'); i >= 0 {
		if !strings.HasPrefix(lit[i:], "%25") {
			return nil, urlErr(raw, "IPv6 zone must be introduced by %25; want [address%25zone]")
		}
		addr, zone, hasZone = lit[:i], lit[i+3:], true
		if zone == "" {
			return nil, urlErr(raw, "empty IPv6 zone; want [address%25zone]")
		}
		for j := 0; j < len(zone); j++ {
			c := zone[j]
			if c == '%' {
				if _, ok := unhex2(zone, j); !ok {
					return nil, urlErr(raw, "invalid percent escape in IPv6 zone; want %XX with two hex digits")
				}
				j += 2
			} else if !isUnreserved(c) {
				return nil, urlErr(raw, "IPv6 zone contains "+strconv.QuoteRune(rune(c))+"; want letters, digits, -._~ or %XX")
			}
		}
	}
	ip, ok := parseIPv6(addr)
	if !ok {
		return nil, urlErr(raw, "host ["+addr+"] is not an IPv6 address; want [IPv6 address] (RFC 4291)")
	}
	b = append(b, '[')
	b = appendIPv6Text(b, ip)
	if hasZone {
		b = append(b, "%25"...)
		b = append(b, zone...)
	}
	return append(b, ']'), nil
}

// parseIPv6 parses the RFC 4291 text forms of an IPv6 address: eight groups
// of one to four hex digits, at most one "::" standing for one or more zero
// groups, and optionally a dotted IPv4 address as the last 32 bits.
func parseIPv6(s string) (ip [16]byte, ok bool) {
	ellipsis := -1 // byte offset in ip where "::" stands
	if strings.HasPrefix(s, "::") {
		ellipsis, s = 0, s[2:]
	}
	i := 0
	for i < 16 && s != "" {
		n, c := 0, 0
		for c < len(s) && c < 5 && isHex(s[c]) {
			n = n<<4 | int(unhex(s[c]))
			c++
		}
		if c == 0 || c > 4 {
			return ip, false
		}
		if c < len(s) && s[c] == '.' {
			// A dotted IPv4 tail: only in the last 32 bits.
			if i > 12 || (ellipsis < 0 && i != 12) {
				return ip, false
			}
			v4, ok := parseIPv4(s)
			if !ok {
				return ip, false
			}
			copy(ip[i:], v4[:])
			i += 4
			s = ""
			break
		}
		ip[i], ip[i+1] = byte(n>>8), byte(n)
		i += 2
		s = s[c:]
		if s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return ip, false
		}
		s = s[1:]
		if s[0] == ':' {
			if ellipsis >= 0 {
				return ip, false
			}
			ellipsis, s = i, s[1:]
		}
	}
	if s != "" {
		return ip, false
	}
	if i < 16 {
		if ellipsis < 0 {
			return ip, false
		}
		gap := 16 - i
		copy(ip[ellipsis+gap:], ip[ellipsis:i])
		for j := ellipsis; j < ellipsis+gap; j++ {
			ip[j] = 0
		}
	} else if ellipsis >= 0 {
		return ip, false // "::" must stand for at least one group
	}
	return ip, true
}

// parseIPv4 parses four decimal octets without leading zeros.
func parseIPv4(s string) (v4 [4]byte, ok bool) {
	for k := 0; k < 4; k++ {
		if k > 0 {
			if s == "" || s[0] != '.' {
				return v4, false
			}
			s = s[1:]
		}
		n, c := 0, 0
		for c < len(s) && isDigit(s[c]) {
			n = n*10 + int(s[c]-'0')
			c++
			if n > 255 || (c == 2 && s[0] == '0') {
				return v4, false
			}
		}
		if c == 0 {
			return v4, false
		}
		v4[k] = byte(n)
		s = s[c:]
	}
	return v4, s == ""
}

// appendIPv6Text writes ip in the RFC 5952 recommended form: lower-case hex,
// no leading zeros, the longest run (first on a tie) of two or more zero
// groups as "::", and IPv4-mapped addresses as ::ffff:a.b.c.d.
func appendIPv6Text(b []byte, ip [16]byte) []byte {
	mapped := ip[10] == 0xff && ip[11] == 0xff
	for _, x := range ip[:10] {
		mapped = mapped && x == 0
	}
	if mapped {
		b = append(b, "::ffff:"...)
		for k, x := range ip[12:] {
			if k > 0 {
				b = append(b, '.')
			}
			b = strconv.AppendUint(b, uint64(x), 10)
		}
		return b
	}
	group := func(g int) uint64 { return uint64(ip[2*g])<<8 | uint64(ip[2*g+1]) }
	best, bestLen := -1, 1
	for g := 0; g < 8; {
		if group(g) != 0 {
			g++
			continue
		}
		h := g
		for h < 8 && group(h) == 0 {
			h++
		}
		if h-g > bestLen {
			best, bestLen = g, h-g
		}
		g = h
	}
	for g := 0; g < 8; g++ {
		if g == best {
			b = append(b, ':', ':')
			g += bestLen - 1
			continue
		}
		if g > 0 && g != best+bestLen {
			b = append(b, ':')
		}
		b = strconv.AppendUint(b, group(g), 16)
	}
	return b
}
