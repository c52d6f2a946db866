package filter

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in    string
		canon string
		err   string
	}{
		{"", "", ""},
		{"   ", "", ""},
		{"Example.com", "example.com", ""},
		{"state=failed", "state=failed", ""},
		{"STATE=Failed,backoff  host=example.com docs", "state=failed,backoff host=example.com docs", ""},
		{"worker=w-1", "worker=w-1", ""},
		{"state=failed,,", "state=failed", ""},
		{"colour=red", "", `unknown field "colour"`},
		{"=x", "", "no field"},
		{"state=", "", "no value"},
		{"state=,", "", "no value"},
	}
	for _, tc := range tests {
		f, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := f.String(); got != tc.canon {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.canon)
		}
		again, err := Parse(f.String())
		if err != nil || again.String() != f.String() {
			t.Errorf("round trip of %q: %q, %v", tc.in, again.String(), err)
		}
	}
}

func TestMatch(t *testing.T) {
	row := map[string]string{"state": "failed", "host": "docs.example.com", "worker": "w-1"}
	get := func(n string) (string, bool) { v, ok := row[n]; return v, ok }
	main := "https://docs.example.com/Guide"
	tests := []struct {
		filter string
		want   bool
	}{
		{"", true},
		{"guide", true},
		{"GUIDE docs", true},
		{"missing", false},
		{"state=failed", true},
		{"state=done", false},
		{"state=done,failed", true},
		{"host=example.com", true},      // subdomain
		{"host=docs.example.com", true}, // exact
		{"host=ample.com", false},       // not a label boundary
		{"worker=w-1 state=failed guide", true},
		{"worker=w-2 state=failed", false},
		{"kind=job.done", false}, // the row has no kind
	}
	for _, tc := range tests {
		f, err := Parse(tc.filter)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.filter, err)
		}
		if got := f.Match(main, get); got != tc.want {
			t.Errorf("%q matches = %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestFieldAndEmpty(t *testing.T) {
	f, _ := Parse("x state=failed,backoff")
	if got := f.Field("state"); strings.Join(got, ",") != "failed,backoff" {
		t.Errorf("Field(state) = %v", got)
	}
	if f.Field("host") != nil {
		t.Error("Field(host) should be nil")
	}
	if f.Empty() {
		t.Error("non-empty filter reported empty")
	}
	if e, _ := Parse(""); !e.Empty() {
		t.Error("empty filter not empty")
	}
}
