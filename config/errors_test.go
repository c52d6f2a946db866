package config

import (
	"testing"
)

func TestSuggest(t *testing.T) {
	names := []string{"heartbeat.interval", "heartbeat.liveness", "store.sync", "store.path"}
	tests := []struct{ in, want string }{
		{"heartbeat.intervall", "heartbeat.interval"},
		{"hearbeat.liveness", "heartbeat.liveness"},
		{"store.synk", "store.sync"},
		{"completely.different", ""},
		{"x", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, names); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance(kitten, sitting) = %d, want 3", d)
	}
}

func TestErrorMessages(t *testing.T) {
	file := Source{Kind: FromFile, Name: "/etc/drover/drover.yaml:3"}
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: ErrFile, Source: Source{Kind: FromFlag, Name: "--config"}, Expected: "config file x: no such file"},
			"flag --config: config file x: no such file"},
		{&Error{Kind: ErrUnknown, Key: "heartbeat.intervall", Source: file, Hint: "did you mean heartbeat.interval?"},
			"unknown key heartbeat.intervall (file /etc/drover/drover.yaml:3); did you mean heartbeat.interval?"},
		{&Error{Kind: ErrType, Key: "heartbeat.liveness", Value: "three", Source: Source{Kind: FromEnv, Name: "DROVER_HEARTBEAT_LIVENESS"}, Expected: "an integer"},
			`heartbeat.liveness = "three" (env DROVER_HEARTBEAT_LIVENESS): wrong type, expected an integer`},
		{&Error{Kind: ErrRange, Key: "heartbeat.liveness", Value: "0", Source: file, Expected: "an integer from 1 to 100"},
			`heartbeat.liveness = "0" (file /etc/drover/drover.yaml:3): out of range, expected an integer from 1 to 100`},
		{&Error{Kind: ErrConflict, Key: "a and b", Value: "x and y", Expected: "z"},
			"a and b conflict: x and y; expected z"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
	one := &Errors{List: []*Error{tests[0].err}}
	if got := one.Error(); got != "invalid configuration: "+tests[0].want {
		t.Errorf("one error renders %q", got)
	}
	two := &Errors{List: []*Error{tests[0].err, tests[1].err}}
	if got := two.Error(); got != "invalid configuration, 2 problems:\n  - "+tests[0].want+"\n  - "+tests[1].want {
		t.Errorf("two errors render %q", got)
	}
	if len(two.Of(ErrUnknown)) != 1 || len(two.Of(ErrRange)) != 0 {
		t.Error("Of does not filter by class")
	}
	if (&Errors{}).err() != nil {
		t.Error("an empty Errors is an error")
	}
}
