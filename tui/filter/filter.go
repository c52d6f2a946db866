// Package filter is the grammar of the console's `/` filter, which the
// console checks before sending it as admin.Query.Filter and which a
// coordinator can use to match rows the same way.
//
// A filter is a list of terms separated by spaces, all of which must match:
//
//	example.com/docs          free text: a case-insensitive substring of the row's main column (URL, worker id, event kind)
//	state=failed              field=value: the field equals the value (case-insensitive)
//	state=failed,backoff      any of several values
//	host=example.com          a URL's or worker's host, or any subdomain of it
//	worker=w-12               the worker id (a job's worker, or the worker row itself)
//
// The package has no dependencies, so the coordinator can import it.
package filter

import (
	"fmt"
	"slices"
	"strings"
)

// Fields lists the field names a term may use.
var Fields = []string{"state", "host", "worker", "crawler", "processor", "kind", "key"}

// Term is one condition of a filter.
type Term struct {
	// Field is one of Fields, or empty for free text.
	Field string
	// Values are the alternatives for a field term (any may match), or the
	// one text of a free-text term; lower-cased.
	Values []string
}

// Filter is a parsed filter: every term must match.
type Filter struct {
	Terms []Term
}

// Parse parses the filter text. An empty text is the empty filter, which
// matches everything.
func Parse(s string) (Filter, error) {
	var f Filter
	for _, tok := range strings.Fields(s) {
		field, value, isField := strings.Cut(tok, "=")
		if !isField {
			f.Terms = append(f.Terms, Term{Values: []string{strings.ToLower(tok)}})
			continue
		}
		field = strings.ToLower(field)
		if field == "" {
			return Filter{}, fmt.Errorf("filter term %q: no field before '=', want field=value with a field of %s", tok, strings.Join(Fields, ", "))
		}
		if !slices.Contains(Fields, field) {
			return Filter{}, fmt.Errorf("filter term %q: unknown field %q, want one of %s", tok, field, strings.Join(Fields, ", "))
		}
		var values []string
		for _, v := range strings.Split(value, ",") {
			if v = strings.ToLower(strings.TrimSpace(v)); v != "" {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			return Filter{}, fmt.Errorf("filter term %q: no value after '=', want e.g. %s=failed", tok, field)
		}
		f.Terms = append(f.Terms, Term{Field: field, Values: values})
	}
	return f, nil
}

// String renders the filter in canonical form (lower case, one space
// between terms); Parse(f.String()) gives f back.
func (f Filter) String() string {
	parts := make([]string, len(f.Terms))
	for i, t := range f.Terms {
		if t.Field == "" {
			parts[i] = t.Values[0]
		} else {
			parts[i] = t.Field + "=" + strings.Join(t.Values, ",")
		}
	}
	return strings.Join(parts, " ")
}

// Empty reports whether the filter matches everything.
func (f Filter) Empty() bool { return len(f.Terms) == 0 }

// Field returns the values of the first term on a field, or nil.
func (f Filter) Field(name string) []string {
	for _, t := range f.Terms {
		if t.Field == name {
			return t.Values
		}
	}
	return nil
}

// Match reports whether a row matches: main is the row's main column (for
// free text) and field returns the row's value of a field name, with ok
// false when the row has no such field (the term then fails).
func (f Filter) Match(main string, field func(name string) (string, bool)) bool {
	lowerMain := ""
	for _, t := range f.Terms {
		if t.Field == "" {
			if lowerMain == "" {
				lowerMain = strings.ToLower(main)
			}
			if !strings.Contains(lowerMain, t.Values[0]) {
				return false
			}
			continue
		}
		v, ok := field(t.Field)
		if !ok {
			return false
		}
		v = strings.ToLower(v)
		hit := false
		for _, want := range t.Values {
			if v == want || (t.Field == "host" && strings.HasSuffix(v, "."+want)) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}
