package config

import (
	"fmt"
	"sort"
	"strings"
)

// SourceKind says which layer a value came from.
type SourceKind int

// The layers, lowest precedence first.
const (
	FromDefault SourceKind = iota
	FromFile
	FromEnv
	FromFlag
)

// Source is where one value came from.
type Source struct {
	Kind SourceKind
	// Name is the file (with :LINE when known), the environment variable,
	// or the flag with its dashes; empty for a default.
	Name string
}

// String renders the source for messages: "default",
// "file /etc/drover/drover.yaml:12", "env DROVER_X", "flag --x".
func (s Source) String() string {
	switch s.Kind {
	case FromFile:
		return "file " + s.Name
	case FromEnv:
		return "env " + s.Name
	case FromFlag:
		return "flag " + s.Name
	}
	return "default"
}

// ErrorKind classifies a configuration error.
type ErrorKind int

// The classes of configuration error.
const (
	ErrFile     ErrorKind = iota + 1 // the config file is missing, unreadable or malformed
	ErrUnknown                       // a key (or DROVER_ variable) that does not exist
	ErrType                          // a value that is not of the key's type
	ErrRange                         // a value of the right type outside what the key allows
	ErrConflict                      // values that cannot go together
)

// String names the class.
func (k ErrorKind) String() string {
	switch k {
	case ErrFile:
		return "file"
	case ErrUnknown:
		return "unknown key"
	case ErrType:
		return "wrong type"
	case ErrRange:
		return "out of range"
	case ErrConflict:
		return "conflict"
	}
	return fmt.Sprintf("error(%d)", int(k))
}

// Error is one configuration problem.
type Error struct {
	Kind     ErrorKind
	Key      string // the dotted key name; for a conflict, the keys joined by " and "
	Value    string // the offending value as written; empty for ErrFile
	Source   Source // where the value came from
	Expected string // what a valid value is, or what went wrong for ErrFile
	Hint     string // e.g. "did you mean heartbeat.interval?"
}

// Error renders one line naming the key, the value, its source and what
// was expected.
func (e *Error) Error() string {
	var b strings.Builder
	switch e.Kind {
	case ErrFile:
		fmt.Fprintf(&b, "%s: %s", e.Source, e.Expected)
	case ErrUnknown:
		fmt.Fprintf(&b, "unknown key %s (%s)", e.Key, e.Source)
		if e.Expected != "" {
			fmt.Fprintf(&b, ": %s", e.Expected)
		}
	case ErrConflict:
		fmt.Fprintf(&b, "%s conflict: %s; expected %s", e.Key, e.Value, e.Expected)
	default:
		fmt.Fprintf(&b, "%s = %q (%s): %s, expected %s", e.Key, e.Value, e.Source, e.Kind, e.Expected)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	return b.String()
}

// Errors is every problem found in one load, reported together. The
// command line exits with status 2 when Load returns one.
type Errors struct {
	List []*Error
}

// Error lists every problem, one per line.
func (e *Errors) Error() string {
	if len(e.List) == 1 {
		return "invalid configuration: " + e.List[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration, %d problems:", len(e.List))
	for _, x := range e.List {
		b.WriteString("\n  - ")
		b.WriteString(x.Error())
	}
	return b.String()
}

// Unwrap returns the individual errors, for errors.Is and errors.As.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, x := range e.List {
		out[i] = x
	}
	return out
}

// Of returns the errors of one class.
func (e *Errors) Of(kind ErrorKind) []*Error {
	var out []*Error
	for _, x := range e.List {
		if x.Kind == kind {
			out = append(out, x)
		}
	}
	return out
}

func (e *Errors) add(x *Error) { e.List = append(e.List, x) }

// err returns e as an error, or nil when it holds none.
func (e *Errors) err() error {
	if len(e.List) == 0 {
		return nil
	}
	return e
}

// suggest returns the candidate nearest to name by edit distance, if it is
// near enough to be a plausible typo.
func suggest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(name, c)
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	limit := len(name) / 3
	if limit < 2 {
		limit = 2
	}
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// keyNames returns every schema key name, sorted.
func keyNames() []string {
	out := make([]string, len(schema))
	for i, k := range schema {
		out[i] = k.Name
	}
	sort.Strings(out)
	return out
}
