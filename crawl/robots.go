package crawl

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"time"
)

// robotsMaxBytes is how much of a robots.txt is parsed; RFC 9309 asks
// crawlers to parse at least 500 KiB.
const robotsMaxBytes = 512 << 10

// maxRobotsSitemaps bounds the Sitemap: lines kept from one robots.txt.
const maxRobotsSitemaps = 50

// Robots is the part of one robots.txt that applies to one product token:
// the rules of the groups naming it (or of the "*" groups when none does)
// and their Crawl-delay. The zero value allows everything.
type Robots struct {
	rules []robotsRule
	// CrawlDelay is the group's Crawl-delay (0 when absent). It is not in
	// RFC 9309 but is widely used; fractional seconds are accepted.
	CrawlDelay time.Duration
	// Sitemaps are the values of the file's Sitemap: lines (they belong to
	// no group), as written.
	Sitemaps []string
}

// robotsRule is one allow or disallow line.
type robotsRule struct {
	allow   bool
	pattern string // percent-encoding normalised, see encodePattern
}

// robotsGroup is one group while parsing: its user-agent lines and rules.
type robotsGroup struct {
	agents     []string // lower-case
	rules      []robotsRule
	crawlDelay time.Duration
	hasDelay   bool
}

// ParseRobots parses a robots.txt body (RFC 9309) for the crawler whose
// product token is token, e.g. "drover". Groups are consecutive
// user-agent lines followed by their rules; the groups whose user-agent
// matches the token case-insensitively are merged, and when there are none
// the "*" groups are. Unknown lines, comments, rules outside any group and
// lines past 512 KiB are ignored, so any input parses.
func ParseRobots(body []byte, token string) *Robots {
	if len(body) > robotsMaxBytes {
		body = body[:robotsMaxBytes]
	}
	token = strings.ToLower(token)
	var groups []*robotsGroup
	var sitemaps []string
	var cur *robotsGroup
	inAgents := false // the previous meaningful line was a user-agent line
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), robotsMaxBytes+1)
	sc.Split(scanRobotsLines)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		switch key {
		case "user-agent", "useragent", "user agent":
			if !inAgents || cur == nil {
				cur = &robotsGroup{}
				groups = append(groups, cur)
			}
			inAgents = true
			cur.agents = append(cur.agents, agentName(value))
		case "allow", "disallow":
			inAgents = false
			if cur == nil || value == "" { // an empty rule matches nothing
				continue
			}
			cur.rules = append(cur.rules, robotsRule{allow: key == "allow", pattern: encodePattern(value)})
		case "crawl-delay":
			inAgents = false
			if cur == nil {
				continue
			}
			if s, err := strconv.ParseFloat(value, 64); err == nil && s >= 0 && s < 1e6 {
				cur.crawlDelay = time.Duration(s * float64(time.Second))
				cur.hasDelay = true
			}
		case "sitemap":
			if value != "" && len(sitemaps) < maxRobotsSitemaps {
				sitemaps = append(sitemaps, value)
			}
		default:
			// sitemap and unknown keys belong to no group and do not
			// end a run of user-agent lines (as Google's parser does).
		}
	}
	r := &Robots{Sitemaps: sitemaps}
	matched := false
	for _, pass := range [2]string{token, "*"} {
		for _, g := range groups {
			for _, a := range g.agents {
				if a == pass {
					matched = true
					r.rules = append(r.rules, g.rules...)
					if g.hasDelay && g.crawlDelay > r.CrawlDelay {
						r.CrawlDelay = g.crawlDelay
					}
					break
				}
			}
		}
		if matched {
			break
		}
	}
	return r
}

// scanRobotsLines splits on LF, CR or CRLF.
func scanRobotsLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	for i, c := range data {
		switch c {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil // need to see whether LF follows
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// agentName is the product token of a user-agent line's value, lower-case:
// the leading run of letters, "_" and "-" ("Googlebot/2.1" gives
// "googlebot"), or "*".
func agentName(v string) string {
	if strings.HasPrefix(v, "*") {
		return "*"
	}
	end := 0
	for end < len(v) {
		c := v[end]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			break
		}
		end++
	}
	return strings.ToLower(v[:end])
}

// Allowed reports whether the robots rules allow a URL path with its query
// ("/a/b?x=1"). The longest matching rule decides, allow winning a tie;
// with no matching rule the path is allowed. /robots.txt is always allowed.
func (r *Robots) Allowed(pathQuery string) bool {
	if r == nil {
		return true
	}
	if pathQuery == "" {
		pathQuery = "/"
	}
	if pathQuery == "/robots.txt" {
		return true
	}
	p := encodePattern(pathQuery)
	best, allow := -1, true
	for _, rule := range r.rules {
		if n := len(rule.pattern); n < best || (n == best && !rule.allow) {
			continue
		}
		if matchPattern(rule.pattern, p) {
			best, allow = len(rule.pattern), rule.allow
		}
	}
	return allow
}

// matchPattern reports whether pattern matches a prefix of path, where "*"
// matches any run of characters and a final "$" anchors at path's end.
// It tracks the set of path positions the pattern so far can end at, so
// it takes O(len(pattern) * len(path)) at worst and never backtracks.
func matchPattern(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	star := strings.IndexByte(pattern, '*')
	if star < 0 { // no wildcard: a plain prefix (or, anchored, the whole path)
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	// The literal part before the first "*" must be a prefix: most rules
	// fail here, before any position tracking.
	if !strings.HasPrefix(path, pattern[:star]) {
		return false
	}
	pattern, path = pattern[star:], path[star:]
	pos := make([]bool, len(path)+1) // pos[i]: the pattern so far can end before path[i]
	pos[0] = true
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		alive := false
		if c == '*' {
			seen := false
			for j := range pos {
				seen = seen || pos[j]
				pos[j] = seen
				alive = alive || seen
			}
		} else {
			for j := len(path); j >= 1; j-- {
				pos[j] = pos[j-1] && path[j-1] == c
				alive = alive || pos[j]
			}
			pos[0] = false
		}
		if !alive {
			return false
		}
	}
	if anchored {
		return pos[len(path)]
	}
	return true
}

// encodePattern percent-encodes octets outside printable US-ASCII and
// upper-cases the hex digits of existing escapes, so that a rule and a
// path spelled differently still compare (RFC 9309 section 2.2.2).
func encodePattern(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte('%')
			b.WriteByte(upperHex(s[i+1]))
			b.WriteByte(upperHex(s[i+2]))
			i += 2
		case c <= ' ' || c >= 0x7f:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func upperHex(c byte) byte {
	if c >= 'a' && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}
