package ledger

import (
	"fmt"
	"testing"
	"time"
)

func TestWindows(t *testing.T) {
	h := newHarness(t, Config{RequestTTL: time.Hour})
	for i := 0; i < 10; i++ {
		h.request(1, uint64(i), fmt.Sprint(i))
		h.advance(time.Second)
	}
	for i := 0; i < 10; i += 3 { // 0, 3, 6, 9 queued, in that order
		h.queue(1, fmt.Sprint(i))
	}
	h.request(2, 1, "4") // a waiter
	labels := func(rs []Record) string {
		s := ""
		for _, r := range rs {
			s += r.Key.URL[len("http://example.com/"):]
		}
		return s
	}
	tests := []struct {
		name          string
		queued        bool
		offset, limit int
		want          string
	}{
		{"requested all", false, 0, 100, "124578"},
		{"requested window", false, 2, 3, "457"},
		{"requested tail", false, 5, 3, "8"},
		{"requested past the end", false, 6, 3, ""},
		{"requested zero limit", false, 0, 0, ""},
		{"requested negative limit", false, 0, -1, ""},
		{"requested negative offset", false, -5, 2, "12"},
		{"queued all", true, 0, 100, "0369"},
		{"queued window", true, 1, 2, "36"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Record
			if tt.queued {
				got = h.l.Queued(tt.offset, tt.limit)
			} else {
				got = h.l.Requested(tt.offset, tt.limit)
			}
			if labels(got) != tt.want {
				t.Fatalf("window(%d, %d) = %q, want %q", tt.offset, tt.limit, labels(got), tt.want)
			}
		})
	}
	rs := h.l.Requested(2, 1)
	if len(rs) != 1 || rs[0].Owner != 1 || rs[0].Waiters != 1 || rs[0].State != Requested || rs[0].FP != fpOf("4") ||
		!rs[0].Since.Equal(base.Add(4*time.Second)) {
		t.Fatalf("Requested(2, 1) = %+v; want key 4 owned by 1 with one waiter since +4s", rs)
	}
	if c := h.l.Counts(); c != (Counts{Requested: 6, Queued: 4, Waiters: 1}) {
		t.Fatalf("Counts = %+v", c)
	}
	if got := h.l.Waiters(fpOf("5")); got != nil {
		t.Fatalf("Waiters of a key nobody waits on = %+v, want nil", got)
	}
	if got := h.l.Waiters(fpOf("absent")); got != nil {
		t.Fatalf("Waiters of an absent key = %+v, want nil", got)
	}
}

func TestRequestedWindowFollowsLeaseOrder(t *testing.T) {
	// A handed-over key gets a fresh lease: it moves to the end.
	h := newHarness(t, Config{RequestTTL: time.Hour})
	h.request(1, 1, "a")
	h.request(2, 1, "b")
	h.request(3, 1, "a")
	h.advance(time.Second)
	h.release(1)
	rs := h.l.Requested(0, 10)
	if len(rs) != 2 || rs[0].FP != fpOf("b") || rs[1].FP != fpOf("a") || rs[1].Owner != 3 {
		t.Fatalf("Requested = %+v; want b, then a held by 3", rs)
	}
	if d, _ := h.l.NextDeadline(); !d.Equal(base.Add(time.Hour)) {
		t.Fatalf("NextDeadline = %v, want b's %v", d, base.Add(time.Hour))
	}
}
