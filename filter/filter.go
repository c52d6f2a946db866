// Package filter is the one grammar, parser and matcher of the admin
// queries' filter (admin.Query.Filter): the console checks an operator's `/`
// text with it, the coordinator answers queries with it (coord and
// coord/broker), and any client may match rows with it. docs/PROTOCOL.md §13
// states the same grammar for clients in other languages.
//
// A filter is a list of terms separated by white space; a row must match
// every term:
//
//	example.com/docs       free text: a case-insensitive substring of one of the row's text columns
//	state=failed           field=value: the row's field equals the value (case-insensitive)
//	state=failed,backoff   any of several values
//	host=example.com       a host or any subdomain of it (with or without the port)
//	kind=job.              an event kind that begins with the value
//	wait=polite,paused     why a job waits (admin.Waits)
//
// The fields, and what each matches in each view, are listed by Fields. A
// term on a field the row does not have (kind= on a job) matches nothing.
//
// The package is pure (no I/O): the coordinator's core imports it.
package filter

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Field names a filter field.
type Field string

// The fields a term may name.
const (
	FieldState     Field = "state"     // jobs: requested, queued, dispatched, backoff, done, failed; workers: idle, busy, draining, lost
	FieldHost      Field = "host"      // the host of a job's or event's URL, or a worker's machine; subdomains match
	FieldWorker    Field = "worker"    // the worker id (the worker running a job, an event's worker, or the worker row)
	FieldCrawler   Field = "crawler"   // a job's crawler name
	FieldProcessor Field = "processor" // a job's processor name
	FieldKind      Field = "kind"      // an event's kind, by prefix
	FieldKey       Field = "key"       // a job's or event's key fingerprint (32 hex digits)
	FieldWait      Field = "wait"      // why a job waits: a word of admin.Waits (unroutable, polite, ...)
)

// Fields lists the field names a term may use, in the order the grammar
// documents them.
var Fields = []Field{FieldState, FieldHost, FieldWorker, FieldCrawler, FieldProcessor, FieldKind, FieldKey, FieldWait}

// MaxLen is the longest filter text a query may carry, in bytes.
const MaxLen = 1024

// Term is one condition of a filter.
type Term struct {
	// Field is one of Fields, or empty for free text.
	Field Field
	// Values are the alternatives for a field term (any may match), or the
	// one text of a free-text term; lower-cased.
	Values []string
}

// Filter is a parsed filter: every term must match. The zero Filter is the
// empty filter, which matches every row.
type Filter struct {
	Terms []Term
}

// Parse parses a filter text. An empty text is the empty filter.
func Parse(s string) (Filter, error) {
	if len(s) > MaxLen {
		return Filter{}, fmt.Errorf("filter of %d bytes: want at most %d", len(s), MaxLen)
	}
	if !utf8.ValidString(s) {
		return Filter{}, fmt.Errorf("filter %q: not UTF-8", s)
	}
	var f Filter
	for _, tok := range strings.Fields(s) {
		name, value, isField := strings.Cut(tok, "=")
		if !isField {
			f.Terms = append(f.Terms, Term{Values: []string{strings.ToLower(tok)}})
			continue
		}
		field := Field(strings.ToLower(name))
		if field == "" {
			return Filter{}, fmt.Errorf("filter term %q: no field before '=', want field=value with a field of %s", tok, fieldList())
		}
		if !slices.Contains(Fields, field) {
			return Filter{}, fmt.Errorf("filter term %q: unknown field %q, want one of %s", tok, name, fieldList())
		}
		var values []string
		for v := range strings.SplitSeq(value, ",") {
			if v = strings.ToLower(strings.TrimSpace(v)); v != "" && !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			return Filter{}, fmt.Errorf("filter term %q: no value after '=', want e.g. %s=%s", tok, field, example(field))
		}
		f.Terms = append(f.Terms, Term{Field: field, Values: values})
	}
	return f, nil
}

func fieldList() string {
	names := make([]string, len(Fields))
	for i, f := range Fields {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

func example(f Field) string {
	switch f {
	case FieldState:
		return "failed"
	case FieldHost:
		return "example.com"
	case FieldKind:
		return "job.done"
	case FieldWait:
		return "polite"
	}
	return "NAME"
}

// String renders the filter in canonical form (lower case, one space
// between terms); Parse(f.String()) gives f back.
func (f Filter) String() string {
	parts := make([]string, len(f.Terms))
	for i, t := range f.Terms {
		if t.Field == "" {
			parts[i] = t.Values[0]
		} else {
			parts[i] = string(t.Field) + "=" + strings.Join(t.Values, ",")
		}
	}
	return strings.Join(parts, " ")
}

// Empty reports whether the filter matches every row.
func (f Filter) Empty() bool { return len(f.Terms) == 0 }

// Values returns the values of the first term on a field, or nil when no
// term names it.
func (f Filter) Values(name Field) []string {
	for _, t := range f.Terms {
		if t.Field == name {
			return t.Values
		}
	}
	return nil
}

// Has reports whether some term names the field.
func (f Filter) Has(name Field) bool { return f.Values(name) != nil }

// Without returns the filter without the terms on the given fields (the
// empty field name drops free text).
func (f Filter) Without(names ...Field) Filter {
	var out Filter
	for _, t := range f.Terms {
		if !slices.Contains(names, t.Field) {
			out.Terms = append(out.Terms, t)
		}
	}
	return out
}

// Only returns the filter's terms on the given fields.
func (f Filter) Only(names ...Field) Filter {
	var out Filter
	for _, t := range f.Terms {
		if slices.Contains(names, t.Field) {
			out.Terms = append(out.Terms, t)
		}
	}
	return out
}

// Narrows reports whether every row f matches is matched by wider: each of
// wider's terms is implied by one of f's (a longer free text containing
// it, or the same field with a subset of its values). A cache of rows
// matching wider may then be filtered down for f.
func (f Filter) Narrows(wider Filter) bool {
	for _, w := range wider.Terms {
		implied := slices.ContainsFunc(f.Terms, func(t Term) bool {
			if t.Field != w.Field {
				return false
			}
			if t.Field == "" {
				return strings.Contains(t.Values[0], w.Values[0])
			}
			for _, v := range t.Values {
				if !slices.Contains(w.Values, v) {
					return false
				}
			}
			return true
		})
		if !implied {
			return false
		}
	}
	return true
}

// Match reports whether a row matches every term: field returns the row's
// value of a field, with ok false when the row has no such field (the term
// then fails), and text lists the row's free-text columns (a free-text term
// matches when any of them contains it).
func (f Filter) Match(field func(Field) (string, bool), text ...string) bool {
	for _, t := range f.Terms {
		if t.Field == "" {
			if !slices.ContainsFunc(text, func(s string) bool { return ContainsFold(s, t.Values[0]) }) {
				return false
			}
			continue
		}
		v, ok := field(t.Field)
		if !ok || !t.MatchValue(v) {
			return false
		}
	}
	return true
}

// MatchValue reports whether a row's value of the term's field matches one
// of the term's values: host= also takes subdomains and ignores the row's
// port when the value has none, kind= takes prefixes, every other field
// compares whole values ignoring case. A free-text term compares the value
// as text.
func (t Term) MatchValue(v string) bool {
	switch t.Field {
	case "":
		return ContainsFold(v, t.Values[0])
	case FieldHost:
		return slices.ContainsFunc(t.Values, func(want string) bool { return HostMatch(v, want) })
	case FieldKind:
		return slices.ContainsFunc(t.Values, func(want string) bool {
			return len(v) >= len(want) && strings.EqualFold(v[:len(want)], want)
		})
	}
	return slices.ContainsFunc(t.Values, func(want string) bool { return strings.EqualFold(v, want) })
}

// HostMatch reports whether host (as a URL carries it, "name" or
// "name:port") is want or a subdomain of it: host=example.com takes
// example.com, www.example.com and example.com:8080, not badexample.com;
// host=example.com:8080 takes that port only.
func HostMatch(host, want string) bool {
	if want == "" {
		return false
	}
	if hostname(want) == want { // no port in the value: compare names
		host = hostname(host)
	}
	if len(host) < len(want) || !strings.EqualFold(host[len(host)-len(want):], want) {
		return false
	}
	return len(host) == len(want) || host[len(host)-len(want)-1] == '.'
}

// hostname drops the port of "name:port" or "[v6]:port".
func hostname(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return h[:i+1]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		return h[:i]
	}
	return h
}

// ContainsFold reports whether s contains sub, ignoring case; sub is lower
// case (as Parse leaves every value). It does not allocate when s holds no
// upper-case or non-ASCII letter.
func ContainsFold(s, sub string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return strings.Contains(strings.ToLower(s), sub)
		}
	}
	return strings.Contains(s, sub)
}
