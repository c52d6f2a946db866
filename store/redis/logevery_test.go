package redis

import (
	"testing"
	"time"
)

// A line is due at the first count, then at most once an interval, with
// everything counted since the last; nothing counted is never due.
func TestLogEvery(t *testing.T) {
	e := logEvery{every: 10 * time.Second}
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at      time.Duration
		n, want int
		wantDue bool
	}{
		{0, 0, 0, false},
		{0, 2, 2, true},
		{time.Second, 3, 0, false},
		{9 * time.Second, 1, 0, false},
		{10 * time.Second, 1, 5, true},
		{25 * time.Second, 0, 0, false},
		{26 * time.Second, 4, 4, true},
	}
	for i, s := range steps {
		got, due := e.add(t0.Add(s.at), s.n)
		if got != s.want || due != s.wantDue {
			t.Fatalf("step %d (+%v, %d): %d, %v; want %d, %v", i, s.at, s.n, got, due, s.want, s.wantDue)
		}
	}
}
