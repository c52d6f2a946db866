package crawl

import (
	"fmt"
	"io"
	"net/url"
	"strings"
)

// maxCSSBytes is how much of a style sheet ExtractCSSLinks reads.
const maxCSSBytes = 4 << 20

// ExtractCSSLinks reads a style sheet fetched from sheetURL and returns the
// URLs it references (url() values and @import strings), resolved,
// normalised and each once, in order. It reads at most 4 MiB.
func ExtractCSSLinks(sheetURL *url.URL, r io.Reader) ([]string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxCSSBytes))
	refs := appendCSSURLs(nil, string(b))
	links := resolveLinks(sheetURL, nil, refs)
	if err != nil {
		return links, fmt.Errorf("reading css of %s: %w", sheetURL, err)
	}
	return links, nil
}

// appendCSSURLs appends the references in CSS text: the argument of every
// url(...) (quoted or not) and the string of every @import "...". Comments
// are skipped; other strings are skipped whole, so a "url(" inside one is
// not taken.
func appendCSSURLs(dst []string, css string) []string {
	for i := 0; i < len(css); {
		c := css[i]
		switch {
		case c == '/' && i+1 < len(css) && css[i+1] == '*':
			end := strings.Index(css[i+2:], "*/")
			if end < 0 {
				return dst
			}
			i += end + 4
		case c == '"' || c == '\'':
			_, n := cssString(css[i:])
			i += n
		case (c == 'u' || c == 'U') && i+4 <= len(css) && strings.EqualFold(css[i:i+4], "url(") &&
			(i == 0 || !isIdentChar(css[i-1])):
			v, n := cssURL(css[i+4:])
			if v != "" {
				dst = append(dst, v)
			}
			i += 4 + n
		case c == '@' && i+7 <= len(css) && strings.EqualFold(css[i:i+7], "@import"):
			j := i + 7
			for j < len(css) && isCSSSpace(css[j]) {
				j++
			}
			if j < len(css) && (css[j] == '"' || css[j] == '\'') {
				v, n := cssString(css[j:])
				if v != "" {
					dst = append(dst, v)
				}
				j += n
			}
			i = j
		default:
			i++
		}
	}
	return dst
}

// cssString reads a quoted string at the start of s and returns its value
// (escapes of the quote and backslash undone) and the bytes it took.
func cssString(s string) (string, int) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == q:
			return b.String(), i + 1
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
		case c == '\n':
			return "", i // an unterminated string ends at the line
		default:
			b.WriteByte(c)
		}
	}
	return "", len(s)
}

// cssURL reads the argument of url( from the start of s (just after the
// parenthesis) and returns it and the bytes taken, through the ")".
func cssURL(s string) (string, int) {
	i := 0
	for i < len(s) && isCSSSpace(s[i]) {
		i++
	}
	var v string
	if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		var n int
		v, n = cssString(s[i:])
		i += n
	} else {
		start := i
		for i < len(s) && s[i] != ')' && !isCSSSpace(s[i]) {
			i++
		}
		v = s[start:i]
	}
	end := strings.IndexByte(s[i:], ')')
	if end < 0 {
		return strings.TrimSpace(v), len(s)
	}
	return strings.TrimSpace(v), i + end + 1
}

func isCSSSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isIdentChar(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
