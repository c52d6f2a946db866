package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
	"strings"
	"time"
	"unicode/utf8"

	"drover/coord/id"
)

// strKind is the character set a string field allows.
type strKind uint8

const (
	kText  strKind = iota // any valid UTF-8
	kLine                 // valid UTF-8 without control characters
	kToken                // ASCII letters, digits and . _ : -
)

// reader walks one body twice with the same per-command code: a first pass
// (fill false) that validates everything and counts what must be allocated,
// and a second pass (fill true) that builds the message with one allocation
// per kind of thing (strings, headers, links) instead of one per field.
type reader struct {
	b    []byte
	off  int
	req  uint64
	cmd  Command
	err  *Error
	fill bool
	item int // index of the record being read, -1 outside records
	link int // index of the link being read, -1 outside links

	// Totals of the first pass.
	strBytes int
	nHeaders int
	nLinks   int

	// The previous key's crawler and processor (reader.name).
	crawler, processor sameName

	// Storage for the second pass.
	arena strings.Builder
	hdrs  []Header
	links []SubmitItem
}

func newReader(b []byte, cmd Command, req uint64) reader {
	return reader{b: b, cmd: cmd, req: req, item: -1, link: -1}
}

// prepareFill allocates what the first pass counted and rewinds.
func (r *reader) prepareFill() {
	r.off, r.fill, r.item, r.link = 0, true, -1, -1
	if r.strBytes > 0 {
		r.arena.Grow(r.strBytes)
	}
	if r.nHeaders > 0 {
		r.hdrs = make([]Header, r.nHeaders)
	}
	if r.nLinks > 0 {
		r.links = make([]SubmitItem, r.nLinks)
	}
}

// fail records the first error, naming the command, record and field, and
// stops the walk.
func (r *reader) fail(code Code, field, format string, args ...any) {
	if r.err != nil {
		return
	}
	var where strings.Builder
	where.WriteString(r.cmd.String())
	if r.item >= 0 {
		fmt.Fprintf(&where, " item %d", r.item)
	}
	if r.link >= 0 {
		fmt.Fprintf(&where, " link %d", r.link)
	}
	if field != "" {
		where.WriteString(" ")
		where.WriteString(field)
	}
	r.err = &Error{Req: r.req, Code: code, Msg: where.String() + ": " + fmt.Sprintf(format, args...)}
	r.off = len(r.b)
}

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.left() {
		r.fail(CodeMalformed, field, "truncated: need %d bytes at offset %d, %d left", n, r.off, r.left())
		return nil
	}
	p := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return p
}

func (r *reader) u8(field string) uint8 {
	p := r.take(1, field)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *reader) u16(field string) uint16 {
	p := r.take(2, field)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

func (r *reader) u32(field string) uint32 {
	p := r.take(4, field)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

func (r *reader) u64(field string) uint64 {
	p := r.take(8, field)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

// jobID reads a u64 that must not be zero.
func (r *reader) jobID(field string) uint64 {
	v := r.u64(field)
	if v == 0 && r.err == nil {
		r.fail(CodeMalformed, field, "0, want a job id of at least 1")
	}
	return v
}

// ms reads a u32 count of milliseconds.
func (r *reader) ms(field string) time.Duration {
	return time.Duration(r.u32(field)) * time.Millisecond
}

// enum reads a u8 and checks it against valid.
func (r *reader) enum(field string, valid func(uint8) bool, names []string) uint8 {
	v := r.u8(field)
	if r.err == nil && !valid(v) {
		r.fail(CodeMalformed, field, "value %d, want one of %s", v, enumList(names))
	}
	return v
}

func enumList(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d (%s)", i, n)
	}
	return b.String()
}

// rawStr reads a u16-length string, checks its length and characters on the
// first pass, and returns its bytes (aliasing the body).
func (r *reader) rawStr(field string, kind strKind, min, max int) []byte {
	n := int(r.u16(field))
	if r.err != nil {
		return nil
	}
	if n > max {
		r.fail(CodeTooLarge, field, "%d bytes, want at most %d", n, max)
		return nil
	}
	if n < min {
		r.fail(CodeMalformed, field, "%d bytes, want at least %d", n, min)
		return nil
	}
	p := r.take(n, field)
	if r.err != nil || r.fill {
		return p
	}
	if why := checkKind(p, kind); why != "" {
		r.fail(CodeMalformed, field, "%s", why)
		return nil
	}
	r.strBytes += n
	return p
}

// str is rawStr turned into a string: nothing on the first pass, a slice of
// the message's one string allocation on the second.
func (r *reader) str(field string, kind strKind, min, max int) string {
	p := r.rawStr(field, kind, min, max)
	if !r.fill || len(p) == 0 {
		return ""
	}
	start := r.arena.Len()
	r.arena.Write(p)
	return r.arena.String()[start:]
}

func checkKind(p []byte, kind strKind) string {
	switch kind {
	case kToken:
		for i, c := range p {
			if !isTokenByte(c) {
				return fmt.Sprintf("byte %d is %q, want letters, digits and . _ : -", i, c)
			}
		}
		return ""
	case kLine:
		// Eight bytes at a time while they are printable ASCII (the
		// common case: URLs and names), then byte by byte from the first
		// word that is not.
		i := 0
		for ; i+8 <= len(p); i += 8 {
			if !printableASCII8(binary.LittleEndian.Uint64(p[i:])) {
				break
			}
		}
		for i < len(p) {
			c := p[i]
			if c < utf8.RuneSelf {
				if c < 0x20 || c == 0x7f {
					return fmt.Sprintf("control character %q at byte %d, want printable text", c, i)
				}
				i++
				continue
			}
			ru, size := utf8.DecodeRune(p[i:])
			if ru == utf8.RuneError && size <= 1 {
				return fmt.Sprintf("invalid UTF-8 at byte %d", i)
			}
			if ru >= 0x80 && ru <= 0x9f {
				return fmt.Sprintf("control character U+%04X at byte %d, want printable text", ru, i)
			}
			i += size
		}
		return ""
	default:
		if !utf8.Valid(p) {
			return "invalid UTF-8"
		}
		return ""
	}
}

// printableASCII8 reports whether each of the eight bytes packed in w is
// in 0x20..0x7e: no byte has its top bit set, none is below 0x20 and none
// is 0x7f (SWAR tests: a byte below n borrows in b-n, and b^0x7f is zero
// only for 0x7f).
func printableASCII8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below20 := (w - 0x20*ones) &^ w
	x := w ^ 0x7f*ones
	is7f := (x - ones) &^ x
	return (w|below20|is7f)&highs == 0
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == ':' || c == '-'
}

// blob reads a u32-length byte string. The result aliases the body (capacity
// capped at its length) and is nil when empty.
func (r *reader) blob(field string, max int) []byte {
	n := r.u32(field)
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(max) {
		r.fail(CodeTooLarge, field, "%d bytes, want at most %d", n, max)
		return nil
	}
	p := r.take(int(n), field)
	if len(p) == 0 {
		return nil
	}
	return p
}

// count reads a u32 record count and checks it against [min, max] and
// against the bytes left (each record needs at least minSize), so a lying
// count is caught before anything is allocated for it.
func (r *reader) count(field string, min, max, minSize int) int {
	n := r.u32(field)
	if r.err != nil {
		return 0
	}
	if uint64(n) > uint64(max) {
		r.fail(CodeTooLarge, field, "%d, want at most %d", n, max)
		return 0
	}
	if int(n) < min {
		r.fail(CodeMalformed, field, "%d, want at least %d", n, min)
		return 0
	}
	if need := uint64(n) * uint64(minSize); need > uint64(r.left()) {
		r.fail(CodeMalformed, field, "%d records need at least %d bytes, %d left", n, need, r.left())
		return 0
	}
	return int(n)
}

// items walks a batch of n items: it yields where each decodes, with
// r.item naming it in r's errors. On the second pass (r fills) those are
// the elements of a new *out; on the first, one scratch item, checked and
// dropped (*out is left alone).
func items[T any](r *reader, out *[]T, n int) iter.Seq[*T] {
	return func(yield func(*T) bool) {
		var scratch T
		if r.fill {
			*out = make([]T, n)
		}
		for i := range n {
			r.item = i
			it := &scratch
			if r.fill {
				it = &(*out)[i]
			}
			if !yield(it) {
				break
			}
		}
		r.item = -1
	}
}

func (r *reader) fingerprint(field string) id.Fingerprint {
	var f id.Fingerprint
	copy(f[:], r.take(len(f), field))
	return f
}

// Minimum encoded sizes, for count checks.
const (
	minKey     = 2 + 2 + 2 + 1 // crawler, processor, url of one byte
	minHeaders = 2
	minSubmit  = minKey + minHeaders + 4
)

// key reads a key. The keys of a batch mostly name one crawler and one
// processor: a name the same as the previous key's (in the same field) is
// checked on the first pass as any other, but the message keeps one copy
// of it, which every such key shares.
func (r *reader) key(k *id.Key) {
	k.Crawler = r.name("crawler", &r.crawler)
	k.Processor = r.name("processor", &r.processor)
	k.URL = r.str("url", kLine, 1, MaxURL)
}

// name reads a crawler or processor name; last is the one the previous
// key of the message had (its bytes on the first pass, its string on the
// second).
func (r *reader) name(field string, last *sameName) string {
	p := r.rawStr(field, kLine, 0, MaxName)
	if r.err != nil || len(p) == 0 {
		return ""
	}
	if !r.fill {
		if last.raw != nil && string(last.raw) == string(p) {
			r.strBytes -= len(p) // rawStr counted it: not copied again
		}
		last.raw = p
		return ""
	}
	if last.s == string(p) {
		return last.s
	}
	first := r.arena.Len()
	r.arena.Write(p)
	last.s = r.arena.String()[first:]
	return last.s
}

// sameName is the last crawler or processor name a reader met.
type sameName struct {
	raw []byte // first pass
	s   string // second pass
}

// headers reads a u16 count and that many name/value pairs; names are
// tokens and unique within the list.
func (r *reader) headers() Headers {
	n := int(r.u16("header count"))
	if r.err != nil {
		return nil
	}
	if n > MaxHeaders {
		r.fail(CodeTooLarge, "header count", "%d, want at most %d", n, MaxHeaders)
		return nil
	}
	if need := n * 5; need > r.left() {
		r.fail(CodeMalformed, "header count", "%d headers need at least %d bytes, %d left", n, need, r.left())
		return nil
	}
	if r.fill {
		if n == 0 {
			return nil
		}
		h := r.hdrs[:n:n]
		r.hdrs = r.hdrs[n:]
		for i := range h {
			h[i].Name = r.str("header name", kToken, 1, MaxHeaderName)
			h[i].Value = r.str("header value", kLine, 0, MaxHeaderValue)
		}
		return h
	}
	if n > smallHeaders {
		if r.longHeaderNames(n) {
			r.nHeaders += n
		}
		return nil
	}
	// Few names: compare pairwise, on the stack.
	var small [smallHeaders][]byte
	names := small[:0]
	for range n {
		name := r.rawStr("header name", kToken, 1, MaxHeaderName)
		r.rawStr("header value", kLine, 0, MaxHeaderValue)
		if r.err != nil {
			return nil
		}
		for _, seen := range names {
			if bytes.Equal(seen, name) {
				r.fail(CodeMalformed, "header name", "%q appears twice, want unique names", name)
				return nil
			}
		}
		names = append(names, name)
	}
	r.nHeaders += n
	return nil
}

const smallHeaders = 8

// longHeaderNames validates a list of more than smallHeaders headers, with
// a small open-addressing hash set for the duplicate check, so that a body
// full of 64-header lists costs linear time. It reports success.
func (r *reader) longHeaderNames(n int) bool {
	var names [MaxHeaders][]byte
	var set [2 * MaxHeaders]uint8 // 1 + index into names; 0 is empty
	for i := range n {
		name := r.rawStr("header name", kToken, 1, MaxHeaderName)
		r.rawStr("header value", kLine, 0, MaxHeaderValue)
		if r.err != nil {
			return false
		}
		h := uint32(2166136261) // FNV-1a
		for _, c := range name {
			h = (h ^ uint32(c)) * 16777619
		}
		slot := h % uint32(len(set))
		for set[slot] != 0 {
			if bytes.Equal(names[set[slot]-1], name) {
				r.fail(CodeMalformed, "header name", "%q appears twice, want unique names", name)
				return false
			}
			slot = (slot + 1) % uint32(len(set))
		}
		set[slot] = uint8(i + 1)
		names[i] = name
	}
	return true
}

// runs reads a count (at most max) and that many runs, each a job id
// (at least 1) and an attempt (at least 1), as the ids of HELLO's held
// list, WELCOME's cancel list and CANCEL.
func (r *reader) runs(countField, field string, max int) ([]Run, int) {
	n := r.count(countField, 0, max, 12)
	if r.err != nil || n == 0 {
		return nil, 0
	}
	var out []Run
	if r.fill {
		out = make([]Run, n)
	}
	for i := range n {
		v := r.jobID(field)
		a := r.attempt(field + " attempt")
		if out != nil {
			out[i] = Run{JobID: v, Attempt: a}
		}
	}
	return out, n
}

// attempt reads a u32 attempt number, which is at least 1.
func (r *reader) attempt(field string) uint32 {
	v := r.u32(field)
	if v == 0 && r.err == nil {
		r.fail(CodeMalformed, field, "0, want an attempt of at least 1")
	}
	return v
}

// submitItem reads one submit record (a SUBMIT job or a RESULT link).
func (r *reader) submitItem(s *SubmitItem) {
	r.key(&s.Key)
	s.Headers = r.headers()
	s.Payload = r.blob("payload", MaxPayload)
}

// end checks that the body was consumed exactly.
func (r *reader) end() {
	if r.err == nil && r.off != len(r.b) {
		r.item, r.link = -1, -1
		r.fail(CodeMalformed, "body", "%d trailing bytes after the last field", len(r.b)-r.off)
	}
}
