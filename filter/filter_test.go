package filter

import (
	"strings"
	"testing"

	"drover/admin"
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
		{"state=failed,FAILED", "state=failed", ""},
		{"Kind=job.", "kind=job.", ""},
		{"colour=red", "", `unknown field "colour"`},
		{strings.Repeat("x", MaxLen+1), "", "want at most"},
		{"=x", "", "no field"},
		{"\xff", "", "not UTF-8"},
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
	row := map[Field]string{FieldState: "failed", FieldHost: "docs.example.com:8080", FieldWorker: "W-1", FieldKind: "job.done"}
	get := func(n Field) (string, bool) { v, ok := row[n]; return v, ok }
	text := []string{"https://docs.example.com:8080/Guide", "second column"}
	tests := []struct {
		filter string
		want   bool
	}{
		{"", true},
		{"guide", true},
		{"GUIDE docs", true},
		{"second guide", true}, // each term in any column
		{"missing", false},
		{"state=failed", true},
		{"state=done", false},
		{"state=done,failed", true},
		{"host=example.com", true},           // subdomain, port ignored
		{"host=docs.example.com", true},      // exact name
		{"host=docs.example.com:8080", true}, // exact with port
		{"host=docs.example.com:9090", false},
		{"host=ample.com", false}, // not a label boundary
		{"host=com", true},
		{"worker=w-1 state=failed guide", true},
		{"worker=w-2 state=failed", false},
		{"worker=w", false}, // whole values only
		{"kind=job.", true},
		{"kind=job.done", true},
		{"kind=job.failed", false},
		{"crawler=c1", false}, // the row has no crawler
	}
	for _, tc := range tests {
		f, err := Parse(tc.filter)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.filter, err)
		}
		if got := f.Match(get, text...); got != tc.want {
			t.Errorf("%q matches = %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestHostMatch(t *testing.T) {
	for _, tc := range []struct {
		host, want string
		ok         bool
	}{
		{"example.test", "example.test", true},
		{"www.example.test", "example.test", true},
		{"WWW.Example.Test", "example.test", true},
		{"badexample.test", "example.test", false},
		{"example.test:8080", "example.test", true},
		{"example.test:8080", "example.test:8080", true},
		{"example.test", "example.test:8080", false},
		{"[::1]:8080", "[::1]", true},
		{"127.0.0.1:5570", "127.0.0.1", true},
		{"example.test", "", false},
	} {
		if got := HostMatch(tc.host, tc.want); got != tc.ok {
			t.Errorf("HostMatch(%q, %q) = %v, want %v", tc.host, tc.want, got, tc.ok)
		}
	}
}

func TestNarrows(t *testing.T) {
	for _, tc := range []struct {
		f, wider string
		ok       bool
	}{
		{"/12", "/1", true},
		{"/1", "/12", false},
		{"/1 a.test", "/1", true},
		{"crawler=c1", "crawler=c1,c2", true},
		{"crawler=c1,c2", "crawler=c1", false},
		{"crawler=c1 /1", "crawler=c1", true},
		{"crawler=c1", "processor=p", false},
		{"x", "", true},
	} {
		f, _ := Parse(tc.f)
		w, _ := Parse(tc.wider)
		if got := f.Narrows(w); got != tc.ok {
			t.Errorf("%q narrows %q = %v, want %v", tc.f, tc.wider, got, tc.ok)
		}
	}
}

func TestValuesAndEmpty(t *testing.T) {
	f, _ := Parse("x state=failed,backoff")
	if got := f.Values(FieldState); strings.Join(got, ",") != "failed,backoff" {
		t.Errorf("Values(state) = %v", got)
	}
	if f.Has(FieldHost) {
		t.Error("Has(host) on a filter without host")
	}
	if f.Empty() {
		t.Error("non-empty filter reported empty")
	}
	if e, _ := Parse(""); !e.Empty() {
		t.Error("empty filter not empty")
	}
	if got := f.Without(FieldState).String(); got != "x" {
		t.Errorf("Without(state) = %q", got)
	}
	if got := f.Only(FieldState).String(); got != "state=failed,backoff" {
		t.Errorf("Only(state) = %q", got)
	}
}

// FuzzParse: any text parses or is refused with an error, and what parses
// renders to a canonical form that parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "state=failed host=a.test x", "=x", "kind=job.,worker.", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		if len(p.String()) > MaxLen {
			return // lower case can be longer than the text (İ is two bytes, i̇ three)
		}
		again, err := Parse(p.String())
		if err != nil || again.String() != p.String() {
			t.Fatalf("%q: canonical %q parses to %q, %v", s, p.String(), again.String(), err)
		}
	})
}

// A job row's wait word is a field of its own: whole words, any of
// several, and a row that does not wait matches no wait= term.
func TestJobWait(t *testing.T) {
	polite := &admin.JobRow{URL: "http://a.test/", State: "queued", Wait: admin.WaitPolite}
	running := &admin.JobRow{URL: "http://a.test/", State: "dispatched"}
	for _, tc := range []struct {
		filter          string
		polite, running bool
	}{
		{"wait=polite", true, false},
		{"wait=POLITE", true, false},
		{"wait=paused,polite state=queued", true, false},
		{"wait=pol", false, false},
		{"wait=unroutable", false, false},
		{"state=dispatched", false, true},
	} {
		f, err := Parse(tc.filter)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.filter, err)
		}
		if got := f.Job(polite); got != tc.polite {
			t.Errorf("%q on a polite job = %v, want %v", tc.filter, got, tc.polite)
		}
		if got := f.Job(running); got != tc.running {
			t.Errorf("%q on a running job = %v, want %v", tc.filter, got, tc.running)
		}
	}
}
