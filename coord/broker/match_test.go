package broker

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		name        string
		job, worker map[string]string
		want        bool
	}{
		{"no headers match anyone", nil, nil, true},
		{"no headers match a worker with headers", nil, map[string]string{"os": "linux"}, true},
		{"equal value", map[string]string{"os": "linux"}, map[string]string{"os": "linux"}, true},
		{"different value", map[string]string{"os": "linux"}, map[string]string{"os": "bsd"}, false},
		{"header the worker lacks", map[string]string{"os": "linux"}, map[string]string{"hwgroup": "a"}, false},
		{"header the worker lacks, worker has none", map[string]string{"os": "linux"}, nil, false},
		{"threads below", map[string]string{"threads": "4"}, map[string]string{"threads": "8"}, true},
		{"threads equal", map[string]string{"threads": "8"}, map[string]string{"threads": "8"}, true},
		{"threads above", map[string]string{"threads": "16"}, map[string]string{"threads": "8"}, false},
		{"threads numeric not lexical", map[string]string{"threads": "9"}, map[string]string{"threads": "10"}, true},
		{"threads not a number in job", map[string]string{"threads": "many"}, map[string]string{"threads": "8"}, false},
		{"threads not a number in worker", map[string]string{"threads": "2"}, map[string]string{"threads": "x"}, false},
		{"threads missing on worker", map[string]string{"threads": "1"}, map[string]string{}, false},
		{"hwgroup single", map[string]string{"hwgroup": "gpu"}, map[string]string{"hwgroup": "gpu"}, true},
		{"hwgroup list first", map[string]string{"hwgroup": "a|b|c"}, map[string]string{"hwgroup": "a"}, true},
		{"hwgroup list last", map[string]string{"hwgroup": "a|b|c"}, map[string]string{"hwgroup": "c"}, true},
		{"hwgroup list none", map[string]string{"hwgroup": "a|b|c"}, map[string]string{"hwgroup": "d"}, false},
		{"hwgroup no substring match", map[string]string{"hwgroup": "gpu"}, map[string]string{"hwgroup": "gpu2"}, false},
		{"hwgroup list is not symmetric", map[string]string{"hwgroup": "a"}, map[string]string{"hwgroup": "a|b"}, false},
		{"pipe only special for hwgroup", map[string]string{"os": "a|b"}, map[string]string{"os": "a"}, false},
		{"all must hold", map[string]string{"hwgroup": "a|b", "threads": "4", "os": "linux"}, map[string]string{"hwgroup": "b", "threads": "4", "os": "linux"}, true},
		{"one of several fails", map[string]string{"hwgroup": "a|b", "threads": "4", "os": "linux"}, map[string]string{"hwgroup": "b", "threads": "2", "os": "linux"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Match(c.job, c.worker); got != c.want {
				t.Fatalf("Match(%v, %v) = %v, want %v", c.job, c.worker, got, c.want)
			}
		})
	}
}

func TestUnroutableReason(t *testing.T) {
	cases := []struct {
		name    string
		job     map[string]string
		workers []map[string]string
		want    string
	}{
		{"no workers, no headers", nil, nil, "unroutable: no live worker"},
		{"no workers, a header", map[string]string{"hwgroup": "gpu"}, nil, "unroutable: no live worker with hwgroup=gpu"},
		{"first unsatisfied header named", map[string]string{"a": "1", "b": "2"}, []map[string]string{{"a": "1"}}, "unroutable: no live worker with b=2"},
		{"each satisfied, never together", map[string]string{"a": "1", "b": "2"}, []map[string]string{{"a": "1"}, {"b": "2"}}, "unroutable: no live worker matches all of a=1 b=2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScript(t)
			for i, h := range c.workers {
				if err := s.b.Register(s.now, sess(i+1), WorkerInfo{ID: "w" + string(rune('a'+i)), Headers: h}, nil); err != nil {
					t.Fatal(err)
				}
			}
			j := s.b.Submit(s.now, Spec{Headers: c.job})
			r, _ := s.b.Job(j)
			if r.State != "queued" || r.Reason != c.want {
				t.Fatalf("job is %s with reason %q, want queued with %q", r.State, r.Reason, c.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		field string // named in the error; empty: valid
	}{
		{"defaults", Config{}, ""},
		{"negative retry cap", Config{Jitter: -1, RetryJitter: -1, RetryCap: -time.Second}, "RetryCap"},
		{"retry cap below start", Config{Jitter: -1, RetryJitter: -1, RetryStart: time.Hour, RetryCap: time.Minute}, "RetryCap"},
		{"retry jitter of one", Config{Jitter: -1, RetryJitter: 1}, "RetryJitter"},
		{"no jitter needs no rand", Config{Jitter: -1, RetryJitter: -1}, ""},
		{"negative failures", Config{Jitter: -1, RetryJitter: -1, MaxRequestFailures: -1}, "MaxRequestFailures"},
		{"negative start", Config{Jitter: -1, RetryJitter: -1, BackoffStart: -time.Second}, "BackoffStart"},
		{"negative cap", Config{Jitter: -1, RetryJitter: -1, BackoffCap: -time.Second}, "BackoffCap"},
		{"cap below start", Config{Jitter: -1, RetryJitter: -1, BackoffStart: time.Hour, BackoffCap: time.Minute}, "BackoffCap"},
		{"negative forgive", Config{Jitter: -1, RetryJitter: -1, BackoffForgive: -time.Second}, "BackoffForgive"},
		{"jitter of one", Config{Jitter: 1}, "Jitter"},
		{"negative unroutable timeout", Config{Jitter: -1, RetryJitter: -1, UnroutableTimeout: -time.Second}, "UnroutableTimeout"},
		{"negative history", Config{Jitter: -1, RetryJitter: -1, HistoryLimit: -2}, "HistoryLimit"},
		{"last job ID past 2^32-1", Config{Jitter: -1, RetryJitter: -1, LastJobID: maxJobID + 1}, "LastJobID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg)
			switch {
			case c.field == "" && err != nil:
				t.Fatalf("New: %v", err)
			case c.field != "" && err == nil:
				t.Fatalf("New accepted a bad %s", c.field)
			case c.field != "" && !strings.Contains(err.Error(), c.field):
				t.Fatalf("error %q does not name %s", err, c.field)
			}
		})
	}
	b, err := New(Config{Jitter: -1, RetryJitter: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{MaxRequestFailures: 3, BackoffStart: time.Minute, BackoffCap: 24 * time.Hour, BackoffForgive: 10 * time.Minute,
		RetryStart: time.Second, RetryCap: 5 * time.Minute,
		LostWorkers: DefaultLostWorkers, HistoryLimit: DefaultHistoryLimit, DoneRetention: DefaultDoneRetention,
		HoldbackStart: DefaultHoldbackStart, HoldbackCap: DefaultHoldbackCap, HoldbackForgive: 10 * DefaultHoldbackCap,
		Politeness: Politeness{MaxCrawlDelay: DefaultMaxCrawlDelay}, LastJobID: maxJobID}
	if b.cfg.Rand == nil {
		t.Fatal("no default random source")
	}
	want.Rand = b.cfg.Rand
	if !reflect.DeepEqual(b.cfg, want) {
		t.Fatalf("defaults %+v, want %+v", b.cfg, want)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"120", 2 * time.Minute, false},
		{" 0 ", 0, false},
		{"Thu, 01 Jan 2026 00:05:00 GMT", 5 * time.Minute, false},
		{"Thursday, 01-Jan-26 00:00:30 GMT", 30 * time.Second, false},
		{"Thu Jan  1 01:00:00 2026", time.Hour, false},
		{"Wed, 31 Dec 2025 23:00:00 GMT", 0, false}, // in the past
		{"", 0, true},
		{"-5", 0, true},
		{"1.5", 0, true},
		{"soon", 0, true},
		{"99999999999999999999", 0, true},
	}
	for _, c := range cases {
		got, err := ParseRetryAfter(c.in, now)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}
