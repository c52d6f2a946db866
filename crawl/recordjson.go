package crawl

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends the record as one line of JSON without the newline:
// the same document encoding/json makes of it with HTML escaping off (& <
// > kept readable in URLs and titles), which TestRecordAppendJSON checks,
// at a fraction of the cost (every crawled page is encoded once).
func (r Record) AppendJSON(b []byte) []byte {
	if b == nil {
		b = make([]byte, 0, 256+len(r.URL)+len(r.FinalURL)+len(r.Title)+len(r.Error))
	}
	b = append(b, `{"url":`...)
	b = appendJSONString(b, r.URL)
	b = append(b, `,"final_url":`...)
	b = appendJSONString(b, r.FinalURL)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"content_type":`...)
	b = appendJSONString(b, r.ContentType)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, r.Title)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(r.Depth), 10)
	if r.Parent != "" {
		b = append(b, `,"parent":`...)
		b = appendJSONString(b, r.Parent)
	}
	b = append(b, `,"links_out":`...)
	b = strconv.AppendInt(b, int64(r.LinksOut), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, r.Bytes, 10)
	b = append(b, `,"fetch_ms":`...)
	b = appendJSONFloat(b, r.FetchMS)
	b = append(b, `,"worker":`...)
	b = appendJSONString(b, r.Worker)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(r.Attempt), 10)
	b = append(b, `,"fetched_at":"`...)
	b = r.FetchedAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","outcome":`...)
	b = appendJSONString(b, string(r.Outcome))
	if r.Disallowed {
		b = append(b, `,"disallowed":true`...)
	}
	if r.Refused {
		b = append(b, `,"refused":true`...)
	}
	if r.Canonical != "" {
		b = append(b, `,"canonical":`...)
		b = appendJSONString(b, r.Canonical)
	}
	if r.NoIndex {
		b = append(b, `,"noindex":true`...)
	}
	if r.NoFollow {
		b = append(b, `,"nofollow":true`...)
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, r.Error)
	}
	if r.WARCFile != "" {
		b = append(b, `,"warc_file":`...)
		b = appendJSONString(b, r.WARCFile)
	}
	if r.WARCOffset != 0 {
		b = append(b, `,"warc_offset":`...)
		b = strconv.AppendInt(b, r.WARCOffset, 10)
	}
	if r.WARCResponseOffset != 0 {
		b = append(b, `,"warc_response_offset":`...)
		b = strconv.AppendInt(b, r.WARCResponseOffset, 10)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json does
// with HTML escaping off: quote, backslash and control characters escaped,
// invalid UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONFloat appends f as encoding/json does (ES6 number format);
// NaN and infinities, which JSON cannot hold, become 0.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
